//! Rollouts and back-propagation through time over a batch of grids.
//!
//! The state of every step lives in a chunk-major buffer: chunk `k` holds `C` rows of
//! `row_len` cells (the model's cells per chunk), and one extra all-zero chunk at the
//! end stands for the cells outside a zero-padded grid. A step runs every chunk
//! through the gate program (perception + update) in a per-thread arena; a chunk starts
//! its next step once its neighbours are done with this one (`wavefront`), not once
//! every chunk is. Back-propagation recomputes each step's activations from the stored
//! state instead of keeping them, so memory stays at a few states plus one arena per
//! thread.
//!
//! - `layout`: where each cell's neighbours are in the chunk-major buffers, and the
//!   patch fill, gradient scatter and gather that follow from it;
//! - `rows`: row copies and the buffers the tasks of a wavefront share;
//! - `forward`: the rollout (`Workspace::forward`);
//! - `backward`: back-propagation through it (`Workspace::backward`);
//! - this module: the buffers, their memory budget, and loading and reading grids.

mod backward;
mod forward;
mod layout;
mod rows;

use std::sync::Mutex;

use super::program::Program;
use crate::aligned::AlignedVec;
use crate::error::{Error, Result};
use crate::grid::GridShape;
use crate::memory;
use crate::threads;
use layout::Layout;

/// What a workspace buffer is, in the error when the system refuses one.
const WHAT: &str = "a rollout buffer";

/// Scratch rows of one thread: activations and their gradients.
pub(super) struct Arena {
    pub act: AlignedVec,
    pub grad: AlignedVec,
}

/// Every buffer a rollout or a gradient needs, allocated once per grid shape.
pub(crate) struct Workspace {
    pub layout: Layout,
    steps: usize,
    /// `steps + 1` states, each `layout.state_len()` floats.
    pub states: AlignedVec,
    /// Update masks, `steps × n_pad` (1 = the cell updates); empty when synchronous.
    pub masks: Vec<f32>,
    /// Gradients w.r.t. a state, two buffers used in turn by `backward`'s steps.
    grad_state: [AlignedVec; 2],
    /// Gradients w.r.t. every chunk's patch rows (plus a zero chunk), two buffers.
    gpatch: [AlignedVec; 2],
    /// Coefficient-gradient sums, `n_chunks × n_coefs`, reduced in chunk order.
    acc: AlignedVec<f64>,
    arenas: Vec<Mutex<Arena>>,
    /// Rows of the activation and the gradient arena.
    n_rows: (usize, usize),
    /// The perception outputs of every step and chunk (`Reuse`, one block of
    /// `outputs` rows each), when the program has a plan and they fit
    /// (`REUSE_MAX_BYTES`); else empty.
    perception: AlignedVec,
    /// Whether `perception` holds the outputs of the last forward's steps.
    perception_kept: bool,
}

/// The most memory the kept perception outputs may take: enough for the presets'
/// models and grids with room to spare (docs/performance.md).
const REUSE_MAX_BYTES: usize = 256 << 20;

impl Workspace {
    /// Bytes a workspace for this shape would take (saturating: absurd step counts
    /// give `usize::MAX`, never a wrapped small number).
    pub fn estimate_bytes(
        program: &Program,
        shape: GridShape,
        steps: usize,
        threads: usize,
    ) -> usize {
        let row_len = program.row_len;
        let n_chunks = shape.cells().div_ceil(row_len);
        let c = program.channels;
        let state_len = (n_chunks + 1) * c * row_len;
        let floats =
            steps
                .saturating_add(1)
                .saturating_mul(state_len)
                .saturating_add(steps.saturating_mul(n_chunks * row_len))
                .saturating_add(2 * state_len)
                .saturating_add(2 * (n_chunks + 1) * 9 * c * row_len)
                .saturating_add(threads.saturating_mul(
                    (program.kept.gates.n_rows + program.backward.n_rows) * row_len,
                ));
        let tables = 2 * 9 * n_chunks * row_len * 4;
        floats
            .saturating_mul(4)
            .saturating_add(n_chunks.saturating_mul(program.n_coefs()).saturating_mul(8))
            .saturating_add(tables)
    }

    /// Refuses, before anything is allocated, a rollout whose workspace plus
    /// `extra_bytes` (drawn masks, recorded grids) would exceed `LOGICARS_MAX_MEMORY_MB`.
    pub fn check_budget(
        program: &Program,
        shape: GridShape,
        steps: usize,
        extra_bytes: usize,
    ) -> Result<()> {
        let threads = threads::num_threads();
        let bytes =
            Self::estimate_bytes(program, shape, steps, threads).saturating_add(extra_bytes);
        if memory::over_cap(bytes) {
            let cap_mb = memory::cap_mb();
            return Err(Error::Memory(format!(
                "a grid of {}x{}x{} cells over {steps} steps needs about {} MB of buffers, \
                 more than the limit of {cap_mb} MB (set LOGICARS_MAX_MEMORY_MB to raise it)",
                shape.batch,
                shape.height,
                shape.width,
                bytes >> 20
            )));
        }
        if shape.cells() >= (u32::MAX as usize) / (9 * program.channels.max(1) * 2) {
            return Err(Error::Memory(format!(
                "a grid of {} cells is too large to address",
                shape.cells()
            )));
        }
        Ok(())
    }

    pub fn new(
        program: &Program,
        shape: GridShape,
        steps: usize,
        periodic: bool,
    ) -> Result<Workspace> {
        Self::check_budget(program, shape, steps, 0)?;
        let threads = threads::num_threads();
        let row_len = program.row_len;
        let layout = Layout::new(shape, program.channels, row_len, periodic);
        let state_len = layout.state_len();
        let n_chunks = layout.n_chunks;
        let gpatch_len = (n_chunks + 1) * 9 * program.channels * row_len;
        let mut ws = Workspace {
            states: memory::try_zeros((steps + 1) * state_len, WHAT)?,
            masks: Vec::new(),
            grad_state: [
                memory::try_zeros(state_len, WHAT)?,
                memory::try_zeros(state_len, WHAT)?,
            ],
            gpatch: [
                memory::try_zeros(gpatch_len, WHAT)?,
                memory::try_zeros(gpatch_len, WHAT)?,
            ],
            acc: memory::try_zeros(n_chunks * program.n_coefs(), WHAT)?,
            arenas: Vec::new(),
            n_rows: (program.kept.gates.n_rows, program.backward.n_rows),
            perception: AlignedVec::zeros(0),
            perception_kept: false,
            layout,
            steps,
        };
        ws.ensure_arenas(threads)?;
        if let Some(reuse) = &program.kept.reuse {
            // Optional: without room for it the kept pass computes the perception.
            let len = steps
                .saturating_mul(n_chunks)
                .saturating_mul(reuse.outputs * row_len);
            let bytes = len.saturating_mul(4);
            let total = Self::estimate_bytes(program, shape, steps, threads).saturating_add(bytes);
            if bytes <= REUSE_MAX_BYTES && !memory::over_cap(total) {
                ws.perception = memory::try_zeros(len, WHAT).unwrap_or(AlignedVec::zeros(0));
            }
        }
        Ok(ws)
    }

    /// Whether this workspace serves `shape` over `steps` steps.
    pub fn fits(&self, shape: GridShape, steps: usize) -> bool {
        self.layout.shape == shape && self.steps >= steps
    }

    /// One arena per pool thread (the pool may have grown since the workspace was made).
    fn ensure_arenas(&mut self, threads: usize) -> Result<()> {
        let (act_rows, grad_rows) = self.n_rows;
        let row_len = self.layout.row_len;
        while self.arenas.len() < threads {
            self.arenas.push(Mutex::new(Arena {
                act: memory::try_zeros(act_rows * row_len, WHAT)?,
                grad: memory::try_zeros(grad_rows * row_len, WHAT)?,
            }));
        }
        Ok(())
    }

    pub fn state(&self, t: usize) -> &[f32] {
        let len = self.layout.state_len();
        &self.states[t * len..(t + 1) * len]
    }

    /// Sets state 0 from a `B × H × W × C` grid (padding cells stay 0).
    pub fn load_grid(&mut self, grid: &[f32]) {
        let len = self.layout.state_len();
        let (layout, state) = (&self.layout, &mut self.states[..len]);
        state.iter_mut().for_each(|v| *v = 0.0);
        for (n, cell) in grid.chunks(layout.channels).enumerate() {
            for (c, &v) in cell.iter().enumerate() {
                state[layout.addr(n, c)] = v;
            }
        }
    }

    /// Appends state `t` to `out` as a `B × H × W × C` grid.
    pub fn read_grid(&self, t: usize, out: &mut Vec<f32>) {
        let state = self.state(t);
        let c = self.layout.channels;
        out.reserve(self.layout.shape.cells() * c);
        for n in 0..self.layout.shape.cells() {
            out.extend((0..c).map(|ch| state[self.layout.addr(n, ch)]));
        }
    }
}

/// What a forward pass does besides computing the states.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ForwardOptions {
    /// Round every state but the last to 0 or 1, straight-through (`binarize_row`).
    pub binarize: bool,
    /// Keep what `backward` can reuse: set for a training step's rollout.
    pub for_backward: bool,
}

/// The loss gradient w.r.t. every state the loss reads: states `from..=steps` of the
/// rollout, one state buffer (`Layout::state_len` floats) each, in step order.
#[derive(Clone, Copy)]
pub(crate) struct LossGrad<'a> {
    pub from: usize,
    pub grads: &'a [f32],
}

impl LossGrad<'_> {
    /// Chunk `k`'s rows of the gradient w.r.t. state `t` (`from <= t`).
    pub(super) fn chunk(&self, t: usize, k: usize, chunk_len: usize, state_len: usize) -> &[f32] {
        &self.grads[(t - self.from) * state_len + k * chunk_len..][..chunk_len]
    }
}

/// The arena of the calling worker thread. Each thread runs one chunk at a time, so
/// the lock is never contended; it only proves exclusive access.
pub(super) fn lock_arena(arenas: &[Mutex<Arena>]) -> std::sync::MutexGuard<'_, Arena> {
    let i = rayon::current_thread_index().unwrap_or(0) % arenas.len();
    arenas[i].lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::spec::Spec;

    /// A rollout and its back-propagation give the same states and coefficient sums, bit
    /// for bit, with the whole arena kept, with the perception replayed per channel, and
    /// with the kept pass taking the rollout's perception outputs (`Reuse`): zero-padded
    /// and periodic, synchronous and with update masks, over a partly filled last chunk
    /// whose padding cells stay +0 (else they would hold whatever chunk the same thread
    /// ran before: states that depend on the schedule).
    #[test]
    fn replayed_and_reused_perception_change_no_bit() {
        for row_len in [32, 64, 80] {
            replay_and_reuse_change_no_bit(row_len);
        }
    }

    fn replay_and_reuse_change_no_bit(row_len: usize) {
        let spec = Spec::from_json(&format!(
            r#"{{"channels": 4, "periodic": false, "num_steps": 3, "loss_channels": [0],
                "lr": 0.05, "perceive": {{"n_kernels": 3, "layers": [9, 8, 4, 2],
                "connections": ["first_kernel", "unique", "unique"]}},
                "update": {{"layers": [28, 32, 16, 8, 4],
                "connections": ["unique", "random", "unique", "unique"]}},
                "chunk_cells": {row_len}}}"#
        ))
        .unwrap();
        let model = Model::new(spec, 5).unwrap();
        let compile = |replay| {
            let (p, u) = (model.perceive_wires(), model.update_wires());
            Program::compile_with(model.spec(), p, u, Some(replay))
        };
        let (whole, replayed) = (compile(false), compile(true));
        assert!(whole.kept.reuse.is_none() && replayed.kept.reuse.is_some());
        let coefs: Vec<[f32; 4]> = (0..whole.n_params)
            .map(|i| std::array::from_fn(|k| ((i * 7 + k * 13) % 17) as f32 / 17.0 - 0.3))
            .collect();
        let shape = GridShape {
            batch: 2,
            height: 9,
            width: 13,
        };
        let steps = 3;
        let x: Vec<f32> = (0..shape.cells() * 4)
            .map(|i| ((i * 37) % 10) as f32 / 9.0)
            .collect();
        let run = |p: &Program, reuse: bool, periodic: bool, masked: bool| {
            let mut ws = Workspace::new(p, shape, steps, periodic).unwrap();
            assert_eq!(ws.perception.is_empty(), p.kept.reuse.is_none());
            if !reuse {
                ws.perception = AlignedVec::zeros(0);
            }
            ws.load_grid(&x);
            if masked {
                let n = steps * ws.layout.n_pad();
                ws.masks = (0..n).map(|i| ((i * 11) % 3 != 0) as u8 as f32).collect();
            }
            let options = ForwardOptions {
                binarize: false,
                for_backward: true,
            };
            ws.forward(p, &coefs, steps, masked, options, None).unwrap();
            assert_eq!(ws.perception_kept, reuse && p.kept.reuse.is_some());
            let grad_final: Vec<f32> = (0..ws.layout.state_len())
                .map(|i| ((i * 13) % 7) as f32 - 3.0)
                .collect();
            let sums = ws
                .backward(
                    p,
                    &coefs,
                    &coefs,
                    steps,
                    masked,
                    LossGrad {
                        from: steps,
                        grads: &grad_final,
                    },
                )
                .unwrap();
            let states: Vec<u32> = ws.states.iter().map(|v| v.to_bits()).collect();
            let real = shape.cells() % row_len;
            for state in ws.states.chunks_exact(ws.layout.state_len()) {
                let last = &state[(ws.layout.n_chunks - 1) * 4 * row_len..][..4 * row_len];
                let padding = last.chunks_exact(row_len).flat_map(|row| &row[real..]);
                assert!(padding.into_iter().all(|&v| v.to_bits() == 0));
            }
            let sums: Vec<u64> = sums.iter().map(|v| v.to_bits()).collect();
            (states, sums)
        };
        for (periodic, masked) in [(false, false), (true, true)] {
            let want = run(&whole, false, periodic, masked);
            assert!(want.1.iter().any(|&s| s != 0));
            assert!(run(&replayed, false, periodic, masked) == want);
            assert!(run(&replayed, true, periodic, masked) == want);
        }
    }

    /// `load_grid` puts every (cell, channel) of the grid at its `addr`, and zeros in
    /// the padding lanes of the last chunk and in the zero chunk (here: stale values
    /// from a state loaded before), and `read_grid` gives the grid back.
    #[test]
    fn load_grid_places_every_cell_and_zeros_the_rest() {
        let spec = Spec::from_json(
            r#"{"channels": 5, "periodic": true, "num_steps": 1, "loss_channels": [0],
                "perceive": {"n_kernels": 2, "layers": [9, 8, 4],
                "connections": ["first_kernel", "unique"]},
                "update": {"layers": [45, 24, 12, 6, 5],
                "connections": ["unique", "unique", "unique", "unique"]}}"#,
        )
        .unwrap();
        let model = Model::new(spec, 1).unwrap();
        let (p, u) = (model.perceive_wires(), model.update_wires());
        let program = Program::compile(model.spec(), p, u);
        let shape = GridShape {
            batch: 2,
            height: 7,
            width: 11,
        };
        let mut ws = Workspace::new(&program, shape, 1, true).unwrap();
        let n = shape.cells() * 5;
        let grid: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
        ws.states.iter_mut().for_each(|v| *v = -1.0);
        ws.load_grid(&grid);
        let mut want = vec![0f32; ws.layout.state_len()];
        for (i, &v) in grid.iter().enumerate() {
            want[ws.layout.addr(i / 5, i % 5)] = v;
        }
        assert_eq!(ws.state(0), &want[..]);
        let mut back = Vec::new();
        ws.read_grid(0, &mut back);
        assert_eq!(back, grid);
    }
}
