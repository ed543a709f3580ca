//! The losses: the soft loss and its gradient through every step, and the hard loss
//! (on the bit-sliced engine where the inputs are binary).

use rayon::prelude::*;

use super::{Decoding, Model};
use crate::error::Result;
use crate::float::GridShape;
use crate::hard::{Circuit, HardEngine, Masks, SimOptions, Simulator};
use crate::memory;
use crate::relax::{self, Relaxed};
use crate::spec::Spec;
use crate::threads;

/// The buffers of a training step, kept from one step to the next: a wide model's (the
/// lizard's 1.6 MB) allocated afresh every step came back as ~400 page faults per step,
/// ~3% of its time.
#[derive(Default)]
pub(super) struct Scratch {
    relaxed: Vec<Relaxed>,
    coefs: Vec<[f32; 4]>,
    back_coefs: Vec<[f32; 4]>,
    /// The loss gradient w.r.t. the final state.
    grad_final: Vec<f32>,
    /// The last gradient, once the optimizer has used it.
    pub grad: Vec<f32>,
}

impl Model {
    /// Loss of the final state against `y`, and optionally its gradient as a state buffer.
    fn loss(
        &self,
        y: &[f32],
        y_per_cell: usize,
        steps: usize,
        mut grad: Option<&mut Vec<f32>>,
    ) -> f64 {
        let ws = self.workspace.as_ref().expect("forward ran");
        let state = ws.state(steps);
        if let Some(g) = grad.as_deref_mut() {
            g.clear();
            g.resize(ws.layout.state_len(), 0.0);
        }
        let cells = ws.layout.shape.cells();
        let channels = &self.spec.loss_channels;
        let value = |n: usize, i: usize| state[ws.layout.addr(n, channels[i])];
        squared_error(&self.spec, y, y_per_cell, cells, value, |n, ch, diff| {
            if let Some(g) = grad.as_deref_mut() {
                g[ws.layout.addr(n, ch)] = 2.0 * diff;
            }
        })
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
        let steps = self.spec.num_steps;
        let per_cell = self.check_target(y, shape)?;
        let drawn = masks.is_some() || self.spec.is_async;
        self.check_rollout(x, shape, steps, drawn, false)?;
        let masks = self.resolve_masks(masks, shape, steps)?;
        self.soft_loss_and_grad(x, y, per_cell, shape, masks.as_deref())
    }

    pub(super) fn soft_loss_and_grad(
        &mut self,
        x: &[f32],
        y: &[f32],
        per_cell: usize,
        shape: GridShape,
        masks: Option<&[f32]>,
    ) -> Result<(f64, Vec<f32>)> {
        let steps = self.spec.num_steps;
        // One relaxation per gate (a softmax, with the step's noise) serves the forward,
        // the backward and the parameter gradient. Per-gate work, so running it on the
        // pool changes no result, only the wall time (50k f64 exps would otherwise be a
        // serial ~0.5 ms of every epoch).
        let pool = threads::pool();
        let relax = self.spec.relax;
        let (seed, step) = (self.mask_seed, self.optimizer.t);
        let hard_fraction = self.spec.hard_fraction(step);
        let mut scratch = std::mem::take(&mut self.scratch);
        let Scratch {
            relaxed,
            coefs,
            back_coefs,
            grad_final,
            grad: last_grad,
        } = &mut scratch;
        pool.install(|| {
            let gates = self.logits.par_chunks(self.per_gate()).enumerate();
            gates
                .map(|(g, w)| {
                    let noise = relax::GateNoise::new(seed, step, g as u64);
                    let mut r = relax.relax(w, step, || noise.draws());
                    if hard_fraction > 0.0 && relax::runs_hard(seed, step, g as u64, hard_fraction)
                    {
                        r.harden();
                    }
                    r
                })
                .collect_into_vec(relaxed)
        });
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
        let binarize = self.spec.binarizes_step(step);
        self.forward(x, shape, steps, coefs, masks, (binarize, true), None)?;
        let loss = self.loss(y, per_cell, steps, Some(grad_final));
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
            grad_final,
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

    /// Hard loss after `spec.num_steps` steps on the float engine (hard gates), for a
    /// grid or masks that are not binary (see [`hard_bits`] and [`bit_sliced_hard_loss`]
    /// for the usual case).
    pub(super) fn float_hard_loss(
        &mut self,
        x: &[f32],
        y: &[f32],
        per_cell: usize,
        shape: GridShape,
        masks: Option<&[f32]>,
    ) -> Result<f64> {
        let steps = self.spec.num_steps;
        let coefs = self.coefficients(Decoding::Hard);
        let binarize = self.spec.binarize_states;
        self.forward(x, shape, steps, &coefs, masks, (binarize, false), None)?;
        Ok(self.loss(y, per_cell, steps, None))
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

/// Hard loss after `spec.num_steps` steps of `circuit` (the model's hard circuit) on
/// the bit-sliced engine, 64 cells per word, from the bits of [`hard_bits`]. Needs no
/// model, so it can run beside the soft pass.
pub(super) fn bit_sliced_hard_loss(
    spec: &Spec,
    circuit: &Circuit,
    (bits, mask_bits): (&[u8], Option<&[u8]>),
    y: &[f32],
    per_cell: usize,
    shape: GridShape,
) -> Result<f64> {
    let mut opts = SimOptions::new(spec.num_steps, spec.periodic);
    if let Some(m) = mask_bits {
        opts.masks = Masks::Given(m);
    }
    let engine = Some(HardEngine::Slots);
    let mut sim = Simulator::new(circuit, shape, opts.periodic, engine, 0)?;
    sim.load(bits)?;
    sim.advance(&opts)?;
    // Only the loss channels leave the packed state (the lizard's: 1 of 128).
    let channels = &spec.loss_channels;
    let mut out = memory::try_vec(shape.cells() * channels.len(), 0u8, "the grids")?;
    sim.read_channels_into(channels, &mut out);
    let value = |n: usize, i: usize| out[n * channels.len() + i] as f32;
    Ok(squared_error(
        spec,
        y,
        per_cell,
        shape.cells(),
        value,
        |_, _, _| {},
    ))
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
