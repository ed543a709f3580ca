//! Back-propagation through every step of a rollout, chunk by chunk as the wavefront
//! allows, recomputing each step's activations from its stored state.

use std::sync::Mutex;

use super::layout::{Layout, Next};
use super::rows::SharedRows;
use super::{lock_arena, Arena, LossGrad, Workspace};
use crate::error::Result;
use crate::float::kernels;
use crate::float::program::{Program, Reuse};
use crate::float::wavefront;
use crate::simd::{self, lanes_used, SimdLevel};
use crate::threads;

impl Workspace {
    /// Back-propagates from `loss_grad` (gradient of the loss w.r.t. the states it reads)
    /// through every step, using the states left by `forward` with the same coefficients
    /// `coefs`. The gradient w.r.t. each gate's inputs goes through `back_coefs` (the
    /// same slice, or for a straight-through relaxation the relaxed gate of a hard
    /// forward). Returns the coefficient gradient `dL/dc` (4 per parameter), summed over
    /// cells, steps and the batch.
    ///
    /// The task of chunk `k` at step `t` first gathers the gradient w.r.t. its cells of
    /// state `t + 1` from the patch gradients that step t + 1's tasks of its neighbours
    /// left, then back-propagates through step `t`. Patch and state gradients alternate
    /// between two buffers by the step's parity; the wavefront's dependencies order
    /// every write of a row against its reads.
    pub fn backward(
        &mut self,
        program: &Program,
        coefs: &[[f32; 4]],
        back_coefs: &[[f32; 4]],
        steps: usize,
        masked: bool,
        loss_grad: LossGrad<'_>,
    ) -> Result<Vec<f64>> {
        let pool = threads::pool();
        self.ensure_arenas(pool.current_num_threads())?;
        let n_coefs = program.n_coefs();
        let gpatch_len = self.layout.n_chunks * self.layout.chunk_gpatch_len();
        self.acc.iter_mut().for_each(|v| *v = 0.0);
        let Workspace {
            layout,
            states,
            masks,
            arenas,
            grad_state,
            gpatch,
            acc,
            perception,
            perception_kept,
            ..
        } = self;
        let pass = BackPropagation {
            layout,
            program,
            coefs,
            back_coefs,
            level: simd::simd_level(),
            steps,
            masks: masked.then_some(&masks[..]),
            loss_grad,
            states,
            reuse: program.kept.reuse.as_ref().filter(|_| *perception_kept),
            perception,
            arenas,
            grad_state: grad_state.each_mut().map(|g| SharedRows::new(&mut g[..])),
            gpatch: gpatch
                .each_mut()
                .map(|g| SharedRows::new(&mut g[..gpatch_len])),
            acc: SharedRows::new(acc),
        };
        let task = |i: usize, k: usize| pass.step_chunk(steps - 1 - i, k);
        pool.install(|| wavefront::run(steps, &layout.chunks, &task, &|| false));
        let mut total = vec![0f64; n_coefs];
        for chunk in acc.chunks(n_coefs) {
            for (t, v) in total.iter_mut().zip(chunk) {
                *t += v;
            }
        }
        Ok(total)
    }
}

/// What every task of a back-propagation reads, and the buffers they write at disjoint
/// places.
struct BackPropagation<'a> {
    layout: &'a Layout,
    program: &'a Program,
    coefs: &'a [[f32; 4]],
    back_coefs: &'a [[f32; 4]],
    level: SimdLevel,
    steps: usize,
    /// The update masks of every step (`Workspace::masks`) when asynchronous.
    masks: Option<&'a [f32]>,
    loss_grad: LossGrad<'a>,
    states: &'a [f32],
    /// How the rollout kept the perception outputs in `perception`, if it did.
    reuse: Option<&'a Reuse>,
    perception: &'a [f32],
    arenas: &'a [Mutex<Arena>],
    /// Gradients w.r.t. a state, by the step's parity.
    grad_state: [SharedRows; 2],
    /// Gradients w.r.t. every chunk's patch rows, by the step's parity.
    gpatch: [SharedRows; 2],
    /// Each chunk's coefficient-gradient sums.
    acc: SharedRows<f64>,
}

impl BackPropagation<'_> {
    /// Chunk `k`'s part of step `t`: it gathers the gradient w.r.t. its cells of state
    /// t + 1, back-propagates it through step t and scatters its patch gradients.
    fn step_chunk(&self, t: usize, k: usize) {
        let chunk_len = self.layout.chunk_state_len();
        let n_coefs = self.program.n_coefs();
        // SAFETY: a chunk's rows of the state-gradient buffers and of `acc` are its own
        // tasks' alone, and they run one after the other.
        let (g, acc) = unsafe {
            (
                self.grad_state[t % 2].slice_mut(k * chunk_len, chunk_len),
                self.acc.slice_mut(k * n_coefs, n_coefs),
            )
        };
        self.next_state_gradient(t, k, g);
        let mut guard = lock_arena(self.arenas);
        let arena = &mut *guard;
        self.recompute_step(t, k, &mut arena.act);
        self.seed_gradients(t, k, g, &mut arena.grad);
        self.back_propagate_gates(k, arena, acc);
        let gpatch = &self.gpatch[t % 2];
        self.layout.scatter_patch_gradient(k, &arena.grad, gpatch);
    }

    /// The update mask of chunk `k` at step `t`, when asynchronous.
    fn mask(&self, t: usize, k: usize) -> Option<&[f32]> {
        let row_len = self.layout.row_len;
        self.masks
            .map(|m| &m[t * self.layout.n_pad() + k * row_len..][..row_len])
    }

    /// Writes into `g` chunk `k`'s gradient w.r.t. state t + 1: the loss's after the last
    /// step, else gathered from the patch gradients that step t + 1's tasks scattered to
    /// it, plus the loss's own when the loss reads that state too.
    fn next_state_gradient(&self, t: usize, k: usize, g: &mut [f32]) {
        let layout = self.layout;
        let (chunk_len, state_len) = (layout.chunk_state_len(), layout.state_len());
        let patch_len = layout.chunk_gpatch_len();
        let after = if t + 1 == self.steps {
            Next::Final(self.loss_grad.chunk(t + 1, k, chunk_len, state_len))
        } else {
            let before = (t + 1) % 2;
            // SAFETY: the chunk's patch-gradient rows of the other parity were written by
            // step t + 1's tasks of the chunks around it (`chunks.deps[k]`), all finished;
            // the next writers of those rows are step t - 1's tasks of the same chunks,
            // which wait for this one. Its state-gradient rows are its own tasks' alone.
            unsafe {
                Next::Gather {
                    gpatch: self.gpatch[before].slice(k * patch_len, patch_len),
                    grad_state: self.grad_state[before].slice(k * chunk_len, chunk_len),
                    mask: self.mask(t + 1, k),
                }
            }
        };
        layout.state_gradient(k, &after, g);
        if t + 1 < self.steps && t + 1 >= self.loss_grad.from {
            // A state the loss reads before the last: its own loss gradient joins the one
            // that came back from the steps after it.
            let own = self.loss_grad.chunk(t + 1, k, chunk_len, state_len);
            g.iter_mut().zip(own).for_each(|(a, b)| *a += b);
        }
    }

    /// Fills chunk `k`'s arena with step `t`'s activations up to the update network's
    /// input: the patch from state t, and the perception outputs the rollout kept (else
    /// the kept pass computes them).
    fn recompute_step(&self, t: usize, k: usize, act: &mut [f32]) {
        let layout = self.layout;
        let (row_len, state_len) = (layout.row_len, layout.state_len());
        layout.fill_patch(&self.states[t * state_len..(t + 1) * state_len], k, act);
        let kept = &self.program.kept;
        let mut done = 0;
        if let Some(reuse) = self.reuse {
            // The rollout's outputs of this step and chunk; the backward replays the
            // hidden perception rows per channel.
            let len = reuse.outputs * row_len;
            let block = &self.perception[(t * layout.n_chunks + k) * len..][..len];
            // The lanes the rollout streamed out (all but in a last, partial chunk).
            let lanes = lanes_used(layout.chunk_cells(k));
            let dst = &mut act[reuse.first as usize * row_len..][..len];
            if lanes == row_len {
                dst.copy_from_slice(block);
            } else {
                for (d, b) in dst
                    .chunks_exact_mut(row_len)
                    .zip(block.chunks_exact(row_len))
                {
                    d[..lanes].copy_from_slice(&b[..lanes]);
                }
            }
            done = reuse.update_from;
        }
        let update = &kept.gates.instrs[done..];
        let rows = kept.gates.n_rows;
        kernels::forward_instrs(update, rows, self.coefs, act, layout.lanes(k), self.level);
    }

    /// Zeroes the gradient rows no backward gate writes before reading, and seeds the
    /// step's output rows with `g`, the gradient w.r.t. the state it produced.
    fn seed_gradients(&self, t: usize, k: usize, g: &[f32], grad: &mut [f32]) {
        let row_len = self.layout.row_len;
        let back = &self.program.backward;
        for &row in &back.unwritten {
            grad[row as usize * row_len..][..row_len].fill(0.0);
        }
        seed_outputs(&back.out_rows, g, self.mask(t, k), (grad, row_len));
    }

    /// Runs the backward gates over chunk `k`'s arena, segment by segment, each after
    /// replaying the activations it needs; adds the coefficient sums to `acc`.
    fn back_propagate_gates(&self, k: usize, arena: &mut Arena, acc: &mut [f64]) {
        let (level, chunk) = (self.level, self.layout.lanes(k));
        let kept = &self.program.kept;
        let rows = (kept.gates.n_rows, self.program.backward.n_rows);
        for (replay, part) in &kept.segments {
            let replay = &kept.replay[replay.clone()];
            let act = &mut arena.act[..];
            kernels::forward_instrs(replay, rows.0, self.coefs, act, chunk, level);
            let arenas = (&arena.act[..], &mut arena.grad[..]);
            let part = &kept.backward[part.clone()];
            kernels::backward_instrs(part, rows, self.back_coefs, arenas, acc, chunk, level);
        }
    }
}

/// Writes a chunk's gradient w.r.t. the next state (`g`, one `row_len` row per channel)
/// into the gradient rows (of `row_len` floats) of the step's outputs, through the
/// chunk's update mask when the step is asynchronous (cells that did not fire pass no
/// gradient back through the gates).
fn seed_outputs(
    out_rows: &[u32],
    g: &[f32],
    mask: Option<&[f32]>,
    (grad, row_len): (&mut [f32], usize),
) {
    for (c, &row) in out_rows.iter().enumerate() {
        let g = &g[c * row_len..][..row_len];
        let dst = &mut grad[row as usize * row_len..][..row_len];
        match mask {
            None => dst.copy_from_slice(g),
            Some(m) => {
                for i in 0..row_len {
                    dst[i] = g[i] * m[i];
                }
            }
        }
    }
}
