//! The bit-sliced hard engine on a 1024×1024 periodic grid with the GoL preset's
//! circuit (C = 1, 16 perception kernels [9, 8, 4, 2, 1], update
//! [17] + [128]×17 + [64, 32, 16, 8, 4, 2, 1]).
//!
//! `cargo bench -p logicars-core --bench hard`. Throughput is reported in cell-updates
//! per second (criterion's "elements"). Circuits:
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
//! `LOGICARS_BENCH_WORDS=4,8,16` to compare block widths (default: automatic).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logicars_core::bitsliced::{simulate, Circuit, SimOptions, Simulator, StepMask};
use logicars_core::gates::{N_OPS, PASS_A};
use logicars_core::{GridShape, Model, PerceiveSpec, Spec, UpdateSpec, Wiring};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SIDE: usize = 1024;

/// Hard op of every parameter gate of the trained GoL circuit (hex digit = op index).
const TRAINED_GOL_OPS: &str = concat!(
    "333333333337333333233333333333333333333300333333333333333333c33231731333333333333333333313111333",
    "33b3333333333333333333333333333371111711771111773333771711777d79337313333ff331333373771133333333",
    "777771173315711333337f13f3763333777717777370a1330333233c33378b3333331313333333333333333f33333333",
    "373353133333333733337373ff333333333335533333333235333333f3133333333373354f33133333313333f33f3333",
    "3333333310133373333323333035371333333333313133373333713333333b3933313333333333337333373333733333",
    "3539333333333533793333333337333333331733f33333f1333331333333333133333333333393313333733533333313",
    "33333333393333393333353733333333333333333370333333333133733333333333333333333333333333333733a333",
    "33333a335333333333333733333f373331113133333333333f3f333330333133333f333f33133333333333f311333333",
    "333817f333333333333f33333333b73333333333333f33333333333313333353a33f3133333333731373333313333333",
    "3303333333f3333333733333333333733333335373133333133333a333333af333a33f33333333333333311933333333",
    "3333335333333333333333333337333333333f33333333f33f33315333333333333333333333333333333333303333a3",
    "333337332b333333333a33333133833333333333333333333f3313333333333337333333333333333333733333f33333",
    "233330333331131333233331333333333333333333333373353317330333333373331333323333333333333b33333333",
    "3333333735333333333333333031333333733b3333333317333373f333333333333333333333333333333337b33b3233",
    "33333333333336333375383333333333333733f333333333333723333333f37133333333333333333333333333333333",
    "333333333333333333333313333333337333333353333333333337337a33333303333333b33333333333377333333333",
    "3333333333133333333d33333333d3333333333333333333f3373313333a333333333333333331333333333333333333",
    "333373333333b333333333313333333b333333333333733333333333330333333332331333333333333333333b333333",
    "333333f33333333333373333333333333333333133733333133333330733333333333333333333335533323333f33363",
    "3333333333333333333333331333a33333333333333333773333333333333333333333333333333353b3333333373333",
    "333333333333333333333333333333333333333336333333b37333333333333333333333333313f333337333333a3333",
    "3333333333333333333333d33333333333333333333333b833331333333333333333333333333333333333333733f333",
    "333333333333333333337733333333333373313333333333333331333333333333333333333333333333332333333333",
    "3333333333333333333333333333333333b333337833333333333333333333333733333333333333ff33333333333333",
    "33333333333333333333333333333333333333333333333333b333333333333333333333333373333333333333333333",
    "3333333333333333337b33333333b3333333333333333333333333331333b33333333333333333333333333333932333",
    "33333333333333f333333333333333833383333336333bb",
);

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
        lr: 0.05,
        relax: Default::default(),
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
    assert_eq!(TRAINED_GOL_OPS.len(), model.logits().len() / N_OPS);
    let mut logits = vec![0f32; model.logits().len()];
    for (g, op) in logits.chunks_mut(N_OPS).zip(TRAINED_GOL_OPS.chars()) {
        g[op.to_digit(16).expect("hex digit") as usize] = 1.0;
    }
    model.set_logits(&logits).expect("finite logits");
    let circuit = Circuit::from_model(&model);
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
        ("random", Circuit::from_model(&gol_model(0.0, 1))),
        ("sparse", Circuit::from_model(&gol_model(0.45, 2))),
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
        for &w in &words {
            let mut sim = Simulator::new(circuit, shape, true, w).expect("simulator");
            sim.load(&x).expect("grid");
            group.bench_with_input(
                BenchmarkId::new(
                    format!("{name}_{}gates", s.active_gates),
                    format!("{}words", sim.words()),
                ),
                &w,
                |b, _| b.iter(|| black_box(&mut sim).step(StepMask::All, false).unwrap()),
            );
        }
    }
    // The trained circuit with seeded async masks (fire rate 0.6), drawn every step.
    let (_, trained) = &circuits[0];
    let mut sim = Simulator::new(trained, shape, true, 0).expect("simulator");
    sim.load(&x).expect("grid");
    let mut t = 0;
    group.bench_function(
        BenchmarkId::new(
            format!("trained_async0.6_{}gates", trained.stats().active_gates),
            format!("{}words", sim.words()),
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

criterion_group!(benches, bench_hard);
criterion_main!(benches);
