//! `HardCircuit`: a model's hard gates compiled for the bit-sliced engine.

use logicars_core::hard::{self, NetOutput, Netlist};
use numpy::PyArrayDyn;
use pyo3::prelude::*;

use crate::convert::{grid_of, Binary};
use crate::errors::InvalidValueError;
use crate::run_args::RunArgs;

/// A hard circuit compiled for the bit-sliced engine: a snapshot of a model's hard
/// gates (later changes to the model's logits do not reach it).
#[pyclass(module = "logicars._core", frozen)]
pub struct HardCircuit {
    pub(crate) compiled: hard::CompiledCircuit,
    /// The model's boundary, the default of `simulate`.
    pub(crate) periodic: bool,
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
        x: Binary<'py>,
        steps: usize,
        fire_rate: Option<f64>,
        seed: u64,
        masks: Option<Binary<'py>>,
        damage: Option<Binary<'py>>,
        damage_from: usize,
        damage_until: Option<usize>,
        record_every: usize,
        periodic: Option<bool>,
        words: usize,
    ) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
        let c = self.compiled.circuit().channels();
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
        let x = x.bits("x")?;
        let out = run.call(py, shape, c, true, |opts, out| {
            let mut opts = opts.clone();
            opts.periodic = periodic;
            opts.words = words;
            let out = out.expect("an output array");
            hard::simulate_into(None, circuit, &x, shape, &opts, out)
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

/// The formats `HardCircuit.export` writes.
pub const EXPORT_FORMATS: [&str; 4] = ["c", "verilog", "digitaljs", "dot"];
