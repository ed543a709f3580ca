//! The losses: the soft loss and its gradient through every step, and the hard loss
//! (on the bit-sliced engine where the inputs are binary).

use rayon::prelude::*;

use super::{Decoding, LossSteps, Model};
use crate::error::Result;
use crate::float::{ForwardOptions, LossGrad};
use crate::grid::GridShape;
use crate::hard::{Circuit, HardEngine, Masks, SimOptions, Simulator};
use crate::memory;
use crate::relax::{self, Relaxed};
use crate::spec::Spec;
use crate::threads;

/// The buffers of a training step, kept from one step to the next: a wide model's,
/// allocated afresh every step, came back as page faults in every step
/// (docs/performance.md).
#[derive(Default)]
pub(super) struct Scratch {
    relaxed: Vec<Relaxed>,
    coefs: Vec<[f32; 4]>,
    back_coefs: Vec<[f32; 4]>,
    /// The loss gradient w.r.t. each state the loss reads (`LossGrad`).
    grad_states: Vec<f32>,
    /// The last gradient, once the optimizer has used it.
    pub grad: Vec<f32>,
}

impl Model {
    /// Loss of the states `at` reads against `y` (the mean over those states), and
    /// optionally its gradient w.r.t. each of them, one state buffer each (`LossGrad`).
    fn loss(
        &self,
        y: &[f32],
        y_per_cell: usize,
        at: LossSteps,
        mut grad: Option<&mut Vec<f32>>,
    ) -> f64 {
        let ws = self.workspace.as_ref().expect("forward ran");
        let state_len = ws.layout.state_len();
        if let Some(g) = grad.as_deref_mut() {
            g.clear();
            g.resize(state_len * at.count(), 0.0);
        }
        let cells = ws.layout.shape.cells();
        let channels = &self.spec.loss_channels;
        // Exactly 1 for one loss state: the sum and the gradient are then the plain ones.
        let weight = 1.0 / at.count() as f32;
        let mut total = 0f64;
        for (i, t) in (at.from..=at.steps).enumerate() {
            let state = ws.state(t);
            let value = |n: usize, c: usize| state[ws.layout.addr(n, channels[c])];
            total += squared_error(&self.spec, y, y_per_cell, cells, value, |n, ch, diff| {
                if let Some(g) = grad.as_deref_mut() {
                    g[i * state_len + ws.layout.addr(n, ch)] = 2.0 * diff * weight;
                }
            });
        }
        total / at.count() as f64
    }

    /// Soft loss after `spec.num_steps` steps and its gradient w.r.t. every logit
    /// (same layout as `logits()`).
    pub fn loss_and_grad(
        &mut self,
        x: &[f32],
        y: &[f32],
        shape: GridShape,
        masks: Option<&[f32]>,
    ) -> Result<(f64, Vec<f32>)> {
        let at = LossSteps::last(self.spec.num_steps);
        let per_cell = self.check_target(y, shape)?;
        let drawn = masks.is_some() || self.spec.is_async;
        self.check_rollout(x, shape, at.steps, drawn, false)?;
        let masks = self.resolve_masks(masks, shape, at.steps)?;
        self.soft_loss_and_grad(x, y, per_cell, shape, masks.as_deref(), at)
    }

    /// Every gate's relaxation in optimizer step `step`, into `relaxed`: one per gate (a
    /// softmax, with the step's noise; hard for the gates drawn to run hard) serves the
    /// forward, the backward and the parameter gradient. Per-gate work, so running it on
    /// the pool changes no result, only the wall time (a wide model's tens of thousands
    /// of f64 exps would otherwise run serially in every epoch).
    fn relax_gates(&self, step: u64, relaxed: &mut Vec<Relaxed>) {
        let (relax, seed) = (self.spec.relax, self.mask_seed);
        let hard_fraction = self.spec.hard_fraction(step);
        threads::pool().install(|| {
            let gates = self.logits.par_chunks(self.per_gate()).enumerate();
            gates
                .map(|(g, w)| {
                    let noise = relax::GateNoise::new(seed, step, g as u64);
                    let mut r = relax.relax(w, step, || noise.draws());
                    if hard_fraction > 0.0 && relax::runs_hard(seed, step, g as u64, hard_fraction)
                    {
                        relax.harden(w, &mut r);
                    }
                    r
                })
                .collect_into_vec(relaxed)
        });
    }

    pub(super) fn soft_loss_and_grad(
        &mut self,
        x: &[f32],
        y: &[f32],
        per_cell: usize,
        shape: GridShape,
        masks: Option<&[f32]>,
        at: LossSteps,
    ) -> Result<(f64, Vec<f32>)> {
        let steps = at.steps;
        let pool = threads::pool();
        let relax = self.spec.relax;
        let step = self.optimizer.t;
        let hard_fraction = self.spec.hard_fraction(step);
        let mut scratch = std::mem::take(&mut self.scratch);
        let Scratch {
            relaxed,
            coefs,
            back_coefs,
            grad_states,
            grad: last_grad,
        } = &mut scratch;
        self.relax_gates(step, relaxed);
        pool.install(|| relaxed.par_iter().map(|r| r.coefs).collect_into_vec(coefs));
        let straight_through = relax.straight_through() || hard_fraction > 0.0;
        if straight_through {
            pool.install(|| {
                relaxed
                    .par_iter()
                    .map(|r| r.back)
                    .collect_into_vec(back_coefs)
            });
        }
        let options = ForwardOptions {
            binarize: self.spec.binarizes_step(step),
            for_backward: true,
        };
        self.forward(x, shape, steps, coefs, masks, options, None)?;
        let loss = self.loss(y, per_cell, at, Some(grad_states));
        let ws = self.workspace.as_mut().unwrap();
        let back = if straight_through {
            &*back_coefs
        } else {
            &*coefs
        };
        let gc = ws.backward(
            &self.program,
            coefs,
            back,
            steps,
            masks.is_some(),
            LossGrad {
                from: at.from,
                grads: grad_states,
            },
        )?;
        let mut grad = std::mem::take(last_grad);
        memory::try_resize(&mut grad, self.logits.len(), 0f32, "the gradient")?;
        let per_gate = self.per_gate();
        pool.install(|| {
            (
                relaxed.par_iter(),
                grad.par_chunks_mut(per_gate),
                gc.par_chunks(4),
            )
                .into_par_iter()
                .for_each(|(r, g, gc)| relax.params_grad(r, &[gc[0], gc[1], gc[2], gc[3]], g));
        });
        self.scratch = scratch;
        Ok((loss, grad))
    }

    /// Hard loss of the states `at` reads on the float engine (hard gates), for a grid
    /// or masks that are not binary, or masks over several loss states (see
    /// [`hard_bits`] and [`bit_sliced_hard_loss`] for the usual case); with
    /// `keep_final`, also the last state.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn float_hard_loss(
        &mut self,
        x: &[f32],
        y: &[f32],
        per_cell: usize,
        shape: GridShape,
        masks: Option<&[f32]>,
        at: LossSteps,
        keep_final: bool,
    ) -> Result<HardLoss> {
        let coefs = self.coefficients(Decoding::Hard);
        let options = ForwardOptions {
            binarize: self.spec.binarize_states,
            for_backward: false,
        };
        self.forward(x, shape, at.steps, &coefs, masks, options, None)?;
        let loss = self.loss(y, per_cell, at, None);
        let last = keep_final.then(|| {
            let mut out = Vec::new();
            self.workspace
                .as_ref()
                .unwrap()
                .read_grid(at.steps, &mut out);
            out
        });
        Ok((loss, last))
    }
}

/// The bits of a batch and of its masks for the bit-sliced hard loss, or None when
/// either is not binary: one pass per grid (x was checked by the caller).
pub(super) fn hard_bits(x: &[f32], masks: Option<&[f32]>) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let as_bits = |v: &[f32]| {
        let mut binary = true;
        let bits: Vec<u8> = (v.iter())
            .map(|&b| {
                binary &= b == 0.0 || b == 1.0;
                (b == 1.0) as u8
            })
            .collect();
        binary.then_some(bits)
    };
    match (as_bits(x), masks.map(as_bits)) {
        (Some(bits), None) => Some((bits, None)),
        (Some(bits), Some(Some(mask_bits))) => Some((bits, Some(mask_bits))),
        _ => None,
    }
}

/// A hard loss, and the last state of its rollout when asked for (`B × H × W × C`).
pub(super) type HardLoss = (f64, Option<Vec<f32>>);

/// Hard loss of the states `at` reads, run by `circuit` (the model's hard circuit) on
/// the bit-sliced engine, 64 cells per word, from the bits of [`hard_bits`]; with
/// `keep_final`, also the last state. Given masks serve a single loss state (the
/// caller takes the float path for more). Needs no model, so it can run beside the
/// soft pass.
#[allow(clippy::too_many_arguments)]
pub(super) fn bit_sliced_hard_loss(
    spec: &Spec,
    circuit: &Circuit,
    (bits, mask_bits): (&[u8], Option<&[u8]>),
    y: &[f32],
    per_cell: usize,
    shape: GridShape,
    at: LossSteps,
    keep_final: bool,
) -> Result<HardLoss> {
    let engine = Some(HardEngine::Slots);
    let mut sim = Simulator::new(circuit, shape, spec.periodic, engine, 0)?;
    sim.load(bits)?;
    // Only the loss channels leave the packed state (1 of 128 in a wide model).
    let channels = &spec.loss_channels;
    let mut out = memory::try_vec(shape.cells() * channels.len(), 0u8, "the grids")?;
    let mut total = 0f64;
    let mut done = 0;
    for t in at.from..=at.steps {
        let mut opts = SimOptions::new(t - done, spec.periodic);
        if let Some(m) = mask_bits {
            debug_assert_eq!(
                at.count(),
                1,
                "masks over several loss states take the float path"
            );
            opts.masks = Masks::Given(m);
        }
        sim.advance(&opts)?;
        done = t;
        sim.read_channels_into(channels, &mut out);
        let value = |n: usize, i: usize| out[n * channels.len() + i] as f32;
        total += squared_error(spec, y, per_cell, shape.cells(), value, |_, _, _| {});
    }
    let last = if keep_final {
        let all: Vec<usize> = (0..spec.channels).collect();
        let mut grid = memory::try_vec(shape.cells() * spec.channels, 0u8, "the grids")?;
        sim.read_channels_into(&all, &mut grid);
        Some(grid.into_iter().map(f32::from).collect())
    } else {
        None
    };
    Ok((total / at.count() as f64, last))
}

/// `Σ (out − y)²` over cells and `spec`'s loss channels, `out(n, i)` giving the final
/// state of cell `n` on the `i`-th loss channel; `on_diff(n, ch, out − y)` sees every
/// difference (for the gradient).
fn squared_error(
    spec: &Spec,
    y: &[f32],
    y_per_cell: usize,
    cells: usize,
    out: impl Fn(usize, usize) -> f32,
    mut on_diff: impl FnMut(usize, usize, f32),
) -> f64 {
    let mut loss = 0f64;
    for n in 0..cells {
        for (i, &ch) in spec.loss_channels.iter().enumerate() {
            let col = if y_per_cell == spec.channels { ch } else { i };
            let diff = out(n, i) - y[n * y_per_cell + col];
            loss += (diff as f64) * (diff as f64);
            on_diff(n, ch, diff);
        }
    }
    loss
}
