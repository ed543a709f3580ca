//! `Engine`: a model in the engine (spec, wiring, logits, AdamW state, buffers).

use logicars_core::{self as core, hard, memory};
use logicars_core::{Decoding, DriftTask, GridShape, Model, Spec};
use numpy::{
    PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArray1, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;

use crate::circuit::HardCircuit;
use crate::convert::{grid_of, grid_shape, param_tuples, slice, wires_from, wires_to, Binary};
use crate::errors::{to_py, ShapeError};
use crate::signals::detach_interruptible;

/// `Engine.train_step_at`'s result: the losses, and the last state when asked for.
type StepResult<'py> = (f64, f64, Option<Bound<'py, PyArrayDyn<f32>>>);

/// `Engine.drift_search`'s result.
type DriftResult = (u64, u64, u64, Vec<(usize, u8, u8)>);

/// A model in the engine: spec, wiring, logits, AdamW state and a buffer pool.
#[pyclass(module = "logicars._core")]
pub struct Engine {
    model: Model,
    /// The hard circuit of the current logits, built on first use and dropped whenever
    /// the logits change, so that repeated `simulate` calls neither rebuild nor recompile
    /// it.
    hard: Option<Py<HardCircuit>>,
}

#[pymethods]
impl Engine {
    /// A fresh model from a config JSON: wiring drawn from `seed`, pass-through logits.
    #[staticmethod]
    fn create(config_json: &str, seed: u64) -> PyResult<Engine> {
        let spec = Spec::from_json(config_json).map_err(to_py)?;
        Ok(Engine {
            model: Model::new(spec, seed).map_err(to_py)?,
            hard: None,
        })
    }

    /// A model from stored parts: wires per layer `(2, out)` int32, flat logits.
    #[staticmethod]
    fn from_parts(
        config_json: &str,
        perceive_wires: Vec<PyReadonlyArrayDyn<'_, i32>>,
        update_wires: Vec<PyReadonlyArrayDyn<'_, i32>>,
        logits: PyReadonlyArray1<'_, f32>,
        mask_seed: u64,
    ) -> PyResult<Engine> {
        let spec = Spec::from_json(config_json).map_err(to_py)?;
        let pw = wires_from("perceive", perceive_wires)?;
        let uw = wires_from("update", update_wires)?;
        let src = logits
            .as_slice()
            .map_err(|_| ShapeError::new_err("logits must be contiguous"))?;
        let mut logits =
            memory::try_with_capacity(src.len(), "the model's logits").map_err(to_py)?;
        logits.extend_from_slice(src);
        Ok(Engine {
            model: Model::from_parts(spec, pw, uw, logits, mask_seed).map_err(to_py)?,
            hard: None,
        })
    }

    /// The config as JSON (fixture format).
    fn config_json(&self) -> String {
        self.model.spec().to_json()
    }

    /// `(perceive_wires, update_wires)`, each a list of `(2, out)` int32 arrays.
    #[allow(clippy::type_complexity)]
    fn wires<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Vec<Bound<'py, PyArrayDyn<i32>>>,
        Vec<Bound<'py, PyArrayDyn<i32>>>,
    )> {
        Ok((
            wires_to(py, self.model.perceive_wires())?,
            wires_to(py, self.model.update_wires())?,
        ))
    }

    /// `[(name, shape, offset)]` of the parameter arrays inside the flat logits.
    fn param_info(&self) -> Vec<(String, Vec<usize>, usize)> {
        param_tuples(self.model.param_info())
    }

    /// A copy of every logit, flat.
    fn logits<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, self.model.logits())
    }

    fn set_logits(&mut self, logits: PyReadonlyArray1<'_, f32>) -> PyResult<()> {
        let v = logits
            .as_slice()
            .map_err(|_| ShapeError::new_err("logits must be contiguous"))?;
        self.hard = None;
        self.model.set_logits(v).map_err(to_py)
    }

    /// `(m, v, t)`: AdamW moments (flat, like the logits) and steps taken.
    fn optimizer_state<'py>(
        &self,
        py: Python<'py>,
    ) -> (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<f32>>, u64) {
        let o = &self.model.optimizer;
        (
            PyArray1::from_slice(py, &o.m),
            PyArray1::from_slice(py, &o.v),
            o.t,
        )
    }

    fn set_optimizer_state(
        &mut self,
        m: PyReadonlyArray1<'_, f32>,
        v: PyReadonlyArray1<'_, f32>,
        t: u64,
    ) -> PyResult<()> {
        let m = m
            .as_slice()
            .map_err(|_| ShapeError::new_err("m must be contiguous"))?;
        let v = v
            .as_slice()
            .map_err(|_| ShapeError::new_err("v must be contiguous"))?;
        self.model.set_optimizer(m, v, t).map_err(to_py)
    }

    /// `(mask_seed, mask_draws)`: where the async mask stream stands.
    fn mask_state(&self) -> (u64, u64) {
        (self.model.mask_seed, self.model.mask_draws)
    }

    fn set_mask_state(&mut self, seed: u64, draws: u64) {
        self.model.mask_seed = seed;
        self.model.mask_draws = draws;
    }

    /// Rolls `x` forward; returns the final grid, or every grid with `record`.
    #[pyo3(signature = (x, steps, hard, masks=None, record=false))]
    fn rollout<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, f32>,
        steps: usize,
        hard: bool,
        masks: Option<PyReadonlyArrayDyn<'py, f32>>,
        record: bool,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let c = self.model.spec().channels;
        let shape = grid_shape("x", &x, Some(&[c]))?;
        let xs = slice("x", &x)?;
        let ms = masks.as_ref().map(|m| slice("masks", m)).transpose()?;
        let decoding = if hard { Decoding::Hard } else { Decoding::Soft };
        let model = &mut self.model;
        let out = detach_interruptible(py, |interrupt| {
            model.rollout_interruptible(xs, shape, steps, decoding, ms, record, Some(interrupt))
        })?;
        let mut dims = vec![shape.batch, shape.height, shape.width, c];
        if record {
            dims.insert(0, steps + 1);
        }
        PyArray1::from_vec(py, out).reshape(dims)
    }

    /// `(soft_loss, grad)`: the gradient flat, like the logits.
    #[pyo3(signature = (x, y, masks=None))]
    fn loss_and_grad<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, f32>,
        y: PyReadonlyArrayDyn<'py, f32>,
        masks: Option<PyReadonlyArrayDyn<'py, f32>>,
    ) -> PyResult<(f64, Bound<'py, PyArray1<f32>>)> {
        let (shape, xs, ys) = self.inputs(&x, &y)?;
        let ms = masks.as_ref().map(|m| slice("masks", m)).transpose()?;
        let model = &mut self.model;
        let (loss, grad) = py
            .detach(|| model.loss_and_grad(xs, ys, shape, ms))
            .map_err(to_py)?;
        Ok((loss, PyArray1::from_vec(py, grad)))
    }

    /// One clip + AdamW step with learning rate `lr`, decoupled weight decay
    /// `weight_decay` and first-moment decay `beta1`; returns `(soft_loss, hard_loss)`
    /// before the update.
    // beta1's default is `core::optim::BETA1`, written as a literal so that the text
    // signature shows it (`tests/test_engine.py` checks that they agree).
    #[pyo3(signature = (x, y, masks=None, *, lr, weight_decay, beta1=0.9))]
    #[allow(clippy::too_many_arguments)]
    fn train_step<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, f32>,
        y: PyReadonlyArrayDyn<'py, f32>,
        masks: Option<PyReadonlyArrayDyn<'py, f32>>,
        lr: f64,
        weight_decay: f64,
        beta1: f64,
    ) -> PyResult<(f64, f64)> {
        let steps = self.model.spec().num_steps;
        let (soft, hard, _) = self.train_step_at(
            py,
            x,
            y,
            masks,
            lr,
            weight_decay,
            beta1,
            steps,
            steps,
            false,
        )?;
        Ok((soft, hard))
    }

    /// `train_step` on a rollout of `steps` steps whose loss is the mean over the states
    /// of steps `loss_from..=steps`; returns `(soft_loss, hard_loss, last)`, `last` the
    /// hard circuit's last state `(B, H, W, C)` with `keep_last`, else None.
    #[pyo3(signature = (
        x, y, masks=None, *, lr, weight_decay, beta1=0.9, steps, loss_from,
        keep_last=false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn train_step_at<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, f32>,
        y: PyReadonlyArrayDyn<'py, f32>,
        masks: Option<PyReadonlyArrayDyn<'py, f32>>,
        lr: f64,
        weight_decay: f64,
        beta1: f64,
        steps: usize,
        loss_from: usize,
        keep_last: bool,
    ) -> PyResult<StepResult<'py>> {
        // Checked as given: 1e300 is refused as 1e300, not as its float32 infinity.
        core::optim::check_lr(lr).map_err(to_py)?;
        core::optim::check_weight_decay(weight_decay).map_err(to_py)?;
        core::optim::check_beta1(beta1).map_err(to_py)?;
        let (shape, xs, ys) = self.inputs(&x, &y)?;
        let ms = masks.as_ref().map(|m| slice("masks", m)).transpose()?;
        self.hard = None;
        let model = &mut self.model;
        let at = core::LossSteps {
            steps,
            from: loss_from,
        };
        let optimizer = core::optim::StepSettings {
            lr: lr as f32,
            weight_decay: weight_decay as f32,
            beta1: beta1 as f32,
        };
        let out = py
            .detach(|| model.train_step_at(xs, ys, shape, ms, optimizer, at, keep_last))
            .map_err(to_py)?;
        let c = self.model.spec().channels;
        let dims = [shape.batch, shape.height, shape.width, c];
        let last = (out.last_state)
            .map(|v| PyArray1::from_vec(py, v).reshape(dims.to_vec()))
            .transpose()?;
        Ok((out.soft, out.hard, last))
    }

    /// Refuses (`MemoryLimitError`) training on `batch` grids of `height` x `width`
    /// over rollouts of `steps` steps (None: the spec's) whose buffers would pass the
    /// memory cap: `train` checks it before a run starts.
    #[pyo3(signature = (batch, height, width, steps=None))]
    fn check_training_memory(
        &self,
        batch: usize,
        height: usize,
        width: usize,
        steps: Option<usize>,
    ) -> PyResult<()> {
        let spec = self.model.spec();
        let shape = GridShape {
            batch,
            height,
            width,
        };
        let steps = steps.unwrap_or(spec.num_steps);
        self.model
            .check_rollout_memory(shape, steps, spec.is_async, false)
            .map_err(to_py)
    }

    /// Each parameter gate's op in the hard circuit (its most likely op), in
    /// `param_info` order.
    fn hard_ops<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        PyArray1::from_vec(py, self.model.hard_ops())
    }

    /// Neutral-drift search over the hard circuit's ops for fewer wrong cells on
    /// `loss_channels` of the grids `x` run `steps` steps (async with `fire_rate`, masks
    /// from `seed`), each grid against its closest option in `targets` `(O, B, H, W, L)`,
    /// the flips from `search_seed` from position `offset` on, scored at every step from
    /// `score_from` (default: the last) on: `(wrong_before, wrong_after, evaluations,
    /// [(gate, old op, new op), ...])`. The logits are not changed.
    #[pyo3(signature = (x, targets, loss_channels, steps, periodic, fire_rate, seed, budget, search_seed, offset, score_from=None))]
    #[allow(clippy::too_many_arguments)]
    fn drift_search<'py>(
        &mut self,
        py: Python<'py>,
        x: Binary<'py>,
        targets: Binary<'py>,
        loss_channels: Vec<usize>,
        steps: usize,
        periodic: bool,
        fire_rate: Option<f64>,
        seed: u64,
        budget: u64,
        search_seed: u64,
        offset: u64,
        score_from: Option<usize>,
    ) -> PyResult<DriftResult> {
        let shape = grid_of("x", &x.shape(), self.model.spec().channels)?;
        let (x, targets) = (x.bits("x")?, targets.bits("targets")?);
        let mut opts = hard::SimOptions::new(steps, periodic);
        if let Some(fire_rate) = fire_rate {
            opts.masks = hard::Masks::Random { fire_rate, seed };
        }
        let model = &mut self.model;
        let out = detach_interruptible(py, |interrupt| {
            let task = DriftTask {
                x: &x,
                shape,
                targets: &targets,
                loss_channels: &loss_channels,
                opts,
                score_from: score_from.unwrap_or(steps),
            };
            model.drift_search(&task, budget, search_seed, offset, Some(interrupt))
        })?;
        Ok((
            out.wrong_before,
            out.wrong_after,
            out.evaluations,
            out.changes,
        ))
    }

    /// The hard circuit of the current logits, compiled for the bit-sliced engine.
    fn hard_circuit(&mut self, py: Python<'_>) -> PyResult<Py<HardCircuit>> {
        if let Some(hard) = &self.hard {
            return Ok(hard.clone_ref(py));
        }
        let hard = Py::new(
            py,
            HardCircuit {
                compiled: hard::CompiledCircuit::new(self.model.hard_circuit().clone()),
                periodic: self.model.spec().periodic,
            },
        )?;
        self.hard = Some(hard.clone_ref(py));
        Ok(hard)
    }
}

impl Engine {
    fn inputs<'a>(
        &self,
        x: &'a PyReadonlyArrayDyn<'_, f32>,
        y: &'a PyReadonlyArrayDyn<'_, f32>,
    ) -> PyResult<(GridShape, &'a [f32], &'a [f32])> {
        let spec = self.model.spec();
        let shape = grid_shape("x", x, Some(&[spec.channels]))?;
        let y_shape = grid_shape("y", y, Some(&[spec.channels, spec.loss_channels.len()]))?;
        if y_shape != shape {
            return Err(ShapeError::new_err(format!(
                "y: expected the batch and grid of x {:?}, got {:?}",
                x.shape(),
                y.shape()
            )));
        }
        Ok((shape, slice("x", x)?, slice("y", y)?))
    }
}
