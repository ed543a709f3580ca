//! A DiffLogic CA model: spec, wiring, logits, optimizer state, and the public
//! operations (rollout, loss and gradient, training step). The input checks are in
//! `checks`, the losses in `loss`.

mod checks;
mod drift;
mod loss;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use self::checks::{check_finite, check_wires};
use crate::error::{shape_err, value_err, Result};
use crate::float::program::{param_offsets, Program};
use crate::float::{ForwardOptions, Workspace};
use crate::gates::M;
use crate::grid::GridShape;
use crate::hard::Circuit;
use crate::interrupt::Interrupt;
use crate::memory;
use crate::optim::{self, AdamW};
use crate::spec::Spec;
use crate::threads;
use crate::wiring::{self, Wires};

pub use self::drift::{DriftOutcome, DriftTask};
pub use crate::relax::INIT_PASS_LOGIT;

/// One named array of parameters, as the fixtures name them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    /// `perceive_logits_{i}` or `update_logits_{i}`.
    pub name: String,
    /// `(K, out, P)` or `(out, P)`, P the parameters per gate (16 logits, or 4
    /// truth-table entries).
    pub shape: Vec<usize>,
    /// Start in the flat logits vector.
    pub offset: usize,
}

/// The rollout of a training step and the states its loss reads: `steps` steps, the
/// loss the mean over every state from step `from` to the last. The usual step reads
/// only the last state of `spec.num_steps` steps ([`LossSteps::last`]); a target that
/// must hold once reached is trained with a longer rollout read from the step it is
/// due on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossSteps {
    pub steps: usize,
    pub from: usize,
}

impl LossSteps {
    /// Only the last state of `steps` steps.
    pub fn last(steps: usize) -> LossSteps {
        LossSteps { steps, from: steps }
    }

    /// How many states the loss reads.
    pub fn count(&self) -> usize {
        self.steps + 1 - self.from
    }

    fn check(&self) -> Result<()> {
        if self.from == 0 || self.from > self.steps {
            return value_err!(
                "the loss must read states 1..=steps; got from step {} of {} steps",
                self.from,
                self.steps
            );
        }
        Ok(())
    }
}

/// What a training step returns: the soft and hard losses at the logits before the
/// update, and (when asked for) the hard circuit's last state of the rollout.
#[derive(Debug, Clone)]
pub struct StepOutcome {
    pub soft: f64,
    pub hard: f64,
    pub last_state: Option<Vec<f32>>,
}

/// Hard or soft decoding of the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoding {
    Soft,
    Hard,
}

pub struct Model {
    // Shared with the hard loss, which runs beside the soft pass (`train_step_at`)
    // without a copy per epoch.
    spec: Arc<Spec>,
    perceive_wires: Vec<Wires>,
    update_wires: Vec<Wires>,
    /// Every parameter, perception layers then update layers, `relax.params_per_gate()`
    /// per parameter gate (the 16 logits of the softmax modes).
    logits: Vec<f32>,
    pub optimizer: AdamW,
    /// Async masks drawn when none are given: stream `mask_draws` of `mask_seed`.
    pub mask_seed: u64,
    pub mask_draws: u64,
    program: Program,
    workspace: Option<Workspace>,
    /// A training step's buffers, kept for the next step (`loss::Scratch`).
    scratch: loss::Scratch,
    /// The circuit of the last bit-sliced hard loss and each gate's op it was compiled
    /// from: it only changes when some gate's most likely op does, which in training
    /// is rare (docs/performance.md).
    hard_circuit: Option<(Vec<u8>, Circuit)>,
}

impl Model {
    /// A fresh model: wiring drawn from `seed`, every gate a pass-through of input A
    /// (`Spec::init_logit`).
    /// `seed` also keys the async masks and the Gumbel noise of training.
    pub fn new(spec: Spec, seed: u64) -> Result<Model> {
        spec.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut draw = |layers: &[usize], conns: &[wiring::Wiring]| -> Result<Vec<Wires>> {
            layers
                .windows(2)
                .zip(conns)
                .map(|(w, &c)| wiring::init(c, w[0], w[1], &mut rng))
                .collect()
        };
        let perceive = draw(&spec.perceive.layers, &spec.perceive.connections)?;
        let update = draw(&spec.update.layers, &spec.update.connections)?;
        let (_, _, n_params) = param_offsets(&spec);
        let per_gate = spec.relax.params_per_gate();
        let mut logits = memory::try_vec(n_params * per_gate, 0.0, "the model's logits")?;
        logits
            .chunks_mut(per_gate)
            .for_each(|g| spec.relax.init_gate(g, spec.init_logit));
        Model::from_parts(spec, perceive, update, logits, seed)
    }

    /// A model from stored parts (e.g. a fixture or a checkpoint), validated.
    pub fn from_parts(
        spec: Spec,
        perceive_wires: Vec<Wires>,
        update_wires: Vec<Wires>,
        logits: Vec<f32>,
        mask_seed: u64,
    ) -> Result<Model> {
        spec.validate()?;
        check_wires("perceive", &spec.perceive.layers, &perceive_wires)?;
        check_wires("update", &spec.update.layers, &update_wires)?;
        let (_, _, n_params) = param_offsets(&spec);
        let want = n_params * spec.relax.params_per_gate();
        if logits.len() != want {
            return shape_err!("expected {want} logits in all, got {}", logits.len());
        }
        check_finite("logits", &logits)?;
        let program = Program::compile(&spec, &perceive_wires, &update_wires);
        Ok(Model {
            optimizer: AdamW::try_new(logits.len())?,
            spec: Arc::new(spec),
            perceive_wires,
            update_wires,
            logits,
            mask_seed,
            mask_draws: 0,
            program,
            workspace: None,
            scratch: loss::Scratch::default(),
            hard_circuit: None,
        })
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    pub fn perceive_wires(&self) -> &[Wires] {
        &self.perceive_wires
    }

    pub fn update_wires(&self) -> &[Wires] {
        &self.update_wires
    }

    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// Replaces every logit (same layout as `logits()`).
    pub fn set_logits(&mut self, logits: &[f32]) -> Result<()> {
        if logits.len() != self.logits.len() {
            return shape_err!(
                "expected {} logits, got {}",
                self.logits.len(),
                logits.len()
            );
        }
        check_finite("logits", logits)?;
        self.logits.copy_from_slice(logits);
        Ok(())
    }

    /// Replaces the optimizer state (moments in the logits' layout, step count).
    pub fn set_optimizer(&mut self, m: &[f32], v: &[f32], t: u64) -> Result<()> {
        let n = self.logits.len();
        if m.len() != n || v.len() != n {
            return shape_err!(
                "optimizer moments need {n} values each, got {} and {}",
                m.len(),
                v.len()
            );
        }
        check_finite("optimizer m", m)?;
        check_finite("optimizer v", v)?;
        if v.iter().any(|&x| x < 0.0) {
            return value_err!("optimizer v must be >= 0");
        }
        self.optimizer = AdamW {
            m: m.to_vec(),
            v: v.to_vec(),
            t,
        };
        Ok(())
    }

    /// The named parameter arrays and where they sit in `logits()`.
    pub fn param_info(&self) -> Vec<ParamInfo> {
        param_layout(&self.spec)
    }

    fn per_gate(&self) -> usize {
        self.spec.relax.params_per_gate()
    }

    /// Each parameter gate's op in the hard circuit (its most likely op).
    pub fn hard_ops(&self) -> Vec<u8> {
        let relax = self.spec.relax;
        let pool = threads::pool();
        pool.install(|| {
            self.logits
                .par_chunks(self.per_gate())
                .map(|w| relax.hard_op(w) as u8)
                .collect()
        })
    }

    /// Forward coefficients of every gate: hard, or the relaxation without noise.
    fn coefficients(&self, decoding: Decoding) -> Vec<[f32; 4]> {
        let relax = self.spec.relax;
        self.logits
            .chunks(self.per_gate())
            .map(|w| match decoding {
                Decoding::Soft => relax.soft_coefficients(w),
                Decoding::Hard => M[relax.hard_op(w)],
            })
            .collect()
    }

    /// Masks for a rollout: the ones given (`B × steps × H × W`), draws from the
    /// model's mask stream when the model is asynchronous, else none.
    pub fn resolve_masks(
        &mut self,
        given: Option<&[f32]>,
        shape: GridShape,
        steps: usize,
    ) -> Result<Option<Vec<f32>>> {
        let n = shape.cells().saturating_mul(steps);
        match given {
            Some(m) => {
                if m.len() != n {
                    return shape_err!(
                        "masks: expected B*steps*H*W = {}*{}*{}*{} = {n} values, got {}",
                        shape.batch,
                        steps,
                        shape.height,
                        shape.width,
                        m.len()
                    );
                }
                check_finite("masks", m)?;
                if m.iter().any(|&v| !(0.0..=1.0).contains(&v)) {
                    return value_err!("masks: values must lie in [0, 1]");
                }
                let mut masks = memory::try_with_capacity(n, "the masks")?;
                masks.extend_from_slice(m);
                Ok(Some(masks))
            }
            None => {
                let Some(rate) = self.spec.async_fire_rate() else {
                    return Ok(None);
                };
                let mut masks = memory::try_with_capacity(n, "the masks")?;
                let mut rng = ChaCha8Rng::seed_from_u64(self.mask_seed);
                rng.set_stream(self.mask_draws);
                self.mask_draws += 1;
                masks.extend((0..n).map(|_| if rng.random::<f32>() < rate { 1.0 } else { 0.0 }));
                Ok(Some(masks))
            }
        }
    }

    /// Runs `steps` steps from `x` with already resolved masks (see `ForwardOptions`);
    /// the states stay in the workspace.
    #[allow(clippy::too_many_arguments)]
    fn forward(
        &mut self,
        x: &[f32],
        shape: GridShape,
        steps: usize,
        coefs: &[[f32; 4]],
        masks: Option<&[f32]>,
        options: ForwardOptions,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<&mut Workspace> {
        self.check_grid("x", x, shape, self.spec.channels)?;
        if !self
            .workspace
            .as_ref()
            .is_some_and(|ws| ws.fits(shape, steps))
        {
            self.workspace = None; // free the old buffers before allocating new ones
            self.workspace = Some(Workspace::new(
                &self.program,
                shape,
                steps,
                self.spec.periodic,
            )?);
        }
        let ws = self.workspace.as_mut().unwrap();
        ws.load_grid(x);
        if let Some(m) = masks {
            // B × steps × H × W  ->  steps × cells
            let hw = shape.height * shape.width;
            let n_pad = ws.layout.n_pad();
            memory::try_resize(&mut ws.masks, steps * n_pad, 0.0, "the masks")?;
            for b in 0..shape.batch {
                for t in 0..steps {
                    ws.masks[t * n_pad + b * hw..][..hw]
                        .copy_from_slice(&m[(b * steps + t) * hw..][..hw]);
                }
            }
        }
        ws.forward(
            &self.program,
            coefs,
            steps,
            masks.is_some(),
            options,
            interrupt,
        )?;
        Ok(ws)
    }

    /// Rolls `x` (`B × H × W × C`) forward `steps` steps. Returns the final grid, or
    /// with `record` every grid from `x` on (`(steps + 1) × B × H × W × C`).
    pub fn rollout(
        &mut self,
        x: &[f32],
        shape: GridShape,
        steps: usize,
        decoding: Decoding,
        masks: Option<&[f32]>,
        record: bool,
    ) -> Result<Vec<f32>> {
        self.rollout_interruptible(x, shape, steps, decoding, masks, record, None)
    }

    /// [`Model::rollout`], asking `interrupt` between chunks of steps whether to stop
    /// (then `Error::Interrupted`; the model's mask stream has still advanced).
    #[allow(clippy::too_many_arguments)]
    pub fn rollout_interruptible(
        &mut self,
        x: &[f32],
        shape: GridShape,
        steps: usize,
        decoding: Decoding,
        masks: Option<&[f32]>,
        record: bool,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<Vec<f32>> {
        let drawn = masks.is_some() || self.spec.is_async;
        self.check_rollout(x, shape, steps, drawn, record)?;
        let masks = self.resolve_masks(masks, shape, steps)?;
        let coefs = self.coefficients(decoding);
        let channels = self.spec.channels;
        let options = ForwardOptions {
            binarize: self.spec.binarize_states,
            for_backward: false,
        };
        let ws = self.forward(
            x,
            shape,
            steps,
            &coefs,
            masks.as_deref(),
            options,
            interrupt,
        )?;
        let first = if record { 0 } else { steps };
        let len = (steps + 1 - first) * shape.cells() * channels;
        let mut out = memory::try_with_capacity(len, "the rollout's grids")?;
        for t in first..=steps {
            ws.read_grid(t, &mut out);
        }
        Ok(out)
    }

    /// The hard circuit of the current logits, compiled afresh (see
    /// [`Model::hard_circuit`] for the cached one).
    pub fn compile_circuit(&self) -> Circuit {
        Circuit::compile(&self.program, &self.hard_ops())
    }

    /// The hard circuit of the current logits (each gate its most likely op), compiled
    /// again only when a gate's most likely op changed (a compile in every epoch was a
    /// visible share of it: docs/performance.md).
    pub fn hard_circuit(&mut self) -> &Circuit {
        let relax = self.spec.relax;
        let per_gate = self.per_gate();
        // On the package's pool: rayon's global one may not start (RAYON_NUM_THREADS).
        let current = self.hard_circuit.as_ref().is_some_and(|(ops, _)| {
            threads::pool().install(|| {
                let pairs = (self.logits.par_chunks(per_gate), ops.par_iter());
                pairs
                    .into_par_iter()
                    .all(|(l, &op)| relax.hard_op(l) as u8 == op)
            })
        });
        if !current {
            let ops = self.hard_ops();
            let circuit = Circuit::compile(&self.program, &ops);
            self.hard_circuit = Some((ops, circuit));
        }
        &self.hard_circuit.as_ref().expect("compiled above").1
    }

    /// One training step: soft loss and gradient, hard loss (same masks), then clip
    /// and AdamW with learning rate `lr` and decoupled weight decay `weight_decay` (the
    /// training's, not the architecture's). Returns both losses at the logits before
    /// the update.
    pub fn train_step(
        &mut self,
        x: &[f32],
        y: &[f32],
        shape: GridShape,
        masks: Option<&[f32]>,
        lr: f32,
        weight_decay: f32,
    ) -> Result<(f64, f64)> {
        let at = LossSteps::last(self.spec.num_steps);
        let settings = optim::StepSettings::new(lr, weight_decay);
        let out = self.train_step_at(x, y, shape, masks, settings, at, false)?;
        Ok((out.soft, out.hard))
    }

    /// [`Model::train_step`] on the rollout and loss states `at` (`masks`, when given,
    /// cover its `at.steps` steps); with `keep_last`, the outcome also holds the hard
    /// circuit's last state (what a sample pool keeps).
    #[allow(clippy::too_many_arguments)]
    pub fn train_step_at(
        &mut self,
        x: &[f32],
        y: &[f32],
        shape: GridShape,
        masks: Option<&[f32]>,
        settings: optim::StepSettings,
        at: LossSteps,
        keep_last: bool,
    ) -> Result<StepOutcome> {
        settings.check()?;
        at.check()?;
        let per_cell = self.check_target(y, shape)?;
        let drawn = masks.is_some() || self.spec.is_async;
        self.check_rollout(x, shape, at.steps, drawn, false)?;
        let masks = self.resolve_masks(masks, shape, at.steps)?;
        // Run on a worker of the pool: its parallel loops (a dozen per epoch, two per
        // step in the hard loss) then start without waking the pool from outside each
        // time, which is slow on a VM.
        let masks = masks.as_deref();
        // The bit-sliced hard loss takes given masks for one loss state only.
        let bits = loss::hard_bits(x, masks).filter(|(_, m)| m.is_none() || at.count() == 1);
        threads::pool().install(|| {
            let (hard, soft) = match bits {
                Some((bits, mask_bits)) => {
                    self.hard_circuit();
                    let (ops, circuit) = self.hard_circuit.take().expect("compiled above");
                    let spec = Arc::clone(&self.spec);
                    let bits = (&bits[..], mask_bits.as_deref());
                    let hard = || {
                        let (spec, circuit) = (&spec, &circuit);
                        loss::bit_sliced_hard_loss(
                            spec, circuit, bits, y, per_cell, shape, at, keep_last,
                        )
                    };
                    let soft = || self.soft_loss_and_grad(x, y, per_cell, shape, masks, at);
                    // Side by side: on 2 or more threads the soft pass starts on the
                    // others instead of waiting for the hard loss, and its wavefront
                    // takes this thread too once the hard loss is done. The same
                    // values either way; the float path's hard loss shares the
                    // workspace, so it runs first.
                    let both = rayon::join(hard, soft);
                    self.hard_circuit = Some((ops, circuit));
                    both
                }
                None => {
                    let hard = self.float_hard_loss(x, y, per_cell, shape, masks, at, keep_last)?;
                    let soft = self.soft_loss_and_grad(x, y, per_cell, shape, masks, at);
                    (Ok(hard), soft)
                }
            };
            let ((hard, last_state), (soft, grad)) = (hard?, soft?);
            self.optimizer.step(&mut self.logits, &grad, settings);
            self.scratch.grad = grad;
            Ok(StepOutcome {
                soft,
                hard,
                last_state,
            })
        })
    }
}

/// The named parameter arrays of a model of `spec` and where they sit in its flat
/// logits, without building the model (`spec` as validated: `Spec::from_json`).
pub fn param_layout(spec: &Spec) -> Vec<ParamInfo> {
    let (p_off, u_off, _) = param_offsets(spec);
    let k = spec.perceive.n_kernels;
    let per_gate = spec.relax.params_per_gate();
    let perceive =
        spec.perceive.layers[1..]
            .iter()
            .zip(p_off)
            .enumerate()
            .map(|(i, (&out, at))| ParamInfo {
                name: format!("perceive_logits_{i}"),
                shape: vec![k, out, per_gate],
                offset: at * per_gate,
            });
    let update = spec.update.layers[1..]
        .iter()
        .zip(u_off)
        .enumerate()
        .map(|(i, (&out, at))| ParamInfo {
            name: format!("update_logits_{i}"),
            shape: vec![out, per_gate],
            offset: at * per_gate,
        });
    perceive.chain(update).collect()
}
