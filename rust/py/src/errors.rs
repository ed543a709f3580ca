//! The exceptions the engine raises, and the conversion of its errors to them.

use logicars_core as core;
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

/// An engine error on its way to Python (`core::Error` and `PyErr` are both foreign to
/// this crate, so the conversion goes through this type: `?` turns a `core::Error` into
/// it, and pyo3 raises it as the matching exception).
pub struct EngineError(core::Error);

impl From<core::Error> for EngineError {
    fn from(e: core::Error) -> EngineError {
        EngineError(e)
    }
}

impl From<EngineError> for PyErr {
    fn from(EngineError(e): EngineError) -> PyErr {
        match e {
            core::Error::Value(m) => InvalidValueError::new_err(m),
            core::Error::Shape(m) => ShapeError::new_err(m),
            core::Error::Memory(m) => MemoryLimitError::new_err(m),
            core::Error::Interrupted => PyKeyboardInterrupt::new_err("interrupted"),
        }
    }
}

/// `e` as the matching Python exception.
pub fn to_py(e: core::Error) -> PyErr {
    EngineError(e).into()
}
