//! The bit-sliced hard engine on a 1024×1024 periodic grid with the GoL preset's
//! circuit (C = 1, 16 perception kernels [9, 8, 4, 2, 1], update
//! [17] + [128]×17 + [64, 32, 16, 8, 4, 2, 1]).
//!
//! `cargo bench -p logicars-core --bench hard`. First, side by side in one run (rounds
//! alternating, medians): the trained circuit on 256², 1024² and 4096² periodic grids
//! with 1 and 2 threads on this machine's engine (`hard::default_engine`: the AVX-512 JIT
//! where the CPU has AVX-512F, the AVX2 JIT under `LOGICARS_SIMD=avx2`), the slot engine, and the compiled-C reference of
//! `benches/c_reference.py` (built and checked bit for bit against `Model.simulate` by
//! the Python package: `LOGICARS_PYTHON`, else `.venv/bin/python`, else `python3`;
//! skipped with a note where it cannot be built). `LOGICARS_BENCH_SIDES=1024` and
//! `LOGICARS_BENCH_ROUNDS=9` change the grids and rounds; `LOGICARS_BENCH_SIDE_BY_SIDE=0`
//! skips this part.
//!
//! Then criterion, on 1024×1024, for the slot engine and each JIT back end this machine
//! runs (`jit-avx2`, and `jit-avx512` where the CPU has AVX-512F). Throughput is reported in
//! cell-updates per second (criterion's "elements"). Circuits:
//! - `trained`: a circuit trained on the GoL preset (`Model(gol, seed=1)`, 8500
//!   epochs, hard loss 0 on all 512 boards). Its hard gates are embedded below (one hex
//!   digit per parameter gate, in `Model::logits` order; the wiring is the one
//!   `Model::new(gol, 1)` draws). 339 of its 2543 gates are not pass-throughs (the
//!   paper counts 336 for its circuit); folding leaves 151. The bench checks that it
//!   computes the Game of Life on all 512 3x3 boards before timing it.
//! - `random`: every logit uniform in [0, 1), so every hard gate is uniform over the
//!   16 ops. Such a circuit folds to a constant (0 active gates): this measures the
//!   fixed cost of a step (patch fill, state write, threads).
//! - `sparse`: random, but 45% pass-throughs (the training init) and the rest genuine
//!   two-input gates: a dense circuit with ~900 active gates.
//!
//! `trained_async0.6` runs the trained circuit asynchronously: every step draws a fresh
//! seeded update mask (fire rate 0.6) and blends.
//!
//! The active gate count of each circuit is printed before its benchmark. Set
//! `LOGICARS_BENCH_WORDS=4,8,16` to compare the slot engine's block widths (default:
//! automatic).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use logicars_core::gates::{N_OPS, PASS_A};
use logicars_core::hard::{
    default_engine, simulate, Circuit, HardEngine, SimOptions, Simulator, StepMask,
};
use logicars_core::simd::DEFAULT_CHUNK_CELLS;
use logicars_core::{GridShape, Model, PerceiveSpec, Spec, UpdateSpec, Wiring};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIDE: usize = 1024;

/// Hard op of every parameter gate of the trained GoL circuit (hex digit = op index;
/// the file `logicars.hard_bench` reads too).
const TRAINED_GOL_OPS: &str = include_str!("../python/logicars/data/gol_trained_ops.txt");

fn gol_spec() -> Spec {
    let mut update = vec![17];
    update.extend([128; 17]);
    update.extend([64, 32, 16, 8, 4, 2, 1]);
    Spec {
        channels: 1,
        periodic: true,
        num_steps: 1,
        is_async: false,
        fire_rate: None,
        loss_channels: vec![0],
        perceive: PerceiveSpec {
            n_kernels: 16,
            layers: vec![9, 8, 4, 2, 1],
            connections: vec![
                Wiring::FirstKernel,
                Wiring::Unique,
                Wiring::Unique,
                Wiring::Unique,
            ],
        },
        update: UpdateSpec {
            connections: vec![Wiring::Unique; update.len() - 1],
            layers: update,
        },
        relax: Default::default(),
        binarize_states: false,
        binarize_every: 1,
        chunk_cells: DEFAULT_CHUNK_CELLS,
        init_logit: logicars_core::relax::INIT_PASS_LOGIT,
    }
}

/// The GoL model with random logits; with `pass > 0`, a gate is a pass-through of A
/// with probability `pass`, else a random genuine two-input gate.
fn gol_model(pass: f32, seed: u64) -> Model {
    const TWO_INPUT: [usize; 10] = [1, 2, 4, 6, 7, 8, 9, 11, 13, 14];
    let mut model = Model::new(gol_spec(), seed).expect("valid spec");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut logits: Vec<f32> = (0..model.logits().len())
        .map(|_| rng.random::<f32>())
        .collect();
    if pass > 0.0 {
        for g in logits.chunks_mut(N_OPS) {
            let op = if rng.random::<f32>() < pass {
                PASS_A
            } else {
                TWO_INPUT[rng.random_range(0..TWO_INPUT.len())]
            };
            g[op] = 2.0;
        }
    }
    model.set_logits(&logits).expect("finite logits");
    model
}

/// The trained GoL circuit, checked against the Game of Life rule on all 512 boards.
fn trained_gol() -> Circuit {
    let mut model = Model::new(gol_spec(), 1).expect("valid spec");
    let ops = TRAINED_GOL_OPS.trim();
    assert_eq!(ops.len(), model.logits().len() / N_OPS);
    let mut logits = vec![0f32; model.logits().len()];
    for (g, op) in logits.chunks_mut(N_OPS).zip(ops.chars()) {
        g[op.to_digit(16).expect("hex digit") as usize] = 1.0;
    }
    model.set_logits(&logits).expect("finite logits");
    let circuit = model.compile_circuit();
    let boards: Vec<u8> = (0..512u32)
        .flat_map(|i| (0..9).map(move |e| ((i >> e) & 1) as u8))
        .collect();
    let shape = GridShape {
        batch: 512,
        height: 3,
        width: 3,
    };
    let next = simulate(&circuit, &boards, shape, &SimOptions::new(1, true)).expect("runs");
    for (board, new) in boards.chunks(9).zip(next.chunks(9)) {
        for cell in 0..9 {
            let (r, c) = (cell / 3, cell % 3);
            let mut live = 0;
            for dr in [2, 0, 1] {
                for dc in [2, 0, 1] {
                    if (dr, dc) != (0, 0) {
                        live += board[(r + dr) % 3 * 3 + (c + dc) % 3];
                    }
                }
            }
            let want = (live == 3 || (live == 2 && board[cell] == 1)) as u8;
            assert_eq!(
                new[cell], want,
                "the embedded circuit is not the Game of Life"
            );
        }
    }
    circuit
}

fn bench_hard(c: &mut Criterion) {
    let shape = GridShape {
        batch: 1,
        height: SIDE,
        width: SIDE,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let x: Vec<u8> = (0..SIDE * SIDE)
        .map(|_| rng.random::<bool>() as u8)
        .collect();
    let circuits = [
        ("trained", trained_gol()),
        ("random", gol_model(0.0, 1).compile_circuit()),
        ("sparse", gol_model(0.45, 2).compile_circuit()),
    ];
    let words: Vec<usize> = match std::env::var("LOGICARS_BENCH_WORDS") {
        Ok(v) => v.split(',').filter_map(|w| w.trim().parse().ok()).collect(),
        Err(_) => vec![0],
    };
    let mut group = c.benchmark_group("hard_step_1024x1024_periodic");
    group.throughput(Throughput::Elements((SIDE * SIDE) as u64));
    group.sample_size(20);
    for (name, circuit) in &circuits {
        let s = circuit.stats();
        eprintln!(
            "{name}: {} program gates -> {} active gates (and/and_not/or/xor {:?}), {} slots, depth {}",
            s.program_gates, s.active_gates, s.by_kind, s.slots, s.depth
        );
        let mut variants: Vec<(HardEngine, usize)> =
            words.iter().map(|&w| (HardEngine::Slots, w)).collect();
        // Both JIT back ends where the CPU has AVX-512, the AVX2 one where only AVX2.
        for engine in [HardEngine::JitAvx512, HardEngine::Jit] {
            if engine.available() {
                variants.insert(0, (engine, 0));
            }
        }
        for (engine, w) in variants {
            let mut sim = Simulator::new(circuit, shape, true, Some(engine), w).expect("simulator");
            sim.load(&x).expect("grid");
            let label = match engine {
                HardEngine::Jit | HardEngine::JitAvx512 => engine.name().to_string(),
                HardEngine::Slots => format!(
                    "slots_{}words",
                    if w == 0 {
                        "auto".to_string()
                    } else {
                        w.to_string()
                    }
                ),
            };
            group.bench_with_input(
                BenchmarkId::new(format!("{name}_{}gates", s.active_gates), label),
                &w,
                |b, _| b.iter(|| black_box(&mut sim).step(StepMask::All, false).unwrap()),
            );
        }
    }
    // The trained circuit with seeded async masks (fire rate 0.6), drawn every step.
    let (_, trained) = &circuits[0];
    let mut sim = Simulator::new(trained, shape, true, None, 0).expect("simulator");
    sim.load(&x).expect("grid");
    let mut t = 0;
    group.bench_function(
        BenchmarkId::new(
            format!("trained_async0.6_{}gates", trained.stats().active_gates),
            default_engine().name(),
        ),
        |b| {
            b.iter(|| {
                t += 1;
                let mask = StepMask::Random {
                    fire_rate: 0.6,
                    seed: 1,
                    t,
                };
                black_box(&mut sim).step(mask, false).unwrap()
            })
        },
    );
    group.finish();
}

/// The C reference executable, built and checked by `benches/c_reference.py`, or why not.
fn build_reference() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = std::env::var("LOGICARS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            let venv = root.join(".venv/bin/python");
            if venv.exists() {
                venv
            } else {
                PathBuf::from("python3")
            }
        });
    let dir = root.join("target/c_reference");
    let out = Command::new(&python)
        .arg(root.join("benches/c_reference.py"))
        .arg("build")
        .arg(&dir)
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// Nanoseconds per step of the C reference (`time` mode), wall-clock.
fn reference_step_ns(exe: &Path, side: usize, steps: usize, threads: usize) -> f64 {
    let out = Command::new(exe)
        .args([
            "time",
            &side.to_string(),
            &steps.to_string(),
            &threads.to_string(),
        ])
        .env("OMP_NUM_THREADS", threads.to_string())
        .output()
        .expect("the C reference runs");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .expect("ns per step")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .map(|v| v.split(',').filter_map(|w| w.trim().parse().ok()).collect())
        .unwrap_or_else(|_| default.to_vec())
}

/// The trained circuit on this machine's engine, the slot engine and the C reference,
/// in alternating rounds; G cell-updates/s from the median time per step.
fn side_by_side() {
    let trained = trained_gol();
    let reference = build_reference();
    let rounds = env_list("LOGICARS_BENCH_ROUNDS", &[5])[0].max(1);
    eprintln!("\nside by side: trained GoL circuit, periodic, {rounds} alternating rounds, median");
    eprintln!("engine {} ; G cell-updates/s", default_engine().name());
    if let Err(e) = &reference {
        eprintln!("C reference not run: {e}");
    }
    eprintln!(
        "{:>11} {:>3} {:>9} {:>7} {:>7} {:>6}",
        "grid", "thr", "engine", "slots", "C ref", "ratio"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for side in env_list("LOGICARS_BENCH_SIDES", &[256, 1024, 4096]) {
        let shape = GridShape {
            batch: 1,
            height: side,
            width: side,
        };
        let x: Vec<u8> = (0..side * side)
            .map(|_| rng.random::<bool>() as u8)
            .collect();
        let steps = (250_000_000 / (side * side)).max(4);
        for threads in [1, 2] {
            logicars_core::threads::set_num_threads(threads).expect("threads");
            let mut sims: Vec<Simulator> = [None, Some(HardEngine::Slots)]
                .into_iter()
                .map(|e| {
                    let mut s = Simulator::new(&trained, shape, true, e, 0).expect("simulator");
                    s.load(&x).expect("grid");
                    s.advance(&SimOptions::new(2, true)).expect("warm-up");
                    s
                })
                .collect();
            let mut times = [Vec::new(), Vec::new(), Vec::new()];
            for _ in 0..rounds {
                for (k, sim) in sims.iter_mut().enumerate() {
                    let t0 = Instant::now();
                    sim.advance(&SimOptions::new(steps, true)).expect("steps");
                    times[k].push(t0.elapsed().as_nanos() as f64 / steps as f64);
                }
                if let Ok(exe) = &reference {
                    times[2].push(reference_step_ns(exe, side, steps, threads));
                }
            }
            let rate: Vec<Option<f64>> = times
                .iter_mut()
                .map(|t| (!t.is_empty()).then(|| (side * side) as f64 / median(t)))
                .collect();
            let show = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.2}"));
            let ratio = rate[0].zip(rate[2]).map(|(a, c)| a / c);
            eprintln!(
                "{:>11} {threads:>3} {:>9} {:>7} {:>7} {:>6}",
                format!("{side}x{side}"),
                show(rate[0]),
                show(rate[1]),
                show(rate[2]),
                show(ratio)
            );
        }
    }
    logicars_core::threads::set_num_threads(0).expect("threads");
}

fn bench_all(c: &mut Criterion) {
    if std::env::var("LOGICARS_BENCH_SIDE_BY_SIDE").as_deref() != Ok("0") {
        side_by_side();
    }
    bench_hard(c);
}

criterion_group!(benches, bench_all);
criterion_main!(benches);
