//! Times the float kernels on one chunk of a real compiled step, by pass and section,
//! against the machine's measured FMA peak (docs/performance.md):
//! `cargo run -r -p logicars-core --example sections -- [wide] [--cells N] [--spec FILE]`
//! (rows of N cells, the model's `chunk_cells`, default `DEFAULT_CHUNK_CELLS`; `--spec`:
//! the model of a spec's JSON file, `specs::take_spec`).
//!
//! Each figure is the best of 30 rounds of 20 calls on one thread, so other jobs on
//! the machine inflate it less than a wall-clock epoch. A gate on a row of N
//! cells needs 3 multiply-adds per cell forward and 7 multiplies or multiply-adds per
//! cell backward (`kernels.rs`): that work over the measured peak of one thread is the
//! fastest the pass could run.

use std::time::Instant;

use logicars_core::aligned::AlignedVec;
use logicars_core::float::kernels::{self, Lanes};
use logicars_core::float::program::{Backward, Gates, Program};
use logicars_core::peak;
use logicars_core::simd::{simd_level, DEFAULT_CHUNK_CELLS};
use logicars_core::{Model, Spec};

mod specs;
use specs::{take_option, take_spec, NARROW, WIDE};

/// Multiply-class operations per gate-cell in each pass.
const FORWARD_OPS: f64 = 3.0;
const BACKWARD_OPS: f64 = 7.0;

/// Best time of one call of `f`, in microseconds.
fn best_us<F: FnMut()>(mut f: F) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..30 {
        let t = Instant::now();
        for _ in 0..20 {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / 20.0);
    }
    best * 1e6
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let cells = take_option(&mut args, "--cells").unwrap_or(DEFAULT_CHUNK_CELLS);
    let text = take_spec(&mut args);
    let wide = args.iter().any(|a| a == "wide");
    let lanes = Lanes {
        cells,
        width: cells,
    };
    let spec = Spec::from_json(text.as_deref().unwrap_or(if wide { WIDE } else { NARROW }));
    let spec = spec.unwrap();
    let model = Model::new(spec, 3).unwrap();
    let p = Program::compile(model.spec(), model.perceive_wires(), model.update_wires());
    let coefs: Vec<[f32; 4]> = (0..p.n_params)
        .map(|i| std::array::from_fn(|k| ((i * 7 + k * 13) % 17) as f32 / 17.0 - 0.3))
        .collect();
    let level = simd_level();
    // Cache-aligned, as the engine's arenas are.
    let filled = |len: usize, v: f32| AlignedVec::from_slice(&vec![v; len]);
    let mut act = filled(p.gates.n_rows * cells, 0.5);
    let mut rollout_act = filled(p.rollout.n_rows * cells, 0.5);
    let mut grad = filled(p.backward.n_rows * cells, 0.1);
    let mut acc = AlignedVec::<f64>::zeros(p.n_coefs());

    // Perception gates come first in the forward list, last in the backward list.
    let s = model.spec();
    let n = p.gates.instrs.len();
    let n_perceive =
        s.channels * s.perceive.n_kernels * s.perceive.layers[1..].iter().sum::<usize>();
    let forward_part = |range: std::ops::Range<usize>| Gates {
        instrs: p.gates.instrs[range].to_vec(),
        n_rows: p.gates.n_rows,
        out_rows: Vec::new(),
    };
    let backward_part = |range: std::ops::Range<usize>| Backward {
        instrs: p.backward.instrs[range].to_vec(),
        n_rows: p.backward.n_rows,
        out_rows: Vec::new(),
        unwritten: Vec::new(),
    };
    let (fwd_perceive, fwd_update) = (forward_part(0..n_perceive), forward_part(n_perceive..n));
    let (bwd_update, bwd_perceive) = (
        backward_part(0..n - n_perceive),
        backward_part(n - n_perceive..n),
    );
    let act_rows = p.gates.n_rows;

    let rollout = best_us(|| kernels::forward(&p.rollout, &coefs, &mut rollout_act, lanes, level));
    let fwd = [
        best_us(|| kernels::forward(&p.gates, &coefs, &mut act, lanes, level)),
        best_us(|| kernels::forward(&fwd_perceive, &coefs, &mut act, lanes, level)),
        best_us(|| kernels::forward(&fwd_update, &coefs, &mut act, lanes, level)),
    ];
    let run_backward = |b: &Backward, act: &[f32], grad: &mut [f32], acc: &mut [f64]| {
        kernels::backward(b, act_rows, &coefs, (act, grad), acc, lanes, level)
    };
    let mut backward = |b: &Backward| best_us(|| run_backward(b, &act, &mut grad, &mut acc));
    let bwd = [
        backward(&p.backward),
        backward(&bwd_perceive),
        backward(&bwd_update),
    ];

    logicars_core::threads::set_num_threads(1).unwrap();
    let peak = peak::fma_lane_ops_per_s(level);
    // Nanoseconds per gate on one row, and the share of the FMA peak that is.
    let per_gate = |us: f64, gates: usize, ops: f64| {
        let ns = us * 1e3 / gates as f64;
        (ns, ops * cells as f64 / (ns * 1e-9) / peak)
    };
    println!(
        "{n} gates ({n_perceive} perception), {} rows ({} in the rollout, {} gradient), \
         {cells} cells per row, {}, peak {:.1} G FMA lanes/s",
        p.gates.n_rows,
        p.rollout.n_rows,
        p.backward.n_rows,
        level.name(),
        peak / 1e9
    );
    println!("| pass | us per chunk | ns per gate (% of peak) | perception | update |");
    println!("|---|---|---|---|---|");
    let row = |name: &str, [all, per, upd]: [f64; 3], ops: f64| {
        let (a, b, c) = (
            per_gate(all, n, ops),
            per_gate(per, n_perceive, ops),
            per_gate(upd, n - n_perceive, ops),
        );
        println!(
            "| {name} | {all:.1} | {:.1} ({:.0}%) | {:.1} ({:.0}%) | {:.1} ({:.0}%) |",
            a.0,
            a.1 * 100.0,
            b.0,
            b.1 * 100.0,
            c.0,
            c.1 * 100.0
        );
    };
    let (r, pct) = per_gate(rollout, n, FORWARD_OPS);
    println!(
        "| rollout forward | {rollout:.1} | {r:.1} ({:.0}%) | | |",
        pct * 100.0
    );
    row("forward, all rows kept", fwd, FORWARD_OPS);
    row("backward", bwd, BACKWARD_OPS);
    let pair = best_us(|| {
        kernels::forward(&p.gates, &coefs, &mut act, lanes, level);
        run_backward(&p.backward, &act, &mut grad, &mut acc);
    });
    let total = rollout + pair;
    let ideal = (2.0 * FORWARD_OPS + BACKWARD_OPS) * (n * cells) as f64 / peak * 1e6;
    println!(
        "one chunk-step (rollout, then forward and backward in turn): {total:.1} us; \
         at the FMA peak {ideal:.1} us ({:.0}%)",
        ideal / total * 100.0
    );
}
