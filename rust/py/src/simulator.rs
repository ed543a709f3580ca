//! `Simulator`: a hard circuit with its packed grid kept between calls.

use logicars_core::hard::{self, HardEngine};
use numpy::{PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;

use crate::circuit::HardCircuit;
use crate::convert::{grid_of, zeros_u8, Binary};
use crate::errors::{to_py, ShapeError};
use crate::run_args::RunArgs;

/// A hard circuit with its packed grid kept between calls (`hard::Simulator`): load a
/// grid once, run steps, read it back, change it, run on.
#[pyclass(module = "logicars._core")]
pub struct Simulator {
    sim: hard::Simulator,
}

#[pymethods]
impl Simulator {
    /// A simulator of `circuit` loaded with `x` `(B, H, W, C)` (0/1, uint8, bool or
    /// float32); `periodic` overrides the circuit's boundary; `engine` is `jit` (the
    /// best JIT back end), `jit-avx2`, `jit-avx512`, `slots` or None (the fastest this
    /// machine runs).
    #[new]
    #[pyo3(signature = (circuit, x, periodic=None, engine=None))]
    fn new(
        py: Python<'_>,
        circuit: &HardCircuit,
        x: Binary<'_>,
        periodic: Option<bool>,
        engine: Option<&str>,
    ) -> PyResult<Simulator> {
        let engine = engine.map(HardEngine::parse).transpose().map_err(to_py)?;
        let shape = grid_of("x", &x.shape(), circuit.compiled.circuit().channels())?;
        let periodic = periodic.unwrap_or(circuit.periodic);
        let data = x.bits("x")?;
        let c = &circuit.compiled;
        let sim = py
            .detach(|| {
                let mut sim = hard::Simulator::of(c, shape, periodic, engine, 0)?;
                sim.load(&data)?;
                Ok(sim)
            })
            .map_err(to_py)?;
        Ok(Simulator { sim })
    }

    /// Replaces the grid with `x` (same shape).
    fn load(&mut self, py: Python<'_>, x: Binary<'_>) -> PyResult<()> {
        let shape = grid_of("x", &x.shape(), self.sim.channels())?;
        if shape != self.sim.shape() {
            return Err(ShapeError::new_err(format!(
                "x: expected the simulator's grid {:?}, got {:?}",
                self.sim.shape(),
                x.shape()
            )));
        }
        let data = x.bits("x")?;
        let sim = &mut self.sim;
        py.detach(|| sim.load(&data)).map_err(to_py)
    }

    /// The current grid as uint8 `(B, H, W, C)`.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
        let s = self.sim.shape();
        let dims = vec![s.batch, s.height, s.width, self.sim.channels()];
        let array = zeros_u8(py, dims)?;
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
        masks: Option<Binary<'py>>,
        damage: Option<Binary<'py>>,
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
            HardEngine::Jit | HardEngine::JitAvx512 => "jit",
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
