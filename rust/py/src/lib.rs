//! Python bindings of logicars-core: the `logicars._core` extension.
//!
//! Arrays cross as numpy float32/int32 without copies on the way in; the GIL is
//! released while Rust works; engine errors become `logicars.errors` exceptions.

mod circuit;
mod constants;
mod convert;
mod engine;
mod errors;
mod functions;
mod run_args;
mod signals;
mod simulator;

use logicars_core as core;
use pyo3::prelude::*;

use circuit::{HardCircuit, EXPORT_FORMATS};
use engine::Engine;
use errors::{InvalidValueError, MemoryLimitError, ShapeError};
use functions::*;
use simulator::Simulator;

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
    m.add_function(wrap_pyfunction!(check_lr, m)?)?;
    m.add_function(wrap_pyfunction!(check_weight_decay, m)?)?;
    m.add_function(wrap_pyfunction!(check_beta1, m)?)?;
    m.add_function(wrap_pyfunction!(param_layout, m)?)?;
    m.add("InvalidValueError", m.py().get_type::<InvalidValueError>())?;
    m.add("ShapeError", m.py().get_type::<ShapeError>())?;
    m.add("MemoryLimitError", m.py().get_type::<MemoryLimitError>())?;
    m.add_function(wrap_pyfunction!(panic_for_tests, m)?)?;
    m.add(
        "PanicException",
        m.py().get_type::<pyo3::panic::PanicException>(),
    )?;
    m.add("EXPORT_FORMATS", EXPORT_FORMATS.to_vec())?;
    m.add("GATE_NAMES", core::gates::OP_NAMES.to_vec())?;
    constants::add(m)?;
    Ok(())
}
