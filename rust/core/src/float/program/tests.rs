//! Tests of the compiled program: its rows, replay and reuse against the whole arena.

use super::*;
use crate::float::kernels::{self, Lanes};
use crate::model::Model;
use crate::simd::{simd_level, SimdLevel, DEFAULT_CHUNK_CELLS};

fn eight_channel_program() -> Program {
    let model = Model::new(eight_channel_spec(), 3).unwrap();
    Program::compile(model.spec(), model.perceive_wires(), model.update_wires())
}

fn eight_channel_spec() -> Spec {
    Spec::from_json(
        r#"{"channels": 8, "periodic": false, "num_steps": 20, "loss_channels": [0],
            "lr": 0.05, "perceive": {"n_kernels": 16, "layers": [9, 8, 4, 2],
            "connections": ["first_kernel", "unique", "unique"]},
            "update": {"layers": [264, 256, 256, 128, 64, 32, 16, 8, 8],
            "connections": ["unique", "random", "unique", "unique", "unique", "unique",
                            "unique", "unique"]}}"#,
    )
    .unwrap()
}

fn test_coefs(p: &Program) -> Vec<[f32; 4]> {
    (0..p.n_params)
        .map(|i| {
            let f = |k: usize| ((i * 7 + k * 13) % 17) as f32 / 17.0 - 0.3;
            [f(0), f(1), f(2), f(3)]
        })
        .collect()
}

/// The last chunk of a grid runs only the SIMD blocks holding cells: the same
/// values and coefficient sums as the whole chunk, where the padding cells have zero
/// patches and zero gradients, and the other lanes left untouched (NaN stays NaN).
#[test]
fn a_partial_chunk_matches_the_whole_chunk_on_its_blocks() {
    let p = eight_channel_program();
    for row_len in [64, 80, 128] {
        partial_chunk_matches(&p, row_len);
    }
}

fn partial_chunk_matches(p: &Program, row_len: usize) {
    let coefs = test_coefs(p);
    let (cells, blocks_end) = (20, 32);
    let level = simd_level();
    let patch = 9 * p.channels * row_len;
    let (act_len, grad_len) = (p.gates.n_rows * row_len, p.backward.n_rows * row_len);
    let (mut act_all, mut grad_all) = (vec![0f32; act_len], vec![0f32; grad_len]);
    for (i, v) in act_all[..patch].iter_mut().enumerate() {
        *v = if i % row_len < cells {
            ((i * 31) % 11) as f32 / 10.0
        } else {
            0.0
        };
    }
    for &r in &p.backward.out_rows {
        for i in 0..cells {
            grad_all[r as usize * row_len + i] = ((i * 17 + r as usize) % 7) as f32 - 3.0;
        }
    }
    let mut act_part = act_all.clone();
    let mut grad_part = grad_all.clone();
    let untouched = |buf: &mut [f32], from: usize| {
        for (i, v) in buf.iter_mut().enumerate() {
            if i >= from && i % row_len >= blocks_end {
                *v = f32::NAN;
            }
        }
    };
    untouched(&mut act_part, patch);
    untouched(&mut grad_part, patch);
    let mut acc_all = vec![0f64; p.n_coefs()];
    let mut acc_part = acc_all.clone();
    let whole = Lanes {
        cells: row_len,
        width: row_len,
    };
    let part = Lanes {
        cells,
        width: row_len,
    };
    kernels::forward(&p.gates, &coefs, &mut act_all, whole, level);
    kernels::forward(&p.gates, &coefs, &mut act_part, part, level);
    let rows = p.gates.n_rows;
    let all = (&act_all[..], &mut grad_all[..]);
    kernels::backward(&p.backward, rows, &coefs, all, &mut acc_all, whole, level);
    let arenas = (&act_part[..], &mut grad_part[..]);
    kernels::backward(
        &p.backward,
        rows,
        &coefs,
        arenas,
        &mut acc_part,
        part,
        level,
    );

    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&acc_all), bits(&acc_part));
    for (buf_all, buf_part) in [(&act_all, &act_part), (&grad_all, &grad_part)] {
        for (i, (a, b)) in buf_all.iter().zip(buf_part.iter()).enumerate() {
            if i % row_len < blocks_end {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "width {row_len}: lane {} of row {}",
                    i % row_len,
                    i / row_len
                );
            } else if i >= patch {
                assert!(
                    b.is_nan(),
                    "lane {} of row {} written",
                    i % row_len,
                    i / row_len
                );
            }
        }
    }
}

/// The kept pass with the perception replayed per channel gives the same next
/// state, patch gradients and coefficient sums, bit for bit, as the whole arena kept.
#[test]
fn replaying_the_perception_changes_no_bit() {
    let spec = eight_channel_spec();
    let model = Model::new(spec, 3).unwrap();
    let compile = |replay| {
        let (p, u) = (model.perceive_wires(), model.update_wires());
        Program::compile_with(model.spec(), p, u, Some(replay))
    };
    let (whole, replayed) = (compile(false), compile(true));
    assert_eq!(whole.kept.segments.len(), 1);
    assert_eq!(replayed.kept.segments.len(), 1 + whole.channels);
    assert!(replayed.kept.gates.n_rows < whole.kept.gates.n_rows);
    let coefs = test_coefs(&whole);
    let n_patch = 9 * whole.channels;
    let run = |p: &Program, level: SimdLevel| {
        let mut act = vec![f32::NAN; p.kept.gates.n_rows * DEFAULT_CHUNK_CELLS];
        for (i, v) in act[..n_patch * DEFAULT_CHUNK_CELLS].iter_mut().enumerate() {
            *v = ((i * 31) % 11) as f32 / 10.0;
        }
        kernels::forward(&p.kept.gates, &coefs, &mut act, Lanes::WHOLE, level);
        let next: Vec<u32> = p
            .kept
            .gates
            .out_rows
            .iter()
            .flat_map(|&r| {
                act[r as usize * DEFAULT_CHUNK_CELLS..][..DEFAULT_CHUNK_CELLS]
                    .iter()
                    .map(|v| v.to_bits())
            })
            .collect();
        let mut grad = vec![0f32; p.backward.n_rows * DEFAULT_CHUNK_CELLS];
        for &r in &p.backward.out_rows {
            for i in 0..DEFAULT_CHUNK_CELLS {
                grad[r as usize * DEFAULT_CHUNK_CELLS + i] =
                    ((i * 17 + r as usize) % 7) as f32 - 3.0;
            }
        }
        let mut acc = vec![0f64; p.n_coefs()];
        let rows = (p.kept.gates.n_rows, p.backward.n_rows);
        for (replay, part) in &p.kept.segments {
            let replay = &p.kept.replay[replay.clone()];
            kernels::forward_instrs(replay, rows.0, &coefs, &mut act, Lanes::WHOLE, level);
            let part = &p.kept.backward[part.clone()];
            let arenas = (&act[..], &mut grad[..]);
            kernels::backward_instrs(part, rows, &coefs, arenas, &mut acc, Lanes::WHOLE, level);
        }
        let patch: Vec<u32> = grad[..n_patch * DEFAULT_CHUNK_CELLS]
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let sums: Vec<u64> = acc.iter().map(|v| v.to_bits()).collect();
        (next, patch, sums)
    };
    for level in [SimdLevel::Portable, simd_level()] {
        assert!(run(&whole, level) == run(&replayed, level), "{level:?}");
    }
}

#[test]
fn rollout_rows_reused_and_results_identical() {
    let p = eight_channel_program();
    assert!(
        p.rollout.n_rows * 3 < p.gates.n_rows,
        "{} rows",
        p.rollout.n_rows
    );
    let coefs = test_coefs(&p);
    let mut full = vec![0f32; p.gates.n_rows * DEFAULT_CHUNK_CELLS];
    let mut reused = vec![f32::NAN; p.rollout.n_rows * DEFAULT_CHUNK_CELLS];
    for (i, v) in full[..9 * p.channels * DEFAULT_CHUNK_CELLS]
        .iter_mut()
        .enumerate()
    {
        *v = ((i * 31) % 11) as f32 / 10.0;
    }
    reused[..9 * p.channels * DEFAULT_CHUNK_CELLS]
        .copy_from_slice(&full[..9 * p.channels * DEFAULT_CHUNK_CELLS]);
    kernels::forward(
        &p.gates,
        &coefs,
        &mut full,
        Lanes::WHOLE,
        SimdLevel::Portable,
    );
    kernels::forward(
        &p.rollout,
        &coefs,
        &mut reused,
        Lanes::WHOLE,
        SimdLevel::Portable,
    );
    for (&f, &r) in p.gates.out_rows.iter().zip(&p.rollout.out_rows) {
        let (f, r) = (
            f as usize * DEFAULT_CHUNK_CELLS,
            r as usize * DEFAULT_CHUNK_CELLS,
        );
        assert_eq!(
            full[f..f + DEFAULT_CHUNK_CELLS],
            reused[r..r + DEFAULT_CHUNK_CELLS]
        );
    }
}

#[test]
fn backward_gradient_rows_never_alias_and_start_with_a_store() {
    let p = eight_channel_program();
    let back = &p.backward;
    let n_patch = 9 * p.channels;
    assert!(back.n_rows * 3 < p.gates.n_rows, "{} rows", back.n_rows);
    // Replay the allocation: a row holds one gradient from its store to its read as gy.
    let mut holds = vec![false; back.n_rows];
    for &r in &back.out_rows {
        holds[r as usize] = true;
    }
    for ins in &back.instrs {
        assert!(holds[ins.gy as usize], "gy read before written");
        assert!(ins.ga != ins.gy && ins.gb != ins.gy);
        for (g, store) in [
            (ins.ga, ins.store_a),
            (ins.gb, ins.store_b && ins.a != ins.b),
        ] {
            assert_eq!(store, !holds[g as usize], "store exactly on first write");
            holds[g as usize] = true;
        }
        holds[ins.gy as usize] = false;
    }
    // A patch row is never a gate's output: it holds its gradient to the end.
    let unwritten: Vec<u32> = (0..n_patch as u32)
        .filter(|&r| !holds[r as usize])
        .collect();
    assert_eq!(back.unwritten, unwritten);
}
