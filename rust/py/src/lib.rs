//! Python bindings of logicars-core: the `logicars._core` extension.
//!
//! Arrays cross as numpy float32/int32 without copies on the way in; the GIL is
//! released while Rust works; engine errors become `logicars.errors` exceptions.

use logicars_core::hard::{self, HardEngine, Interrupt, Masks, NetOutput, Netlist, SimOptions};
use logicars_core::{self as core, Decoding, GridShape, Model, Spec, Wires};
use numpy::{
    PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArray1, PyReadonlyArrayDyn,
    PyUntypedArrayMethods,
};
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyMemoryError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    _core,
    InvalidValueError,
    PyValueError,
    "A value is out of range or inconsistent with the model."
);
create_exception!(
    _core,
    ShapeError,
    PyValueError,
    "An array has the wrong rank, shape or size."
);
create_exception!(
    _core,
    MemoryLimitError,
    PyMemoryError,
    "The work would need more memory than allowed."
);

fn to_py(e: core::Error) -> PyErr {
    match e {
        core::Error::Value(m) => InvalidValueError::new_err(m),
        core::Error::Shape(m) => ShapeError::new_err(m),
        core::Error::Memory(m) => MemoryLimitError::new_err(m),
        core::Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
    }
}

fn slice<'a, T: numpy::Element>(name: &str, a: &'a PyReadonlyArrayDyn<'_, T>) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| ShapeError::new_err(format!("{name}: array must be C-contiguous")))
}

/// `(B, H, W)` of a 4-d grid `(B, H, W, C)` with `C == channels`.
fn grid_shape(
    name: &str,
    a: &PyReadonlyArrayDyn<'_, f32>,
    channels: Option<&[usize]>,
) -> PyResult<GridShape> {
    let s = a.shape();
    if s.len() != 4 {
        return Err(ShapeError::new_err(format!(
            "{name}: expected a 4-d array (B, H, W, C), got shape {s:?}"
        )));
    }
    if let Some(allowed) = channels {
        if !allowed.contains(&s[3]) {
            return Err(ShapeError::new_err(format!(
                "{name}: expected {} channels in the last axis, got shape {s:?}",
                allowed
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )));
        }
    }
    Ok(GridShape {
        batch: s[0],
        height: s[1],
        width: s[2],
    })
}

fn wires_from(name: &str, arrays: Vec<PyReadonlyArrayDyn<'_, i32>>) -> PyResult<Vec<Wires>> {
    arrays
        .iter()
        .enumerate()
        .map(|(i, a)| {
            let s = a.shape();
            if s.len() != 2 || s[0] != 2 {
                return Err(ShapeError::new_err(format!(
                    "{name}_wires_{i}: expected shape (2, out), got {s:?}"
                )));
            }
            let v = slice(&format!("{name}_wires_{i}"), a)?;
            if let Some(&bad) = v.iter().find(|&&x| x < 0) {
                return Err(InvalidValueError::new_err(format!(
                    "{name}_wires_{i}: wires must be >= 0, got {bad}"
                )));
            }
            let (ra, rb) = v.split_at(s[1]);
            Ok(Wires {
                a: ra.iter().map(|&x| x as u32).collect(),
                b: rb.iter().map(|&x| x as u32).collect(),
            })
        })
        .collect()
}

fn wires_to<'py>(py: Python<'py>, wires: &[Wires]) -> PyResult<Vec<Bound<'py, PyArrayDyn<i32>>>> {
    wires
        .iter()
        .map(|w| {
            let flat: Vec<i32> = w.a.iter().chain(&w.b).map(|&x| x as i32).collect();
            PyArray1::from_vec(py, flat).reshape(vec![2, w.len()])
        })
        .collect()
}

/// A model in the engine: spec, wiring, logits, AdamW state and a buffer pool.
#[pyclass(module = "logicars._core")]
struct Engine {
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
        let logits = logits
            .as_slice()
            .map_err(|_| ShapeError::new_err("logits must be contiguous"))?
            .to_vec();
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
        self.model
            .param_info()
            .into_iter()
            .map(|p| (p.name, p.shape, p.offset))
            .collect()
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
        let out = py
            .detach(|| model.rollout(xs, shape, steps, decoding, ms, record))
            .map_err(to_py)?;
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

    /// One clip + AdamW step; returns `(soft_loss, hard_loss)` before the update.
    #[pyo3(signature = (x, y, masks=None))]
    fn train_step<'py>(
        &mut self,
        py: Python<'py>,
        x: PyReadonlyArrayDyn<'py, f32>,
        y: PyReadonlyArrayDyn<'py, f32>,
        masks: Option<PyReadonlyArrayDyn<'py, f32>>,
    ) -> PyResult<(f64, f64)> {
        let (shape, xs, ys) = self.inputs(&x, &y)?;
        let ms = masks.as_ref().map(|m| slice("masks", m)).transpose()?;
        self.hard = None;
        let model = &mut self.model;
        py.detach(|| model.train_step(xs, ys, shape, ms))
            .map_err(to_py)
    }

    /// Each parameter gate's op in the hard circuit (its most likely op), in
    /// `param_info` order.
    fn hard_ops<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u8>> {
        PyArray1::from_vec(py, self.model.hard_ops())
    }

    /// The hard circuit of the current logits, compiled for the bit-sliced engine.
    fn hard_circuit(&mut self, py: Python<'_>) -> PyResult<Py<HardCircuit>> {
        if let Some(hard) = &self.hard {
            return Ok(hard.clone_ref(py));
        }
        let hard = Py::new(
            py,
            HardCircuit {
                compiled: hard::CompiledCircuit::new(self.model.compile_circuit()),
                periodic: self.model.spec().periodic,
            },
        )?;
        self.hard = Some(hard.clone_ref(py));
        Ok(hard)
    }

    /// Gate counts of the hard circuit (see `HardCircuit.stats`).
    fn hard_circuit_stats(&mut self, py: Python<'_>) -> PyResult<Vec<(&'static str, usize)>> {
        Ok(self.hard_circuit(py)?.get().stats())
    }
}

/// A hard circuit compiled for the bit-sliced engine: a snapshot of a model's hard
/// gates (later changes to the model's logits do not reach it).
#[pyclass(module = "logicars._core", frozen)]
struct HardCircuit {
    compiled: hard::CompiledCircuit,
    /// The model's boundary, the default of `simulate`.
    periodic: bool,
}

#[pymethods]
impl HardCircuit {
    /// Runs the circuit; returns uint8 grids.
    ///
    /// `x`: `(B, H, W, C)` of 0/1 (uint8, bool or float32). Update masks: `masks`
    /// `(B, steps, H, W)` of 0/1, or `fire_rate` in (0, 1] with `seed`, or neither
    /// (synchronous). `damage` `(H, W)` or `(B, H, W)` of 0/1: those cells are set to
    /// 0 after every step `t` (0-based) with `damage_from <= t < damage_until`
    /// (default: to the end). `record_every` 0 returns the final grid `(B, H, W, C)`,
    /// `k` the grids after steps 0, k, 2k, … and the last, `(frames, B, H, W, C)`.
    /// `periodic` overrides the model's boundary. `words`: 64-bit words per block
    /// (0 = automatic).
    #[pyo3(signature = (
        x, steps, fire_rate=None, seed=0, masks=None, damage=None, damage_from=0,
        damage_until=None, record_every=0, periodic=None, words=0
    ))]
    #[allow(clippy::too_many_arguments)]
    fn simulate<'py>(
        &self,
        py: Python<'py>,
        x: &Bound<'py, PyAny>,
        steps: usize,
        fire_rate: Option<f64>,
        seed: u64,
        masks: Option<&Bound<'py, PyAny>>,
        damage: Option<&Bound<'py, PyAny>>,
        damage_from: usize,
        damage_until: Option<usize>,
        record_every: usize,
        periodic: Option<bool>,
        words: usize,
    ) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
        let c = self.compiled.circuit().channels();
        let x = Binary::extract("x", x)?;
        let shape = grid_of("x", &x.shape(), c)?;
        let run = RunArgs {
            steps,
            fire_rate,
            seed,
            masks,
            damage,
            damage_from,
            damage_until,
            record_every,
        };
        let circuit = &self.compiled;
        let periodic = periodic.unwrap_or(self.periodic);
        let x = x.data()?;
        let out = run.call(py, shape, c, true, |opts, out| {
            let mut opts = opts.clone();
            opts.periodic = periodic;
            opts.words = words;
            let out = out.expect("an output array");
            hard::simulate_into(None, circuit, x, shape, &opts, out)
        })?;
        Ok(out.expect("an output array"))
    }

    /// Gate counts: `program_gates` (live gates of the float program, perception
    /// counted per channel), `folded_gates` (left after folding constants, pass-throughs
    /// and NOTs), `merged_gates` (after also merging duplicates), `active_gates` (after
    /// also dropping dead gates), per kernel (`and`, `and_not`,
    /// `or`, `xor`), arena `slots`, `patch_inputs`, `depth`.
    fn stats(&self) -> Vec<(&'static str, usize)> {
        let s = self.compiled.circuit().stats();
        let mut v = vec![
            ("program_gates", s.program_gates),
            ("folded_gates", s.folded_gates),
            ("merged_gates", s.merged_gates),
            ("active_gates", s.active_gates),
            ("slots", s.slots),
            ("patch_inputs", s.patch_inputs),
            ("depth", s.depth),
        ];
        for (k, n) in hard::Kind::ALL.iter().zip(s.by_kind) {
            v.push((k.name(), n));
        }
        v
    }

    fn channels(&self) -> usize {
        self.compiled.circuit().channels()
    }

    /// The circuit as a netlist `(inputs, gates, outputs)`: inputs `(channel, dr, dc)`
    /// are nodes `0..len(inputs)`, gate `g` `(kind, a, b)` on nodes `a`, `b` is node
    /// `len(inputs) + g`; output `c` is `(node, negated)` or `(None, value)`.
    #[allow(clippy::type_complexity)]
    fn netlist(
        &self,
    ) -> (
        Vec<(usize, i8, i8)>,
        Vec<(&'static str, u32, u32)>,
        Vec<(Option<u32>, bool)>,
    ) {
        let net = Netlist::from_circuit(self.compiled.circuit());
        let inputs = net.inputs.iter().map(|i| (i.channel, i.dr, i.dc)).collect();
        let gates = net
            .gates
            .iter()
            .map(|g| (g.kind.name(), g.a, g.b))
            .collect();
        let outputs = net
            .outputs
            .iter()
            .map(|o| match *o {
                NetOutput::Const(v) => (None, v),
                NetOutput::Node { node, negated } => (Some(node), negated),
            })
            .collect();
        (inputs, gates, outputs)
    }

    /// The circuit as source text: `format` is `c` (one cell and a whole-grid step
    /// with the model's boundary, or `periodic`), `verilog`, `digitaljs` or `dot`.
    #[pyo3(signature = (format, periodic=None))]
    fn export(&self, format: &str, periodic: Option<bool>) -> PyResult<String> {
        let net = Netlist::from_circuit(self.compiled.circuit());
        Ok(match format {
            "c" => net.to_c(periodic.unwrap_or(self.periodic)),
            "verilog" => net.to_verilog(),
            "digitaljs" => net.to_digitaljs(),
            "dot" => net.to_dot(),
            _ => {
                return Err(InvalidValueError::new_err(format!(
                    "unknown export format {format:?}; expected one of {}",
                    EXPORT_FORMATS.join(", ")
                )))
            }
        })
    }

    /// Whether the circuit's model has a periodic boundary.
    #[getter]
    fn periodic(&self) -> bool {
        self.periodic
    }
}

/// `(B, H, W)` of a `(B, H, W, C)` grid with `C == channels`.
fn grid_of(name: &str, dims: &[usize], channels: usize) -> PyResult<GridShape> {
    if dims.len() != 4 || dims[3] != channels {
        return Err(ShapeError::new_err(format!(
            "{name}: expected a 4-d array (B, H, W, C={channels}), got shape {dims:?}"
        )));
    }
    Ok(GridShape {
        batch: dims[0],
        height: dims[1],
        width: dims[2],
    })
}

/// The arguments of a run (`HardCircuit.simulate`, `Simulator.run`) before they are
/// checked against the grid.
struct RunArgs<'a, 'py> {
    steps: usize,
    fire_rate: Option<f64>,
    seed: u64,
    masks: Option<&'a Bound<'py, PyAny>>,
    damage: Option<&'a Bound<'py, PyAny>>,
    damage_from: usize,
    damage_until: Option<usize>,
    record_every: usize,
}

impl<'py> RunArgs<'_, 'py> {
    /// Checks the arguments against `shape`, then calls `run` with the options and an
    /// output array of `(B, H, W, C)`, or `(frames, B, H, W, C)` when recording (the GIL
    /// released); without `read`, with no array, and returns None.
    fn call(
        &self,
        py: Python<'py>,
        shape: GridShape,
        channels: usize,
        read: bool,
        run: impl FnOnce(&SimOptions<'_>, Option<&mut [u8]>) -> core::Result<()> + Send,
    ) -> PyResult<Option<Bound<'py, PyArrayDyn<u8>>>> {
        let steps = self.steps;
        let masks = self
            .masks
            .map(|m| Binary::extract("masks", m))
            .transpose()?;
        if let Some(m) = &masks {
            let want = [shape.batch, steps, shape.height, shape.width];
            if m.shape() != want {
                return Err(ShapeError::new_err(format!(
                    "masks: expected shape (B, steps, H, W) = {want:?}, got {:?}",
                    m.shape()
                )));
            }
            if self.fire_rate.is_some() {
                return Err(InvalidValueError::new_err(
                    "give either masks or fire_rate, not both",
                ));
            }
        }
        let damage = self
            .damage
            .map(|d| Binary::extract("damage", d))
            .transpose()?;
        if let Some(d) = &damage {
            let ds = d.shape();
            let hw = [shape.height, shape.width];
            if !(ds == hw || ds == [shape.batch, shape.height, shape.width]) {
                return Err(ShapeError::new_err(format!(
                    "damage: expected shape (H, W) = {hw:?} or (B, H, W), got {ds:?}"
                )));
            }
        }
        let damage_until = self.damage_until.unwrap_or(steps).min(steps);
        if self.damage_from > damage_until {
            return Err(InvalidValueError::new_err(format!(
                "damage_from ({}) must not exceed damage_until ({damage_until})",
                self.damage_from
            )));
        }
        let mut opts = SimOptions::new(steps, false);
        opts.record_every = self.record_every;
        opts.damage_steps = self.damage_from..damage_until;
        let m = masks.as_ref().map(|m| m.data()).transpose()?;
        opts.damage = damage.as_ref().map(|d| d.data()).transpose()?;
        opts.masks = match (m, self.fire_rate) {
            (Some(m), _) => Masks::Given(m),
            (None, Some(fire_rate)) => Masks::Random {
                fire_rate,
                seed: self.seed,
            },
            (None, None) => Masks::Sync,
        };
        // Ctrl-C during a long run: the engine asks between chunks of steps, on this
        // thread, and the signal's exception (KeyboardInterrupt) is raised.
        let signalled: std::sync::Mutex<Option<PyErr>> = std::sync::Mutex::new(None);
        let check = || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    *signalled.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    true
                }
            })
        };
        opts.interrupt = Some(Interrupt {
            check: &check,
            every: hard::INTERRUPT_CHECK_EVERY,
        });
        let to_py = |e: core::Error| match e {
            core::Error::Interrupted => signalled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted")),
            e => to_py(e),
        };
        if !read {
            py.detach(|| run(&opts, None)).map_err(to_py)?;
            return Ok(None);
        }
        // Checked first, so that no array is made for a run that is refused.
        hard::output_len(shape, channels, &opts).map_err(to_py)?;
        let mut dims = vec![shape.batch, shape.height, shape.width, channels];
        if self.record_every > 0 {
            dims.insert(0, hard::n_frames(steps, self.record_every));
        }
        // numpy's allocator, unlike Rust's, asks for huge pages on big arrays: a 16 MB
        // grid is then written without thousands of page faults.
        let array = PyArrayDyn::<u8>::zeros(py, dims, false);
        {
            let mut rw = array.readwrite();
            let out = rw
                .as_slice_mut()
                .map_err(|e| ShapeError::new_err(e.to_string()))?;
            py.detach(|| run(&opts, Some(out))).map_err(to_py)?;
        }
        Ok(Some(array))
    }
}

/// A hard circuit with its packed grid kept between calls (`hard::Simulator`): load a
/// grid once, run steps, read it back, change it, run on.
#[pyclass(module = "logicars._core")]
struct Simulator {
    sim: hard::Simulator,
}

#[pymethods]
impl Simulator {
    /// A simulator of `circuit` loaded with `x` `(B, H, W, C)` (0/1, uint8, bool or
    /// float32); `periodic` overrides the circuit's boundary; `engine` is `jit`,
    /// `slots` or None (the fastest this machine runs).
    #[new]
    #[pyo3(signature = (circuit, x, periodic=None, engine=None))]
    fn new(
        py: Python<'_>,
        circuit: &HardCircuit,
        x: &Bound<'_, PyAny>,
        periodic: Option<bool>,
        engine: Option<&str>,
    ) -> PyResult<Simulator> {
        let engine = engine.map(HardEngine::parse).transpose().map_err(to_py)?;
        let x = Binary::extract("x", x)?;
        let shape = grid_of("x", &x.shape(), circuit.compiled.circuit().channels())?;
        let periodic = periodic.unwrap_or(circuit.periodic);
        let data = x.data()?;
        let c = &circuit.compiled;
        let sim = py
            .detach(|| {
                let mut sim = hard::Simulator::of(c, shape, periodic, engine, 0)?;
                sim.load(data)?;
                Ok(sim)
            })
            .map_err(to_py)?;
        Ok(Simulator { sim })
    }

    /// Replaces the grid with `x` (same shape).
    fn load(&mut self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<()> {
        let x = Binary::extract("x", x)?;
        let shape = grid_of("x", &x.shape(), self.sim.channels())?;
        if shape != self.sim.shape() {
            return Err(ShapeError::new_err(format!(
                "x: expected the simulator's grid {:?}, got {:?}",
                self.sim.shape(),
                x.shape()
            )));
        }
        let data = x.data()?;
        let sim = &mut self.sim;
        py.detach(|| sim.load(data)).map_err(to_py)
    }

    /// The current grid as uint8 `(B, H, W, C)`.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
        let s = self.sim.shape();
        let dims = vec![s.batch, s.height, s.width, self.sim.channels()];
        let array = PyArrayDyn::<u8>::zeros(py, dims, false);
        {
            let mut rw = array.readwrite();
            let out = rw
                .as_slice_mut()
                .map_err(|e| ShapeError::new_err(e.to_string()))?;
            py.detach(|| self.sim.read_into(out));
        }
        Ok(array)
    }

    /// Runs `steps` steps from the current grid (arguments as `HardCircuit.simulate`;
    /// the mask stream of a seed starts again at each call, as in `simulate`). With
    /// `read` false nothing is read back and None is returned.
    #[pyo3(signature = (
        steps, fire_rate=None, seed=0, masks=None, damage=None, damage_from=0,
        damage_until=None, record_every=0, read=true
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        steps: usize,
        fire_rate: Option<f64>,
        seed: u64,
        masks: Option<&Bound<'py, PyAny>>,
        damage: Option<&Bound<'py, PyAny>>,
        damage_from: usize,
        damage_until: Option<usize>,
        record_every: usize,
        read: bool,
    ) -> PyResult<Option<Bound<'py, PyArrayDyn<u8>>>> {
        let run = RunArgs {
            steps,
            fire_rate,
            seed,
            masks,
            damage,
            damage_from,
            damage_until,
            record_every,
        };
        let (shape, c) = (self.sim.shape(), self.sim.channels());
        let sim = &mut self.sim;
        run.call(py, shape, c, read, |opts, out| match out {
            Some(out) => sim.run_into(opts, out),
            None => sim.advance(opts),
        })
    }

    /// `jit` or `slots`: the engine this simulator runs.
    #[getter]
    fn engine(&self) -> &'static str {
        match self.sim.engine() {
            HardEngine::Jit => "jit",
            HardEngine::Slots => "slots",
        }
    }

    /// `(B, H, W, C)` of its grid.
    #[getter]
    fn shape(&self) -> (usize, usize, usize, usize) {
        let s = self.sim.shape();
        (s.batch, s.height, s.width, self.sim.channels())
    }

    #[getter]
    fn periodic(&self) -> bool {
        self.sim.periodic()
    }
}

/// The formats `HardCircuit.export` writes.
const EXPORT_FORMATS: [&str; 4] = ["c", "verilog", "digitaljs", "dot"];

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

/// A 0/1 array given as uint8 (no copy), bool or float32 (copied, checked).
enum Binary<'py> {
    Bytes(PyReadonlyArrayDyn<'py, u8>),
    Owned(Vec<usize>, Vec<u8>),
}

impl<'py> Binary<'py> {
    fn extract(name: &str, obj: &Bound<'py, PyAny>) -> PyResult<Binary<'py>> {
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, u8>>() {
            return Ok(Binary::Bytes(a));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, bool>>() {
            let v = a.as_array().iter().map(|&b| b as u8).collect();
            return Ok(Binary::Owned(a.shape().to_vec(), v));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, f32>>() {
            let mut v = Vec::with_capacity(a.len());
            for (i, &f) in a.as_array().iter().enumerate() {
                if f != 0.0 && f != 1.0 {
                    return Err(InvalidValueError::new_err(format!(
                        "{name}: values must be 0 or 1, found {f} at flat index {i}"
                    )));
                }
                v.push(f as u8);
            }
            return Ok(Binary::Owned(a.shape().to_vec(), v));
        }
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name}: expected a numpy array of uint8, bool or float32"
        )))
    }

    fn shape(&self) -> Vec<usize> {
        match self {
            Binary::Bytes(a) => a.shape().to_vec(),
            Binary::Owned(s, _) => s.clone(),
        }
    }

    fn data(&self) -> PyResult<&[u8]> {
        match self {
            Binary::Bytes(a) => a.as_slice().map_err(|_| {
                ShapeError::new_err("array must be C-contiguous (use np.ascontiguousarray)")
            }),
            Binary::Owned(_, v) => Ok(v),
        }
    }
}

/// The steps whose grids `HardCircuit.simulate(..., record_every)` returns.
#[pyfunction]
fn frame_steps(steps: usize, record_every: usize) -> Vec<usize> {
    hard::frame_steps(steps, record_every)
}

/// The memory cap in MB every estimate is compared with: `LOGICARS_MAX_MEMORY_MB`, else
/// 8192 or less under an address-space or cgroup limit.
#[pyfunction]
fn memory_cap_mb() -> usize {
    core::memory_cap_mb()
}

/// The update masks `HardCircuit.simulate` draws for `fire_rate` and `seed`, as uint8
/// `(B, steps, H, W)`: replayable in `rollout(masks=...)`.
#[pyfunction]
fn draw_masks<'py>(
    py: Python<'py>,
    batch: usize,
    height: usize,
    width: usize,
    steps: usize,
    fire_rate: f64,
    seed: u64,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let shape = GridShape {
        batch,
        height,
        width,
    };
    let m = py
        .detach(|| hard::draw_masks(shape, steps, fire_rate, seed))
        .map_err(to_py)?;
    PyArray1::from_vec(py, m).reshape(vec![batch, steps, height, width])
}

/// The notebook's `unique` wiring of `in_width -> out` before its permutation.
#[pyfunction]
fn unique_pairs(in_width: usize, out: usize) -> PyResult<(Vec<u32>, Vec<u32>)> {
    let w = core::wiring::unique_pairs(in_width, out).map_err(to_py)?;
    Ok((w.a, w.b))
}

/// Sets the number of worker threads (0: `RAYON_NUM_THREADS` or one per core).
#[pyfunction]
fn set_num_threads(threads: usize) -> PyResult<()> {
    core::threads::set_num_threads(threads).map_err(to_py)
}

#[pyfunction]
fn num_threads() -> usize {
    core::threads::num_threads()
}

/// Test hook, not API: panics on an engine worker thread with the GIL released, as a
/// bug in the engine would, so tests can show that a Rust panic surfaces as
/// `logicars.errors.PanicException` and the interpreter keeps running.
#[pyfunction]
#[pyo3(name = "_panic_for_tests")]
fn panic_for_tests(py: Python<'_>, message: &str) {
    let message = message.to_owned();
    py.detach(|| core::threads::pool().install(|| panic!("{message}")));
}

/// Measured FMA lane-operations per second on every thread of the pool, with the
/// kernels' SIMD level (`logicars_core::peak`). Takes tens of milliseconds.
#[pyfunction]
fn measure_fma_peak(py: Python<'_>) -> f64 {
    py.detach(|| core::peak::fma_lane_ops_per_s(core::kernels::simd_level()))
}

/// How this extension was built and which SIMD kernels it runs.
#[pyfunction]
fn build_info() -> Vec<(&'static str, String)> {
    let features: Vec<&str> = [
        ("sse4.2", cfg!(target_feature = "sse4.2")),
        ("avx", cfg!(target_feature = "avx")),
        ("avx2", cfg!(target_feature = "avx2")),
        ("fma", cfg!(target_feature = "fma")),
        ("avx512f", cfg!(target_feature = "avx512f")),
    ]
    .into_iter()
    .filter_map(|(n, on)| on.then_some(n))
    .collect();
    vec![
        ("version", env!("CARGO_PKG_VERSION").to_string()),
        (
            "profile",
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_string(),
        ),
        ("target_features", features.join(",")),
        ("simd_level", core::kernels::simd_level().name().to_string()),
        ("hard_engine", hard::default_engine().name().to_string()),
        ("threads", core::threads::num_threads().to_string()),
    ]
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Engine>()?;
    m.add_class::<HardCircuit>()?;
    m.add_class::<Simulator>()?;
    m.add_function(wrap_pyfunction!(unique_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(memory_cap_mb, m)?)?;
    m.add_function(wrap_pyfunction!(build_info, m)?)?;
    m.add_function(wrap_pyfunction!(measure_fma_peak, m)?)?;
    m.add_function(wrap_pyfunction!(frame_steps, m)?)?;
    m.add_function(wrap_pyfunction!(draw_masks, m)?)?;
    m.add("InvalidValueError", m.py().get_type::<InvalidValueError>())?;
    m.add("ShapeError", m.py().get_type::<ShapeError>())?;
    m.add("MemoryLimitError", m.py().get_type::<MemoryLimitError>())?;
    m.add_function(wrap_pyfunction!(panic_for_tests, m)?)?;
    m.add(
        "PanicException",
        m.py().get_type::<pyo3::panic::PanicException>(),
    )?;
    m.add("CHUNK", core::kernels::CHUNK)?;
    m.add("EXPORT_FORMATS", EXPORT_FORMATS.to_vec())?;
    m.add("GATE_NAMES", core::gates::OP_NAMES.to_vec())?;
    Ok(())
}
