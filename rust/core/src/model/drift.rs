//! Neutral-drift search over the hard circuit's gate ops: the discrete last mile after
//! training (`logicars.repair(..., method="drift")`).
//!
//! A (1+1) search: flip one row of one gate's truth table, drawn at random from a seeded
//! stream, run the hard circuit on the task's inputs, and keep the flip when the wrong
//! cells do not grow. Keeping the moves that leave the count equal lets the search walk
//! across the plateaus where a greedy search (strictly fewer wrong cells) stops: on the
//! lizard, greedy repair stops 2–13 cells short, where drift keeps going
//! (docs/results.md). Each candidate compiles the circuit (0.1–0.3 ms) and runs it on
//! the slot engine, not the JIT, whose machine-code generation would cost more than the
//! small training grids' run.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Model;
use crate::error::{shape_err, value_err, Result};
use crate::float::GridShape;
use crate::hard::{simulate_on, Circuit, HardEngine, Interrupt, SimOptions};

/// What the search runs the circuit on: `x` (`N × H × W × C` bytes of 0/1), and for
/// each grid the targets it may match on `loss_channels`: `targets` holds `O` options of
/// `N × H × W × len(loss_channels)` bytes, and a grid's wrong cells are those of the
/// option it is closest to (a pattern in any of its phases).
pub struct DriftTask<'a> {
    pub x: &'a [u8],
    pub shape: GridShape,
    pub targets: &'a [u8],
    pub loss_channels: &'a [usize],
    /// Steps, boundary and update masks of the run (no recording, no damage).
    pub opts: SimOptions<'a>,
}

/// What a search did: wrong cells before and after, the candidate runs, and each gate
/// whose op changed as `(parameter gate, old op, new op)`, in gate order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftOutcome {
    pub wrong_before: u64,
    pub wrong_after: u64,
    pub evaluations: u64,
    pub changes: Vec<(usize, u8, u8)>,
}

impl DriftTask<'_> {
    fn check(&self, channels: usize) -> Result<()> {
        let GridShape {
            batch,
            height,
            width,
        } = self.shape;
        let cells = batch * height * width;
        if self.x.len() != cells * channels {
            return shape_err!(
                "x: expected {cells} cells x {channels} channels = {} bytes, got {}",
                cells * channels,
                self.x.len()
            );
        }
        if let Some(&c) = self.loss_channels.iter().find(|&&c| c >= channels) {
            return value_err!("loss channel {c} is not one of the model's {channels}");
        }
        let per_option = cells * self.loss_channels.len();
        if per_option == 0
            || self.targets.is_empty()
            || !self.targets.len().is_multiple_of(per_option)
        {
            return shape_err!(
                "targets: expected options of {per_option} bytes (N x H x W x loss channels), got {}",
                self.targets.len()
            );
        }
        if self.targets.iter().any(|&t| t > 1) {
            return value_err!("targets: expected 0 or 1 in every cell");
        }
        if self.opts.record_every != 0 || self.opts.damage.is_some() {
            return value_err!("a drift search runs to the last step, without damage");
        }
        Ok(())
    }

    /// Wrong loss-channel cells of the final grids `out`, each grid against the target
    /// option closest to it.
    fn wrong(&self, out: &[u8], channels: usize) -> u64 {
        let cells = self.shape.height * self.shape.width;
        let lc = self.loss_channels;
        let per_grid = cells * lc.len();
        let options = self.targets.chunks_exact(per_grid * self.shape.batch);
        (0..self.shape.batch)
            .map(|n| {
                let grid = &out[n * cells * channels..(n + 1) * cells * channels];
                let count = |option: &[u8]| -> u64 {
                    let want = &option[n * per_grid..(n + 1) * per_grid];
                    let pairs = grid.chunks_exact(channels).zip(want.chunks_exact(lc.len()));
                    pairs
                        .map(|(got, want)| {
                            lc.iter().zip(want).filter(|&(&c, &w)| got[c] != w).count() as u64
                        })
                        .sum()
                };
                options.clone().map(count).min().unwrap_or(0)
            })
            .sum()
    }
}

impl Model {
    /// Searches the hard circuit's gate ops for fewer wrong cells on `task` (see the
    /// module's doc), for at most `budget` candidate runs or until none is wrong. The
    /// flips come from `seed`, so a search is reproducible; the model is not changed.
    pub fn drift_search(
        &self,
        task: &DriftTask<'_>,
        budget: u64,
        seed: u64,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<DriftOutcome> {
        let channels = self.spec.channels;
        task.check(channels)?;
        let wrong = |ops: &[u8]| -> Result<u64> {
            let circuit = Circuit::compile(&self.program, ops);
            let out = simulate_on(HardEngine::Slots, &circuit, task.x, task.shape, &task.opts)?;
            Ok(task.wrong(&out, channels))
        };
        let start = self.hard_ops();
        let mut ops = start.clone();
        let before = wrong(&ops)?;
        let (mut current, mut evaluations) = (before, 0u64);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut deadline = Interrupt::deadline(interrupt);
        while current > 0 && evaluations < budget && !ops.is_empty() {
            let gate = rng.random_range(0..ops.len());
            let row = rng.random_range(0..4u32);
            let old = ops[gate];
            ops[gate] ^= 8 >> row; // row k of the table is op bit 3 - k
            let w = wrong(&ops)?;
            evaluations += 1;
            if w <= current {
                current = w;
            } else {
                ops[gate] = old;
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                Interrupt::poll(interrupt)?;
                deadline = Interrupt::deadline(interrupt);
            }
        }
        let changes = (0..ops.len())
            .filter(|&g| ops[g] != start[g])
            .map(|g| (g, start[g], ops[g]))
            .collect();
        Ok(DriftOutcome {
            wrong_before: before,
            wrong_after: current,
            evaluations,
            changes,
        })
    }
}
