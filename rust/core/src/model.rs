//! A DiffLogic CA model: spec, wiring, logits, optimizer state, and the public
//! operations (rollout, loss and gradient, training step).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::error::{shape_err, value_err, Result};
use crate::float::{GridShape, Workspace};
use crate::gates::M;
use crate::hard::{self, Circuit, HardEngine, Masks, SimOptions};
use crate::interrupt::Interrupt;
use crate::memory;
use crate::optim::AdamW;
use crate::program::{param_offsets, Program};
use crate::relax::{self, Relaxed};
use crate::spec::Spec;
use crate::threads;
use crate::wiring::{self, Wires};

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

/// Hard or soft decoding of the gates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoding {
    Soft,
    Hard,
}

pub struct Model {
    spec: Spec,
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
    /// The circuit of the last bit-sliced hard loss and each gate's op it was compiled
    /// from: it only changes when some gate's most likely op does, which in training
    /// is rare (none in the first 40 epochs of the checkerboard or the lizard).
    hard_circuit: Option<(Vec<u8>, Circuit)>,
}

impl Model {
    /// A fresh model: wiring drawn from `seed`, every gate a pass-through of input A.
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
            .for_each(|g| spec.relax.init_gate(g));
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
            spec,
            perceive_wires,
            update_wires,
            logits,
            mask_seed,
            mask_draws: 0,
            program,
            workspace: None,
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
        let (p_off, u_off, _) = param_offsets(&self.spec);
        let k = self.spec.perceive.n_kernels;
        let per_gate = self.per_gate();
        let perceive = self.spec.perceive.layers[1..]
            .iter()
            .zip(p_off)
            .enumerate()
            .map(|(i, (&out, at))| ParamInfo {
                name: format!("perceive_logits_{i}"),
                shape: vec![k, out, per_gate],
                offset: at * per_gate,
            });
        let update = self.spec.update.layers[1..]
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

    fn check_grid(
        &self,
        name: &str,
        data: &[f32],
        shape: GridShape,
        channels: usize,
    ) -> Result<()> {
        if shape.batch == 0 || shape.height == 0 || shape.width == 0 {
            return shape_err!("{name}: batch, height and width must be >= 1, got {shape:?}");
        }
        let want = shape.cells() * channels;
        if data.len() != want {
            return shape_err!(
                "{name}: expected {} values (B={} H={} W={} C={channels}), got {}",
                want,
                shape.batch,
                shape.height,
                shape.width,
                data.len()
            );
        }
        check_finite(name, data)
    }

    /// Checks a target grid: all channels, or only the loss channels, per cell.
    fn check_target(&self, y: &[f32], shape: GridShape) -> Result<usize> {
        let (c, n_loss) = (self.spec.channels, self.spec.loss_channels.len());
        let per_cell = if y.len() == shape.cells() * c {
            c
        } else {
            n_loss
        };
        self.check_grid("y", y, shape, per_cell)?;
        check_unit_range("y", y)?;
        Ok(per_cell)
    }

    /// Everything a rollout of `steps` steps from `x` needs, checked before any state
    /// changes (a refused call must not advance the mask stream) and before anything
    /// is allocated. `masks`: whether update masks will be drawn or copied; `record`:
    /// whether every grid is returned.
    fn check_rollout(
        &self,
        x: &[f32],
        shape: GridShape,
        steps: usize,
        masks: bool,
        record: bool,
    ) -> Result<()> {
        let c = self.spec.channels;
        self.check_grid("x", x, shape, c)?;
        check_unit_range("x", x)?;
        if steps == 0 {
            return value_err!("steps must be >= 1, got 0");
        }
        // The masks (B × steps × H × W floats) and recorded grids come on top of the
        // workspace.
        let cells = shape.cells();
        let float_bytes = |n: usize| n.saturating_mul(std::mem::size_of::<f32>());
        let mask_bytes = if masks {
            float_bytes(cells.saturating_mul(steps))
        } else {
            0
        };
        let record_bytes = if record {
            float_bytes(
                cells
                    .saturating_mul(c)
                    .saturating_mul(steps.saturating_add(1)),
            )
        } else {
            0
        };
        Workspace::check_budget(
            &self.program,
            shape,
            steps,
            mask_bytes.saturating_add(record_bytes),
        )
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

    /// Runs `steps` steps from `x` with already resolved masks; the states stay in
    /// the workspace.
    fn forward(
        &mut self,
        x: &[f32],
        shape: GridShape,
        steps: usize,
        coefs: &[[f32; 4]],
        masks: Option<&[f32]>,
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
        let binarize = self.spec.binarize_states;
        ws.forward(
            &self.program,
            coefs,
            steps,
            masks.is_some(),
            binarize,
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
        let ws = self.forward(x, shape, steps, &coefs, masks.as_deref(), interrupt)?;
        let first = if record { 0 } else { steps };
        let len = (steps + 1 - first) * shape.cells() * channels;
        let mut out = memory::try_with_capacity(len, "the rollout's grids")?;
        for t in first..=steps {
            ws.read_grid(t, &mut out);
        }
        Ok(out)
    }

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
        let value = |n: usize, ch: usize| state[ws.layout.addr(n, ch)];
        self.squared_error(y, y_per_cell, cells, value, |n, ch, diff| {
            if let Some(g) = grad.as_deref_mut() {
                g[ws.layout.addr(n, ch)] = 2.0 * diff;
            }
        })
    }

    /// `Σ (out − y)²` over cells and loss channels, `out(n, ch)` giving the final state;
    /// `on_diff(n, ch, out − y)` sees every difference (for the gradient).
    fn squared_error(
        &self,
        y: &[f32],
        y_per_cell: usize,
        cells: usize,
        out: impl Fn(usize, usize) -> f32,
        mut on_diff: impl FnMut(usize, usize, f32),
    ) -> f64 {
        let mut loss = 0f64;
        for n in 0..cells {
            for (i, &ch) in self.spec.loss_channels.iter().enumerate() {
                let col = if y_per_cell == self.spec.channels {
                    ch
                } else {
                    i
                };
                let diff = out(n, ch) - y[n * y_per_cell + col];
                loss += (diff as f64) * (diff as f64);
                on_diff(n, ch, diff);
            }
        }
        loss
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

    fn soft_loss_and_grad(
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
        let relaxed: Vec<Relaxed> = pool.install(|| {
            let gates = self.logits.par_chunks(self.per_gate()).enumerate();
            gates
                .map(|(g, w)| {
                    let noise = relax::GateNoise::new(seed, step, g as u64);
                    relax.relax(w, step, || noise.draws())
                })
                .collect()
        });
        let coefs: Vec<[f32; 4]> = pool.install(|| relaxed.par_iter().map(|r| r.coefs).collect());
        let back_coefs: Vec<[f32; 4]> = if relax.straight_through() {
            pool.install(|| relaxed.par_iter().map(|r| r.back).collect())
        } else {
            Vec::new() // the forward's own
        };
        self.forward(x, shape, steps, &coefs, masks, None)?;
        let mut seed = Vec::new();
        let loss = self.loss(y, per_cell, steps, Some(&mut seed));
        let ws = self.workspace.as_mut().unwrap();
        let back = if back_coefs.is_empty() {
            &coefs
        } else {
            &back_coefs
        };
        let gc = ws.backward(&self.program, &coefs, back, steps, masks.is_some(), &seed)?;
        let mut grad = memory::try_vec(self.logits.len(), 0f32, "the gradient")?;
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
        Ok((loss, grad))
    }

    /// Hard loss after `spec.num_steps` steps. Binary grids and masks (the usual case)
    /// run on the bit-sliced engine, 64 cells per word; anything else on the float path.
    fn hard_loss(
        &mut self,
        x: &[f32],
        y: &[f32],
        per_cell: usize,
        shape: GridShape,
        masks: Option<&[f32]>,
    ) -> Result<f64> {
        let steps = self.spec.num_steps;
        let binary = |v: &[f32]| v.iter().all(|&b| b == 0.0 || b == 1.0);
        if !(binary(x) && masks.is_none_or(binary)) {
            let coefs = self.coefficients(Decoding::Hard);
            self.forward(x, shape, steps, &coefs, masks, None)?;
            return Ok(self.loss(y, per_cell, steps, None));
        }
        self.check_grid("x", x, shape, self.spec.channels)?;
        let bits: Vec<u8> = x.iter().map(|&v| v as u8).collect();
        let mask_bits: Option<Vec<u8>> = masks.map(|m| m.iter().map(|&v| v as u8).collect());
        let mut opts = SimOptions::new(steps, self.spec.periodic);
        if let Some(m) = &mask_bits {
            opts.masks = Masks::Given(m);
        }
        let out = hard::simulate_on(HardEngine::Slots, self.hard_circuit(), &bits, shape, &opts)?;
        let c = self.spec.channels;
        let value = |n: usize, ch: usize| out[n * c + ch] as f32;
        Ok(self.squared_error(y, per_cell, shape.cells(), value, |_, _, _| {}))
    }

    /// The hard circuit of the current logits, compiled afresh (see
    /// [`Model::hard_circuit`] for the cached one).
    pub fn compile_circuit(&self) -> Circuit {
        Circuit::compile(&self.program, &self.hard_ops())
    }

    /// The hard circuit of the current logits (each gate its most likely op), compiled
    /// again only when a gate's most likely op changed (compiling took 0.1–0.3 ms of
    /// every epoch on one thread).
    pub fn hard_circuit(&mut self) -> &Circuit {
        let relax = self.spec.relax;
        let per_gate = self.per_gate();
        let current = self.hard_circuit.as_ref().is_some_and(|(ops, _)| {
            let pairs = (self.logits.par_chunks(per_gate), ops.par_iter());
            pairs
                .into_par_iter()
                .all(|(l, &op)| relax.hard_op(l) as u8 == op)
        });
        if !current {
            let ops = self.hard_ops();
            let circuit = Circuit::compile(&self.program, &ops);
            self.hard_circuit = Some((ops, circuit));
        }
        &self.hard_circuit.as_ref().expect("compiled above").1
    }

    /// One training step: soft loss and gradient, hard loss (same masks), then clip
    /// and AdamW with the spec's learning rate. Returns both losses at the logits
    /// before the update.
    pub fn train_step(
        &mut self,
        x: &[f32],
        y: &[f32],
        shape: GridShape,
        masks: Option<&[f32]>,
    ) -> Result<(f64, f64)> {
        let steps = self.spec.num_steps;
        let per_cell = self.check_target(y, shape)?;
        let drawn = masks.is_some() || self.spec.is_async;
        self.check_rollout(x, shape, steps, drawn, false)?;
        let masks = self.resolve_masks(masks, shape, steps)?;
        // Run on a worker of the pool: its parallel loops (a dozen per epoch, two per
        // step in the hard loss) then start without waking the pool from outside each
        // time, which costs ~10 us per loop on a VM.
        threads::pool().install(|| {
            let hard = self.hard_loss(x, y, per_cell, shape, masks.as_deref())?;
            let (soft, grad) = self.soft_loss_and_grad(x, y, per_cell, shape, masks.as_deref())?;
            let lr = self.spec.lr;
            self.optimizer.step(&mut self.logits, &grad, lr);
            Ok((soft, hard))
        })
    }
}

fn check_wires(name: &str, layers: &[usize], wires: &[Wires]) -> Result<()> {
    if wires.len() != layers.len() - 1 {
        return shape_err!(
            "{name}: expected wires for {} layers, got {}",
            layers.len() - 1,
            wires.len()
        );
    }
    for (i, (w, pair)) in wires.iter().zip(layers.windows(2)).enumerate() {
        w.check(pair[0], pair[1], &format!("{name}_wires_{i}"))?;
    }
    Ok(())
}

fn check_unit_range(name: &str, v: &[f32]) -> Result<()> {
    match v.iter().position(|x| !(0.0..=1.0).contains(x)) {
        Some(i) => value_err!(
            "{name}: values must lie in [0, 1], found {} at flat index {i}",
            v[i]
        ),
        None => Ok(()),
    }
}

fn check_finite(name: &str, v: &[f32]) -> Result<()> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => value_err!(
            "{name}: values must be finite, found {} at flat index {i}",
            v[i]
        ),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;
    use crate::gates::N_OPS;

    fn async_model() -> Model {
        let json = r#"{"channels": 2, "periodic": true, "num_steps": 2, "async": true,
            "fire_rate": 0.5, "loss_channels": [0], "lr": 0.05,
            "perceive": {"n_kernels": 1, "layers": [9, 8, 4],
                         "connections": ["first_kernel", "unique"]},
            "update": {"layers": [10, 6, 4, 2],
                       "connections": ["unique", "unique", "unique"]}}"#;
        Model::new(Spec::from_json(json).unwrap(), 7).unwrap()
    }

    const SHAPE: GridShape = GridShape {
        batch: 1,
        height: 3,
        width: 4,
    };

    #[test]
    fn refused_calls_draw_no_masks() {
        let mut m = async_model();
        let mut x = vec![0.0f32; 24];
        x[5] = f32::NAN;
        let soft = Decoding::Soft;
        assert!(matches!(
            m.rollout(&x, SHAPE, 2, soft, None, false),
            Err(Error::Value(_))
        ));
        x[5] = 2.0;
        assert!(matches!(
            m.rollout(&x, SHAPE, 2, soft, None, false),
            Err(Error::Value(_))
        ));
        x[5] = 1.0;
        assert!(matches!(
            m.rollout(&x, SHAPE, 0, soft, None, false),
            Err(Error::Value(_))
        ));
        let y = vec![3.0f32; 24];
        assert!(matches!(
            m.train_step(&x, &y, SHAPE, None),
            Err(Error::Value(_))
        ));
        assert_eq!(m.mask_draws, 0);
        m.rollout(&x, SHAPE, 2, soft, None, false).unwrap();
        assert_eq!(m.mask_draws, 1);
    }

    /// The hard circuit is cached across steps, but follows the logits: after new ones,
    /// a step's hard loss is that of a fresh model holding them.
    #[test]
    fn the_hard_loss_follows_changed_logits() {
        let json = r#"{"channels": 2, "periodic": true, "num_steps": 2, "async": false,
            "loss_channels": [0, 1], "lr": 0.05,
            "perceive": {"n_kernels": 2, "layers": [9, 8, 4],
                         "connections": ["first_kernel", "unique"]},
            "update": {"layers": [18, 12, 6, 4, 2],
                       "connections": ["unique", "unique", "unique", "unique"]}}"#;
        let spec = Spec::from_json(json).unwrap();
        let mut m = Model::new(spec.clone(), 7).unwrap();
        let x: Vec<f32> = (0..24).map(|i| (i % 3 == 0) as u8 as f32).collect();
        let y: Vec<f32> = (0..24).map(|i| (i % 3 == 1) as u8 as f32).collect();
        let (_, first) = m.train_step(&x, &y, SHAPE, None).unwrap();
        // Every gate constant 1 (op 15): every output 1, a hard loss of 16 zeros of y.
        let logits: Vec<f32> = (0..m.logits().len())
            .map(|i| if i % N_OPS == 15 { 5.0 } else { 0.0 })
            .collect();
        m.set_logits(&logits).unwrap();
        let (perceive, update) = (m.perceive_wires().to_vec(), m.update_wires().to_vec());
        let mut fresh = Model::from_parts(spec, perceive, update, logits, 7).unwrap();
        let (_, want) = fresh.train_step(&x, &y, SHAPE, None).unwrap();
        assert_eq!(want, 16.0);
        assert_ne!(want, first, "the new logits must change the hard loss");
        assert_eq!(m.train_step(&x, &y, SHAPE, None).unwrap().1, want);
    }

    #[test]
    fn absurd_step_counts_are_refused_before_allocating() {
        let mut m = async_model();
        let x = vec![0.0f32; 24];
        for steps in [1usize << 40, usize::MAX / 2, usize::MAX] {
            let r = m.rollout(&x, SHAPE, steps, Decoding::Hard, None, true);
            assert!(matches!(r, Err(Error::Memory(_))), "{steps}: {r:?}");
        }
        assert_eq!(m.mask_draws, 0);
    }
}
