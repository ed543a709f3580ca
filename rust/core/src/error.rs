//! Errors of the engine. Every bad input is reported here instead of panicking,
//! so the Python bindings can turn it into a precise exception.

use std::fmt;

/// What went wrong, with a message that names the parameter and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// A value is out of range or inconsistent with the model (maps to `ValueError`).
    Value(String),
    /// A shape or size does not fit (maps to `ValueError`, shape subclass).
    Shape(String),
    /// The requested work would need more memory than allowed.
    Memory(String),
    /// A run was stopped by its interrupt check (Ctrl-C in Python).
    Interrupted,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Value(m) | Error::Shape(m) | Error::Memory(m) => f.write_str(m),
            Error::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for `Err(Error::Value(format!(...)))`.
macro_rules! value_err {
    ($($arg:tt)*) => { Err($crate::error::Error::Value(format!($($arg)*))) };
}
/// Shorthand for `Err(Error::Shape(format!(...)))`.
macro_rules! shape_err {
    ($($arg:tt)*) => { Err($crate::error::Error::Shape(format!($($arg)*))) };
}
pub(crate) use {shape_err, value_err};
