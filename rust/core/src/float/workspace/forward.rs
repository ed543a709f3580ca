//! The rollout: every chunk of every step, each chunk as soon as the chunks around it
//! are done with the step before (`wavefront`).

use std::sync::Mutex;
use std::time::Instant;

use super::layout::Layout;
use super::rows::SharedRows;
use super::{lock_arena, Arena, ForwardOptions, Workspace};
use crate::error::Result;
use crate::float::kernels;
use crate::float::program::{Program, Reuse};
use crate::float::wavefront;
use crate::interrupt::Interrupt;
use crate::simd::{self, lanes_used, SimdLevel};
use crate::threads;

impl Workspace {
    /// Runs `steps` steps from state 0, keeping every state. `coefs`: 4 per parameter.
    /// `masked`: the steps are asynchronous, through `masks`. `options.binarize` rounds
    /// every state but the last to 0 or 1 (see [`binarize_row`]);
    /// `options.for_backward` also keeps what `backward` can reuse.
    pub fn forward(
        &mut self,
        program: &Program,
        coefs: &[[f32; 4]],
        steps: usize,
        masked: bool,
        options: ForwardOptions,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<()> {
        let pool = threads::pool();
        self.ensure_arenas(pool.current_num_threads())?;
        self.perception_kept = false;
        let keep = options.for_backward && !self.perception.is_empty();
        let Workspace {
            layout,
            states,
            masks,
            arenas,
            perception,
            ..
        } = self;
        let rollout = Rollout {
            layout,
            program,
            coefs,
            level: simd::simd_level(),
            masks: masked.then_some(&masks[..]),
            arenas,
            reuse: program.kept.reuse.as_ref().filter(|_| keep),
            perception: SharedRows::new(perception),
            states: SharedRows::new(states),
            binarize: options.binarize,
            steps,
        };
        // One hand-over to the pool per `interrupt.every` of running (else one in all),
        // the check made between them on the calling thread.
        let mut t = 0;
        while t < steps {
            let until = Interrupt::deadline(interrupt);
            let stop = || until.is_some_and(|u| Instant::now() >= u);
            let from = t;
            let task = |i: usize, k: usize| rollout.step_chunk(from + i, k);
            t += pool.install(|| wavefront::run(steps - from, &layout.chunks, &task, &stop));
            if t < steps {
                Interrupt::poll(interrupt)?;
            }
        }
        self.perception_kept = keep;
        Ok(())
    }
}

/// What every task of a rollout reads, and the buffers they write at disjoint places.
struct Rollout<'a> {
    layout: &'a Layout,
    program: &'a Program,
    coefs: &'a [[f32; 4]],
    level: SimdLevel,
    /// The update masks of every step (`Workspace::masks`) when asynchronous.
    masks: Option<&'a [f32]>,
    arenas: &'a [Mutex<Arena>],
    /// How to keep the perception outputs for the backward, when it reuses them.
    reuse: Option<&'a Reuse>,
    perception: SharedRows,
    states: SharedRows,
    binarize: bool,
    steps: usize,
}

impl Rollout<'_> {
    /// Chunk `k`'s part of step `t`: state t + 1's chunk `k` from the chunks of state t
    /// around it.
    fn step_chunk(&self, t: usize, k: usize) {
        let layout = self.layout;
        let row_len = layout.row_len;
        let mask = self
            .masks
            .map(|m| &m[t * layout.n_pad() + k * row_len..][..row_len]);
        let mut arena = lock_arena(self.arenas);
        let act = &mut arena.act[..];
        let len = layout.state_len();
        // SAFETY: the chunks of state t that the fill reads (`chunks.deps[k]`, and the
        // zero chunk, never written) were written by finished tasks.
        unsafe { layout.fill_patch_from(self.states.as_ptr().add(t * len), len, k, act) };
        self.run_gates(t, k, act);
        self.write_state(t, k, act, mask);
    }

    /// Runs the step's gates over chunk `k`'s arena, whose patch rows are filled; when
    /// the backward reuses the perception outputs, streams them out on the way.
    fn run_gates(&self, t: usize, k: usize, act: &mut [f32]) {
        let (coefs, level) = (self.coefs, self.level);
        let gates = &self.program.rollout;
        let chunk = self.layout.lanes(k);
        let (rows, mut done) = (gates.n_rows, 0);
        if let Some(reuse) = self.reuse {
            let perceive = &gates.instrs[..reuse.update_from];
            kernels::forward_instrs(perceive, rows, coefs, act, chunk, level);
            self.keep_perception(t, k, reuse, act);
            done = reuse.update_from;
        }
        kernels::forward_instrs(&gates.instrs[done..], rows, coefs, act, chunk, level);
    }

    /// Copies chunk `k`'s perception outputs of step `t` out of the arena, into their
    /// block of `perception`. Plain stores: non-temporal ones, which kept these rows out
    /// of the caches, sent them to memory and made the backward read them back from
    /// there, 4-13% slower epochs on the Zen 5 host (docs/performance.md, round six).
    fn keep_perception(&self, t: usize, k: usize, reuse: &Reuse, act: &[f32]) {
        let row_len = self.layout.row_len;
        let block = (t * self.layout.n_chunks + k) * reuse.outputs * row_len;
        // Only the lanes the kernels read: a last chunk may hold few cells.
        let lanes = lanes_used(self.layout.chunk_cells(k));
        for &(row, j) in &reuse.rows {
            let at = block + j as usize * row_len;
            let src = &act[row as usize * row_len..][..lanes];
            // SAFETY: block (t, k) is this task's alone, and nothing reads the buffer
            // before `backward`.
            unsafe { self.perception.slice_mut(at, lanes) }.copy_from_slice(src);
        }
    }

    /// Writes chunk `k` of state t + 1 from the arena's output rows: through the update
    /// mask when asynchronous, then rounded or clamped.
    fn write_state(&self, t: usize, k: usize, act: &[f32], mask: Option<&[f32]>) {
        let layout = self.layout;
        let (len, chunk_len, row_len) =
            (layout.state_len(), layout.chunk_state_len(), layout.row_len);
        let cells = layout.chunk_cells(k);
        // SAFETY: chunk k of state t + 1 is this task's alone; chunk k of state t was
        // written by a finished task.
        let out = unsafe {
            self.states
                .slice_mut((t + 1) * len + k * chunk_len, chunk_len)
        };
        let old = unsafe { self.states.slice(t * len + k * chunk_len, chunk_len) };
        for (c, &row) in self.program.rollout.out_rows.iter().enumerate() {
            let new = &act[row as usize * row_len..][..row_len];
            let dst = &mut out[c * row_len..][..row_len];
            match mask {
                None => dst.copy_from_slice(new),
                Some(m) => {
                    let old = &old[c * row_len..][..row_len];
                    for i in 0..row_len {
                        dst[i] = old[i] * (1.0 - m[i]) + new[i] * m[i];
                    }
                }
            }
            // The gates skip lanes past the last block holding cells, so the arena's
            // rows hold an earlier chunk's values there: padding cells stay 0,
            // whichever thread ran which chunk before.
            dst[cells..].fill(0.0);
            if self.binarize && t + 1 < self.steps {
                binarize_row(dst);
            } else {
                // The gates' polynomial form (c0 + c1·a + c2·b + c3·ab) can round a
                // state just past [0, 1]; saturated XOR-like gates double such an
                // excursion in every layer, so unclamped it reaches inf within a
                // rollout. The backward pass treats the clamp as the identity.
                clamp_row(dst);
            }
        }
    }
}

/// Clamps a relaxed state row to [0, 1] (NaN stays NaN, to surface as an error).
fn clamp_row(row: &mut [f32]) {
    row.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
}

/// Rounds a state row to 0 or 1 (`≥ 0.5` is 1). The backward treats the rounding as the
/// identity (straight-through): it recomputes each step from the rounded state the step
/// ran from. A relaxed circuit trained this way cannot carry information from step to
/// step in fractional values, which its hard circuit does not have.
fn binarize_row(row: &mut [f32]) {
    row.iter_mut()
        .for_each(|v| *v = if *v >= 0.5 { 1.0 } else { 0.0 });
}
