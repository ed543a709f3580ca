//! The JIT against the slot engine, the float hard rollout and the netlist interpreter.
//! Skipped (with a note) on machines where the JIT is not available.

use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::slot_tests::{random_bits, random_model, shape, spec, to_f32};
use super::*;
use crate::gates::N_OPS;
use crate::grid::GridShape;
use crate::model::{Decoding, Model};
use crate::simd::{simd_level, SimdLevel};
use crate::threads;

/// The simulator's current grid.
fn read(sim: &Simulator) -> Vec<u8> {
    let mut out = vec![0u8; sim.shape().cells() * sim.channels()];
    sim.read_into(&mut out);
    out
}

/// Whether the JIT runs here; on a CPU with AVX2 (not forced to the portable kernels)
/// it must, or a broken kernel that fails the start-up self-test would skip every test.
fn jit_here() -> bool {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && simd_level() != SimdLevel::Portable {
        assert!(
            jit_available(),
            "this CPU has AVX2 but the JIT failed its self-test"
        );
    }
    if !jit_available() {
        eprintln!("the JIT is not available on this machine: JIT tests skipped");
    }
    jit_available()
}

/// The JIT back ends this machine runs (AVX2, and AVX-512 where the CPU has it); the
/// AVX-512 cases are skipped with a note elsewhere. On a CPU with AVX-512F (and the
/// kernels not forced to a lower level) the AVX-512 JIT must run.
fn jit_engines() -> Vec<HardEngine> {
    if !jit_here() {
        return Vec::new();
    }
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx512f") && simd_level() == SimdLevel::Avx512 {
        assert!(
            jit_avx512_available(),
            "this CPU has AVX-512F but the AVX-512 JIT failed its self-test"
        );
    }
    if !jit_avx512_available() {
        eprintln!("no AVX-512 on this machine: the AVX-512 JIT's cases skipped");
        return vec![HardEngine::Jit];
    }
    vec![HardEngine::Jit, HardEngine::JitAvx512]
}

/// The kernel instruction sets to fuzz: AVX2, and AVX-512 with and without VBMI2's
/// double shifts where the CPU has them.
#[cfg(target_arch = "x86_64")]
fn jit_isas() -> Vec<jit::Isa> {
    let mut isas = vec![jit::Isa::Avx2];
    if jit_engines().contains(&HardEngine::JitAvx512) {
        for vbmi2 in [false, true] {
            let isa = jit::Isa::Avx512 { vbmi2 };
            if isa.available() {
                isas.push(isa);
            } else {
                eprintln!("no AVX-512 VBMI2 on this machine: {isa:?} not fuzzed");
            }
        }
    }
    isas
}

/// Every step recorded on `jit` and the slot engine, with `masks` and `damage` (all
/// steps) if given.
#[allow(clippy::too_many_arguments)]
fn both_engines(
    jit: HardEngine,
    circuit: &Circuit,
    x: &[u8],
    sh: GridShape,
    steps: usize,
    periodic: bool,
    masks: Option<&[u8]>,
    damage: Option<&[u8]>,
) -> (Vec<u8>, Vec<u8>) {
    let mut opts = SimOptions::new(steps, periodic);
    opts.record_every = 1;
    if let Some(m) = masks {
        opts.masks = Masks::Given(m);
    }
    opts.damage = damage;
    opts.damage_steps = 0..steps;
    let jit = simulate_on(jit, circuit, x, sh, &opts).unwrap();
    let slots = simulate_on(HardEngine::Slots, circuit, x, sh, &opts).unwrap();
    (jit, slots)
}

fn first_difference(a: &[u8], b: &[u8]) -> Option<usize> {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).position(|(x, y)| x != y)
}

/// The property test: random circuits of every channel count 1..=8, both boundaries,
/// widths around the word and vector edges, sync and with explicit masks: the JIT equals
/// the slot engine, and both equal the float hard rollout.
#[test]
fn jit_matches_slots_and_float_hard_rollout() {
    for engine in jit_engines() {
        jit_matches_slots_and_float_hard_rollout_on(engine);
    }
}

fn jit_matches_slots_and_float_hard_rollout_on(engine: HardEngine) {
    let widths = [1, 5, 63, 64, 65, 127, 200, 256, 257, 300, 511, 513, 777];
    let mut case = 0u64;
    for c in 1..=8 {
        for periodic in [true, false] {
            for masked in [false, true] {
                case += 1;
                let w = widths[(case as usize * 7) % widths.len()];
                let h = [1, 2, 3, 9][case as usize % 4];
                let sh = shape(1 + (case as usize % 2), h, w);
                let sp = spec(c, 2, &[9, 8, 4, 2], &[24, 16], periodic);
                let mut m = random_model(sp, 300 + case, [0.0, 0.4, 0.7][case as usize % 3]);
                let circuit = m.compile_circuit();
                let steps = 3;
                let x = random_bits(sh.cells() * c, 0.5, case);
                let masks = masked.then(|| random_bits(sh.cells() * steps, 0.6, case + 99));
                let (jit, slots) = both_engines(
                    engine,
                    &circuit,
                    &x,
                    sh,
                    steps,
                    periodic,
                    masks.as_deref(),
                    None,
                );
                if let Some(i) = first_difference(&jit, &slots) {
                    panic!(
                        "{engine:?} C={c} periodic={periodic} masked={masked} {sh:?}: JIT and slots differ \
                         at flat index {i} of {}; {:?}",
                        jit.len(),
                        circuit.stats()
                    );
                }
                let float = m
                    .rollout(
                        &to_f32(&x),
                        sh,
                        steps,
                        Decoding::Hard,
                        masks.as_deref().map(to_f32).as_deref(),
                        true,
                    )
                    .unwrap();
                assert!(
                    jit.iter().zip(&float).all(|(&a, &b)| a as f32 == b),
                    "{engine:?} C={c} periodic={periodic} masked={masked} {sh:?}: JIT differs from the float rollout"
                );
            }
        }
    }
}

/// Each of the 16 ops as the last gate of a C = 1 model, on the JIT.
#[test]
fn every_gate_op_matches_on_the_jit() {
    let sp = spec(1, 1, &[9, 8, 4, 2, 1], &[4], true);
    for (engine, op) in jit_engines()
        .into_iter()
        .flat_map(|e| (0..N_OPS).map(move |op| (e, op)))
    {
        let mut m = random_model(sp.clone(), 3, 0.0);
        let mut logits = m.logits().to_vec();
        let n = logits.len();
        logits[n - N_OPS..].iter_mut().for_each(|v| *v = 0.0);
        logits[n - N_OPS + op] = 5.0;
        m.set_logits(&logits).unwrap();
        let circuit = m.compile_circuit();
        let sh = shape(4, 3, 70);
        let x = random_bits(sh.cells(), 0.5, op as u64);
        let (jit, slots) = both_engines(engine, &circuit, &x, sh, 2, true, None, None);
        assert_eq!(jit, slots, "{engine:?} op {op}");
        let float = m
            .rollout(&to_f32(&x), sh, 2, Decoding::Hard, None, true)
            .unwrap();
        assert!(
            jit.iter().zip(&float).all(|(&a, &b)| a as f32 == b),
            "{engine:?} op {op}"
        );
    }
}

/// Damage (per board and shared), masks and seeded masks on both engines.
#[test]
fn damage_and_seeded_masks_match_the_slot_engine() {
    for engine in jit_engines() {
        damage_and_seeded_masks_match_on(engine);
    }
}

fn damage_and_seeded_masks_match_on(engine: HardEngine) {
    for (i, c) in [1usize, 3, 8].into_iter().enumerate() {
        let sp = spec(c, 2, &[9, 8, 4, 2], &[24, 16], i != 1);
        let m = random_model(sp, 77 + i as u64, 0.6);
        let circuit = m.compile_circuit();
        let sh = shape(2, 12, 70 + 61 * i);
        let hw = sh.height * sh.width;
        let x = random_bits(sh.cells() * c, 0.5, 3);
        let shared = random_bits(hw, 0.2, 4);
        let per_board = random_bits(sh.cells(), 0.2, 5);
        let masks = random_bits(sh.cells() * 4, 0.5, 6);
        for damage in [&shared[..], &per_board[..]] {
            let (jit, slots) = both_engines(
                engine,
                &circuit,
                &x,
                sh,
                4,
                i != 1,
                Some(&masks),
                Some(damage),
            );
            assert_eq!(first_difference(&jit, &slots), None, "{engine:?} C={c}");
        }
        let mut opts = SimOptions::new(5, i != 1);
        opts.masks = Masks::Random {
            fire_rate: 0.6,
            seed: 1234,
        };
        opts.damage = Some(&shared);
        opts.damage_steps = 1..3;
        opts.record_every = 2;
        let jit = simulate_on(engine, &circuit, &x, sh, &opts).unwrap();
        let slots = simulate_on(HardEngine::Slots, &circuit, &x, sh, &opts).unwrap();
        assert_eq!(
            first_difference(&jit, &slots),
            None,
            "{engine:?} C={c} seeded"
        );
    }
}

/// A circuit of a trained model's size (one channel, 16 kernels, 17 layers of
/// 128 gates, then narrowing)
/// with enough live values to spill.
#[test]
fn trained_size_circuit_matches_on_the_jit() {
    let mut hidden = vec![128; 17];
    hidden.extend([64, 32, 16, 8, 4, 2]);
    let sp = spec(1, 16, &[9, 8, 4, 2, 1], &hidden, true);
    for (engine, (seed, pass)) in jit_engines()
        .into_iter()
        .flat_map(|e| [(42, 0.6), (43, 0.45)].map(|sp| (e, sp)))
    {
        let m = random_model(sp.clone(), seed, pass);
        let circuit = m.compile_circuit();
        assert!(circuit.stats().active_gates > 100);
        let sh = shape(1, 33, 300);
        let x = random_bits(sh.cells(), 0.5, seed);
        let (jit, slots) = both_engines(engine, &circuit, &x, sh, 4, true, None, None);
        assert_eq!(
            first_difference(&jit, &slots),
            None,
            "{engine:?} {:?}",
            circuit.stats()
        );
    }
}

/// A random netlist: inputs drawn from the 9·C patch bits, gates on earlier nodes.
fn random_netlist(rng: &mut ChaCha8Rng, channels: usize, n_gates: usize) -> Netlist {
    let n_in = rng.random_range(1..=9 * channels);
    let mut bits: Vec<usize> = (0..9 * channels).collect();
    for i in 0..bits.len() {
        let j = rng.random_range(i..bits.len());
        bits.swap(i, j);
    }
    let inputs: Vec<PatchInput> = bits[..n_in]
        .iter()
        .map(|&b| PatchInput {
            channel: b / 9,
            dr: (b % 9 / 3) as i8 - 1,
            dc: (b % 3) as i8 - 1,
        })
        .collect();
    let gates: Vec<Gate> = (0..n_gates)
        .map(|g| {
            let n = (n_in + g) as u32;
            let a = rng.random_range(0..n);
            let mut b = rng.random_range(0..n);
            if n > 1 {
                while b == a {
                    b = rng.random_range(0..n);
                }
            }
            Gate {
                kind: Kind::ALL[rng.random_range(0..4)],
                a,
                b,
            }
        })
        .collect();
    let n = (n_in + n_gates) as u32;
    let outputs = (0..channels)
        .map(|_| {
            if rng.random_range(0..10) == 0 {
                NetOutput::Const(rng.random())
            } else {
                // Mostly late nodes, so that most gates are live.
                let lo = n.saturating_sub(1 + n / 4);
                NetOutput::Node {
                    node: rng.random_range(lo..n),
                    negated: rng.random(),
                }
            }
        })
        .collect();
    Netlist {
        channels,
        inputs,
        gates,
        outputs,
    }
}

/// One step of `net` computed cell by cell with the netlist interpreter.
fn interpret_step(
    net: &Netlist,
    x: &[u8],
    sh: GridShape,
    periodic: bool,
    mask: Option<&[u8]>,
    damage: Option<&[u8]>,
) -> Vec<u8> {
    let c_n = net.channels;
    let (h, w) = (sh.height as i64, sh.width as i64);
    let mut out = vec![0u8; x.len()];
    for b in 0..sh.batch {
        for r in 0..h {
            for col in 0..w {
                let mut patch = vec![false; 9 * c_n];
                for c in 0..c_n {
                    for e in 0..9 {
                        let (mut rr, mut cc) = (r + e / 3 - 1, col + e % 3 - 1);
                        if periodic {
                            rr = rr.rem_euclid(h);
                            cc = cc.rem_euclid(w);
                        } else if rr < 0 || rr >= h || cc < 0 || cc >= w {
                            continue;
                        }
                        let cell = (b * sh.height + rr as usize) * sh.width + cc as usize;
                        patch[c * 9 + e as usize] = x[cell * c_n + c] == 1;
                    }
                }
                let cell = (b * sh.height + r as usize) * sh.width + col as usize;
                let next = net.eval_cell(&patch);
                let fire = mask.is_none_or(|m| m[cell] == 1);
                let dead = damage.is_some_and(|d| d[cell] == 1);
                for c in 0..c_n {
                    let v = if fire {
                        next[c] as u8
                    } else {
                        x[cell * c_n + c]
                    };
                    out[cell * c_n + c] = if dead { 0 } else { v };
                }
            }
        }
    }
    out
}

#[cfg(target_arch = "x86_64")]
/// Fuzz: random netlists of 0 to 600 gates (far more live values than registers) on
/// small grids, plain, masked and damaged, against the netlist interpreter.
#[test]
fn fuzz_random_netlists_against_the_interpreter() {
    if !jit_here() {
        return;
    }
    for isa in jit_isas() {
        fuzz_random_netlists_on(isa);
    }
}

#[cfg(target_arch = "x86_64")]
fn fuzz_random_netlists_on(isa: jit::Isa) {
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    for case in 0..150 {
        let channels = rng.random_range(1..=4);
        let n_gates = [0, 1, 5, 40, 150, 600][case % 6];
        let net = random_netlist(&mut rng, channels, n_gates);
        let periodic = rng.random();
        let sh = shape(
            rng.random_range(1..=2),
            rng.random_range(1..=5),
            [1, 3, 64, 65, 130, 256, 300, 513, 700][rng.random_range(0..9)],
        );
        let x: Vec<u8> = (0..sh.cells() * channels)
            .map(|_| rng.random_range(0..2))
            .collect();
        let mask: Vec<u8> = (0..sh.cells()).map(|_| rng.random_range(0..2)).collect();
        let damage: Vec<u8> = (0..sh.cells())
            .map(|_| (rng.random_range(0..5) == 0) as u8)
            .collect();
        let mut sim =
            grid::GridSim::new(grid::KernelCache::new(net.clone()), sh, periodic, isa).unwrap();
        sim.set_damage(Some(&damage)).unwrap();
        for (masked, damaged) in [(false, false), (true, false), (false, true), (true, true)] {
            sim.load(&x).unwrap();
            let step_mask = if masked {
                StepMask::Given {
                    masks: &mask,
                    steps: 1,
                    t: 0,
                }
            } else {
                StepMask::All
            };
            sim.step(step_mask, damaged).unwrap();
            let mut got = vec![0u8; x.len()];
            sim.read_into(&mut got);
            let want = interpret_step(
                &net,
                &x,
                sh,
                periodic,
                masked.then_some(&mask[..]),
                damaged.then_some(&damage[..]),
            );
            assert_eq!(
                first_difference(&got, &want),
                None,
                "{isa:?} case {case}: {n_gates} gates, C={channels}, {sh:?}, periodic={periodic}, \
                 masked={masked}, damaged={damaged}"
            );
        }
    }
}

/// On every engine: a grid loaded reads back whole, a subset of its channels in any
/// order reads back as those bytes, and a non-binary value is refused where it is.
#[test]
fn load_and_read_round_trip_and_reject_non_binary_values() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let cases = [
        (1, 1),
        (1, 64),
        (1, 77),
        (1, 200),
        (3, 65),
        (8, 129),
        (2, 600),
    ];
    let engines = [vec![HardEngine::Slots], jit_engines()].concat();
    for (engine, (c, w)) in engines.into_iter().flat_map(|e| cases.map(|cw| (e, cw))) {
        let sp = spec(c, 1, &[9, 8, 4, 2], &[8], true);
        let circuit = random_model(sp, 1, 0.5).compile_circuit();
        let sh = shape(2, 3, w);
        let x: Vec<u8> = (0..sh.cells() * c)
            .map(|_| rng.random_range(0..2))
            .collect();
        let mut sim = Simulator::new(&circuit, sh, true, Some(engine), 0).unwrap();
        sim.load(&x).unwrap();
        assert_eq!(read(&sim), x, "{engine:?}");
        // Every other channel, last first: those bytes of each cell, in that order.
        let channels: Vec<usize> = (0..c).rev().step_by(2).collect();
        let mut some = vec![0u8; sh.cells() * channels.len()];
        sim.read_channels_into(&channels, &mut some);
        let want: Vec<u8> = (x.chunks(c))
            .flat_map(|cell| channels.iter().map(|&ch| cell[ch]))
            .collect();
        assert_eq!(some, want, "{engine:?}, channels {channels:?}");
        let mut bad = x.clone();
        let at = bad.len() - 1 - (rng.next_u32() as usize % bad.len());
        bad[at] = 2;
        let err = sim.load(&bad).unwrap_err().to_string();
        assert!(
            err.contains(&format!("found 2 at flat index {at}")),
            "{err}"
        );
    }
}

#[test]
fn a_simulator_keeps_its_grid_between_runs() {
    let sp = spec(2, 2, &[9, 8, 4, 2], &[24, 16], true);
    let circuit = random_model(sp, 8, 0.5).compile_circuit();
    let sh = shape(1, 20, 90);
    let x = random_bits(sh.cells() * 2, 0.5, 1);
    let all = simulate(&circuit, &x, sh, &SimOptions::new(6, true)).unwrap();
    let mut engines = jit_engines();
    engines.push(HardEngine::Slots);
    for engine in engines {
        let mut sim = Simulator::new(&circuit, sh, true, Some(engine), 0).unwrap();
        assert_eq!(sim.engine(), engine);
        sim.load(&x).unwrap();
        sim.run(&SimOptions::new(2, true)).unwrap();
        let last = sim.run(&SimOptions::new(4, true)).unwrap();
        assert_eq!(last, all, "{engine:?}");
        assert_eq!(read(&sim), all);
    }
}

#[test]
fn the_model_gives_the_same_circuit_results_on_the_default_engine() {
    // Whatever engine this machine picks, `simulate` equals the slot engine.
    let sp = spec(3, 2, &[9, 8, 4, 2], &[24, 16], false);
    let m: Model = random_model(sp, 11, 0.5);
    let circuit = m.compile_circuit();
    let sh = shape(2, 17, 150);
    let x = random_bits(sh.cells() * 3, 0.5, 2);
    let mut opts = SimOptions::new(5, false);
    opts.record_every = 1;
    let default = simulate(&circuit, &x, sh, &opts).unwrap();
    let slots = simulate_on(HardEngine::Slots, &circuit, &x, sh, &opts).unwrap();
    assert_eq!(default, slots);
}

#[test]
fn a_simulator_follows_a_growing_pool() {
    // The crate's pool; other tests running meanwhile are thread-independent too.
    let sp = spec(1, 16, &[9, 8, 4, 2, 1], &[128, 64, 32, 16, 8, 4, 2], true);
    let circuit = random_model(sp, 21, 0.45).compile_circuit();
    let sh = shape(1, 64, 300);
    let x = random_bits(sh.cells(), 0.5, 3);
    let want = simulate_on(
        HardEngine::Slots,
        &circuit,
        &x,
        sh,
        &SimOptions::new(4, true),
    )
    .unwrap();
    threads::set_num_threads(1).unwrap();
    let mut sim = Simulator::new(&circuit, sh, true, None, 0).unwrap();
    sim.load(&x).unwrap();
    sim.advance(&SimOptions::new(1, true)).unwrap();
    threads::set_num_threads(3).unwrap();
    let got = sim.run(&SimOptions::new(3, true)).unwrap();
    threads::set_num_threads(0).unwrap();
    assert_eq!(got, want);
}

#[test]
fn an_interrupt_check_stops_a_run_and_never_changes_its_result() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let sp = spec(2, 2, &[9, 8, 4, 2], &[24, 16], true);
    let circuit = random_model(sp, 8, 0.5).compile_circuit();
    let sh = shape(2, 20, 70);
    let x = random_bits(sh.cells() * 2, 0.5, 4);
    let damage = random_bits(sh.height * sh.width, 0.2, 5);
    let mut opts = SimOptions::new(9, true);
    opts.masks = Masks::Random {
        fire_rate: 0.6,
        seed: 3,
    };
    opts.damage = Some(&damage);
    opts.damage_steps = 2..6;
    opts.record_every = 2;
    let want = simulate(&circuit, &x, sh, &opts).unwrap();

    // Checked after every step, never stopping: the same grids, one check per step.
    let checks = AtomicUsize::new(0);
    let never = || {
        checks.fetch_add(1, Ordering::Relaxed);
        false
    };
    opts.interrupt = Some(Interrupt {
        check: &never,
        every: std::time::Duration::ZERO,
    });
    assert_eq!(simulate(&circuit, &x, sh, &opts).unwrap(), want);
    assert_eq!(checks.load(Ordering::Relaxed), 9);
    let mut sim = Simulator::new(&circuit, sh, true, None, 0).unwrap();
    sim.load(&x).unwrap();
    assert_eq!(sim.run(&opts).unwrap(), want);

    // Stopping at the third check.
    let calls = AtomicUsize::new(0);
    let third = || calls.fetch_add(1, Ordering::Relaxed) == 2;
    opts.interrupt = Some(Interrupt {
        check: &third,
        every: std::time::Duration::ZERO,
    });
    assert_eq!(
        simulate(&circuit, &x, sh, &opts),
        Err(crate::error::Error::Interrupted)
    );
    assert_eq!(calls.load(Ordering::Relaxed), 3);
}
