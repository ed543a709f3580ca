//! Tests of the compiler and the slot engine against the float engine.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::error::Error;
use crate::gates::{self, N_OPS};
use crate::grid::GridShape;
use crate::model::{Decoding, Model};
use crate::simd::DEFAULT_CHUNK_CELLS;
use crate::spec::{PerceiveSpec, Spec, UpdateSpec};
use crate::threads;
use crate::wiring::Wiring;

/// A spec with `first_kernel`, then `unique` wiring where the widths allow it (as in
/// the presets: every input is used), else `random`.
pub(crate) fn spec(
    c: usize,
    k: usize,
    perceive: &[usize],
    hidden: &[usize],
    periodic: bool,
) -> Spec {
    let s = *perceive.last().unwrap();
    let mut update = vec![c + c * s * k];
    update.extend_from_slice(hidden);
    update.push(c);
    let wiring = |w: &[usize]| {
        if crate::wiring::check(Wiring::Unique, w[0], w[1]).is_ok() {
            Wiring::Unique
        } else {
            Wiring::Random
        }
    };
    let mut p_conn = vec![Wiring::FirstKernel];
    p_conn.extend(perceive[1..].windows(2).map(wiring));
    Spec {
        channels: c,
        periodic,
        num_steps: 1,
        is_async: false,
        fire_rate: None,
        loss_channels: vec![0],
        perceive: PerceiveSpec {
            n_kernels: k,
            layers: perceive.to_vec(),
            connections: p_conn,
        },
        update: UpdateSpec {
            connections: update.windows(2).map(wiring).collect(),
            layers: update,
        },
        relax: Default::default(),
        binarize_states: false,
        binarize_every: 1,
        chunk_cells: DEFAULT_CHUNK_CELLS,
        init_logit: crate::relax::INIT_PASS_LOGIT,
    }
}

/// A model with random logits. With `pass` = 0 every hard gate is uniform over all
/// 16; otherwise a gate is a pass-through of A with probability `pass` (like a
/// trained, sparse circuit), else a genuine two-input gate (so that the circuit does
/// not fold to constants), and now and then a NOT, a pass-through of B or (rarely) a
/// constant.
pub(crate) fn random_model(spec: Spec, seed: u64, pass: f32) -> Model {
    const TWO_INPUT: [usize; 10] = [1, 2, 4, 6, 7, 8, 9, 11, 13, 14];
    let mut m = Model::new(spec, seed).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let mut logits: Vec<f32> = (0..m.logits().len()).map(|_| rng.random::<f32>()).collect();
    if pass > 0.0 {
        for g in logits.chunks_mut(N_OPS) {
            let u = rng.random::<f32>();
            let op = if u < pass {
                gates::PASS_A
            } else if u < pass + 0.002 {
                [0, 15][rng.random_range(0..2)]
            } else if u < pass + 0.05 {
                [10, 12, 5][rng.random_range(0..3)]
            } else {
                TWO_INPUT[rng.random_range(0..TWO_INPUT.len())]
            };
            g[op] = 2.0;
        }
    }
    m.set_logits(&logits).unwrap();
    m
}

pub(crate) fn random_bits(n: usize, p: f32, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| (rng.random::<f32>() < p) as u8).collect()
}

pub(crate) fn to_f32(v: &[u8]) -> Vec<f32> {
    v.iter().map(|&b| b as f32).collect()
}

/// simulate (every step recorded, several block widths) == the float hard rollout.
fn check_against_float(model: &mut Model, shape: GridShape, steps: usize, masked: bool, seed: u64) {
    let c = model.spec().channels;
    let x = random_bits(shape.cells() * c, 0.5, seed);
    let masks = masked.then(|| random_bits(shape.cells() * steps, 0.6, seed + 1));
    let want = model
        .rollout(
            &to_f32(&x),
            shape,
            steps,
            Decoding::Hard,
            masks.as_deref().map(to_f32).as_deref(),
            true,
        )
        .unwrap();
    let circuit = model.compile_circuit();
    eprintln!("{shape:?} C={c} masked={masked}: {:?}", circuit.stats());
    for words in [1, 2, 4, 8, 16, 32, 64] {
        let mut opts = SimOptions::new(steps, model.spec().periodic);
        opts.record_every = 1;
        opts.words = words;
        if let Some(m) = &masks {
            opts.masks = Masks::Given(m);
        }
        let got = simulate(&circuit, &x, shape, &opts).unwrap();
        assert_eq!(got.len(), want.len());
        if let Some(i) = got.iter().zip(&want).position(|(&g, &w)| g as f32 != w) {
            let frame = shape.cells() * c;
            panic!(
                "shape {shape:?} C={c} periodic={} masked={masked} words={words}: first \
                 difference at step {}, flat index {} ({} vs {}); stats {:?}",
                model.spec().periodic,
                i / frame,
                i % frame,
                got[i],
                want[i],
                circuit.stats()
            );
        }
    }
}

pub(crate) fn shape(batch: usize, height: usize, width: usize) -> GridShape {
    GridShape {
        batch,
        height,
        width,
    }
}

#[test]
fn every_op_on_every_input_pair_matches_the_float_gate() {
    // One gate per op in the update network's last layer would need C = 16; use
    // instead a C = 1 model whose final gate takes each op in turn, on 3x3 boards.
    let spec = spec(1, 1, &[9, 8, 4, 2, 1], &[4], true);
    for op in 0..N_OPS {
        let mut m = random_model(spec.clone(), 3, 0.0);
        let mut logits = m.logits().to_vec();
        let n = logits.len();
        logits[n - N_OPS..].iter_mut().for_each(|v| *v = 0.0);
        logits[n - N_OPS + op] = 5.0;
        m.set_logits(&logits).unwrap();
        check_against_float(&mut m, shape(4, 3, 3), 2, false, op as u64);
    }
}

#[test]
fn matches_float_hard_rollout_on_random_models() {
    let cases: &[(usize, bool, GridShape, usize)] = &[
        (1, true, shape(2, 5, 7), 4),
        (1, false, shape(2, 5, 7), 4),
        (1, true, shape(1, 64, 64), 3),
        (1, false, shape(1, 70, 130), 3),
        (3, true, shape(1, 70, 130), 2),
        (3, false, shape(2, 9, 65), 3),
        (4, true, shape(1, 1, 1), 3),
        (5, false, shape(3, 1, 6), 3),
        (6, true, shape(1, 2, 129), 3),
        (8, false, shape(1, 64, 64), 2),
        (8, true, shape(2, 11, 13), 3),
        (7, true, shape(2, 5, 128), 3),
        (7, false, shape(1, 3, 192), 3),
    ];
    for (i, &(c, periodic, sh, steps)) in cases.iter().enumerate() {
        let sp = spec(c, 2, &[9, 8, 4, 2], &[24, 16], periodic);
        for (j, pass) in [0.0, 0.3, 0.7].into_iter().enumerate() {
            let mut m = random_model(sp.clone(), (10 * i + j) as u64, pass);
            check_against_float(&mut m, sh, steps, false, i as u64);
        }
    }
}

#[test]
fn matches_float_hard_rollout_with_masks() {
    let cases: &[(usize, bool, GridShape)] = &[
        (1, true, shape(2, 5, 7)),
        (1, false, shape(1, 64, 64)),
        (3, true, shape(1, 70, 130)),
        (4, false, shape(2, 6, 6)),
        (8, true, shape(1, 3, 67)),
    ];
    for (i, &(c, periodic, sh)) in cases.iter().enumerate() {
        let sp = spec(c, 3, &[9, 8, 4, 2, 1], &[20, 12], periodic);
        let mut m = random_model(sp, 100 + i as u64, 0.5);
        check_against_float(&mut m, sh, 4, true, 7 + i as u64);
    }
}

#[test]
fn gol_sized_circuit_matches_float() {
    let mut hidden = vec![128; 17];
    hidden.extend([64, 32, 16, 8, 4, 2]);
    let sp = spec(1, 16, &[9, 8, 4, 2, 1], &hidden, true);
    let mut m = random_model(sp, 42, 0.6);
    let active = m.compile_circuit().stats().active_gates;
    assert!(active > 100, "only {active} active gates");
    check_against_float(&mut m, shape(1, 20, 70), 3, false, 5);
}

#[test]
fn results_are_non_trivial() {
    // Guards the comparisons above against circuits that fold to constants.
    let sp = spec(3, 2, &[9, 8, 4, 2], &[24, 16], true);
    let m = random_model(sp, 1, 0.3);
    let circuit = m.compile_circuit();
    assert!(circuit.stats().active_gates > 10, "{:?}", circuit.stats());
    let sh = shape(1, 16, 16);
    let x = random_bits(sh.cells() * 3, 0.5, 1);
    let y = simulate(&circuit, &x, sh, &SimOptions::new(1, true)).unwrap();
    let ones = y.iter().filter(|&&v| v == 1).count();
    assert!(ones > 0 && ones < y.len() && y != x);
}

#[test]
fn eval_cell_matches_the_grid_engine_on_all_512_neighbourhoods() {
    let sp = spec(1, 4, &[9, 8, 4, 2, 1], &[16, 8], false);
    let m = random_model(sp, 9, 0.3);
    let circuit = m.compile_circuit();
    // Board i of 512: the 3x3 neighbourhood with bits of i; zero boundary, so the
    // centre cell sees exactly that patch.
    let x: Vec<u8> = (0..512)
        .flat_map(|i: u32| (0..9).map(move |e| ((i >> e) & 1) as u8))
        .collect();
    let y = simulate(&circuit, &x, shape(512, 3, 3), &SimOptions::new(1, false)).unwrap();
    for i in 0..512 {
        let patch: Vec<bool> = x[i * 9..][..9].iter().map(|&v| v == 1).collect();
        assert_eq!(
            circuit.eval_cell(&patch),
            vec![y[i * 9 + 4] == 1],
            "board {i}"
        );
    }
}

#[test]
fn damage_zeroes_cells_during_its_steps_only() {
    let c = 3;
    let sp = spec(c, 2, &[9, 8, 4, 2], &[24, 16], true);
    let mut m = random_model(sp, 77, 0.6);
    let circuit = m.compile_circuit();
    let sh = shape(2, 12, 70);
    let hw = sh.height * sh.width;
    let x = random_bits(sh.cells() * c, 0.5, 3);
    let dead: Vec<u8> = (0..hw)
        .map(|n| {
            let (r, col) = (n / sh.width, n % sh.width);
            (3..8).contains(&r) && (60..68).contains(&col)
        } as u8)
        .collect();
    let steps = 6;
    let mut opts = SimOptions::new(steps, true);
    opts.damage = Some(&dead);
    opts.damage_steps = 1..4;
    opts.record_every = 1;
    let got = simulate(&circuit, &x, sh, &opts).unwrap();
    // The same thing with the float engine, one step at a time.
    let mut state = to_f32(&x);
    let frame = sh.cells() * c;
    assert_eq!(&got[..frame], &x[..]);
    for t in 0..steps {
        state = m
            .rollout(&state, sh, 1, Decoding::Hard, None, false)
            .unwrap();
        if (1..4).contains(&t) {
            for n in 0..sh.cells() {
                if dead[n % hw] == 1 {
                    state[n * c..(n + 1) * c].iter_mut().for_each(|v| *v = 0.0);
                }
            }
        }
        let g = &got[(t + 1) * frame..][..frame];
        assert!(
            g.iter().zip(&state).all(|(&a, &b)| a as f32 == b),
            "step {t}"
        );
    }
    // Damage per board: only board 1 is hit.
    let mut per_board = vec![0u8; hw];
    per_board.extend_from_slice(&dead);
    opts.damage = Some(&per_board);
    opts.damage_steps = 0..steps;
    opts.record_every = 0;
    let got = simulate(&circuit, &x, sh, &opts).unwrap();
    for n in 0..sh.cells() {
        if per_board[n] == 1 {
            assert!(got[n * c..(n + 1) * c].iter().all(|&v| v == 0));
        }
    }
    let plain = simulate(&circuit, &x, sh, &SimOptions::new(steps, true)).unwrap();
    assert_eq!(&got[..hw * c], &plain[..hw * c], "board 0 is untouched");
}

#[test]
fn seeded_masks_are_deterministic_replayable_and_thread_independent() {
    let c = 2;
    let sp = spec(c, 2, &[9, 8, 4, 2], &[16, 8], false);
    let mut m = random_model(sp, 5, 0.5);
    let circuit = m.compile_circuit();
    let sh = shape(2, 33, 100);
    let x = random_bits(sh.cells() * c, 0.5, 8);
    let mut opts = SimOptions::new(5, false);
    opts.masks = Masks::Random {
        fire_rate: 0.6,
        seed: 1234,
    };
    let a = simulate(&circuit, &x, sh, &opts).unwrap();
    for n in [1, 3, 0] {
        // The crate's pool; other tests running meanwhile are thread-independent too.
        threads::set_num_threads(n).unwrap();
        assert_eq!(a, simulate(&circuit, &x, sh, &opts).unwrap(), "{n} threads");
    }
    for words in [1, 4, 16] {
        opts.words = words;
        assert_eq!(
            a,
            simulate(&circuit, &x, sh, &opts).unwrap(),
            "words {words}"
        );
    }
    // The same masks, drawn separately, replayed in the float engine.
    let masks = draw_masks(sh, 5, 0.6, 1234).unwrap();
    let rate = masks.iter().map(|&v| v as f64).sum::<f64>() / masks.len() as f64;
    assert!((rate - 0.6).abs() < 0.01, "fire rate {rate}");
    let want = m
        .rollout(
            &to_f32(&x),
            sh,
            5,
            Decoding::Hard,
            Some(&to_f32(&masks)),
            false,
        )
        .unwrap();
    assert!(a.iter().zip(&want).all(|(&g, &w)| g as f32 == w));
    // Another seed, other masks.
    opts.masks = Masks::Random {
        fire_rate: 0.6,
        seed: 1235,
    };
    assert_ne!(a, simulate(&circuit, &x, sh, &opts).unwrap());
}

#[test]
fn frames_and_recording() {
    assert_eq!(frame_steps(5, 0), vec![5]);
    assert_eq!(frame_steps(5, 1), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(frame_steps(5, 2), vec![0, 2, 4, 5]);
    assert_eq!(frame_steps(6, 3), vec![0, 3, 6]);
    assert_eq!(frame_steps(0, 0), vec![0]);
    for steps in 0..20 {
        for k in 0..7 {
            assert_eq!(frame_steps(steps, k).len(), n_frames(steps, k));
        }
    }
    let sp = spec(2, 1, &[9, 8, 4, 2], &[8], true);
    let m = random_model(sp, 2, 0.5);
    let circuit = m.compile_circuit();
    let sh = shape(1, 7, 9);
    let x = random_bits(sh.cells() * 2, 0.5, 1);
    let mut opts = SimOptions::new(5, true);
    opts.record_every = 1;
    let all = simulate(&circuit, &x, sh, &opts).unwrap();
    opts.record_every = 2;
    let some = simulate(&circuit, &x, sh, &opts).unwrap();
    let f = sh.cells() * 2;
    for (k, t) in [0, 2, 4, 5].into_iter().enumerate() {
        assert_eq!(&some[k * f..][..f], &all[t * f..][..f]);
    }
    opts.steps = 0;
    opts.record_every = 0;
    assert_eq!(simulate(&circuit, &x, sh, &opts).unwrap(), x);
}

#[test]
fn bad_inputs_are_errors() {
    let sp = spec(2, 1, &[9, 8, 4, 2], &[8], true);
    let m = random_model(sp, 2, 0.5);
    let circuit = m.compile_circuit();
    let sh = shape(1, 4, 4);
    let x = vec![0u8; 32];
    let opts = SimOptions::new(2, true);
    assert!(matches!(
        simulate(&circuit, &x[..31], sh, &opts),
        Err(Error::Shape(_))
    ));
    let mut bad = x.clone();
    bad[3] = 2;
    assert!(matches!(
        simulate(&circuit, &bad, sh, &opts),
        Err(Error::Value(_))
    ));
    let mut o = opts.clone();
    o.masks = Masks::Given(&x[..5]);
    assert!(matches!(
        simulate(&circuit, &x, sh, &o),
        Err(Error::Shape(_))
    ));
    o.masks = Masks::Random {
        fire_rate: 1.5,
        seed: 0,
    };
    assert!(matches!(
        simulate(&circuit, &x, sh, &o),
        Err(Error::Value(_))
    ));
    let mut o = opts.clone();
    o.damage = Some(&x[..5]);
    assert!(matches!(
        simulate(&circuit, &x, sh, &o),
        Err(Error::Shape(_))
    ));
    let mut o = opts.clone();
    o.words = 3;
    assert!(matches!(
        simulate(&circuit, &x, sh, &o),
        Err(Error::Value(_))
    ));
    let mut o = opts.clone();
    o.steps = 1 << 40;
    o.record_every = 1;
    assert!(matches!(
        simulate(&circuit, &x, sh, &o),
        Err(Error::Memory(_))
    ));
    assert!(matches!(
        simulate(&circuit, &x, shape(0, 4, 4), &opts),
        Err(Error::Shape(_))
    ));
}

#[test]
fn folding_removes_constants_and_pass_throughs() {
    // A fresh model is all pass-throughs: the circuit is empty and the next state
    // is one patch entry per channel.
    let sp = spec(2, 2, &[9, 8, 4, 2], &[16, 8], true);
    let m = Model::new(sp, 0).unwrap();
    let circuit = m.compile_circuit();
    assert_eq!(circuit.stats().active_gates, 0);
    assert!(circuit.stats().program_gates > 0);
    assert!(circuit.stats().patch_inputs <= 2);
}
