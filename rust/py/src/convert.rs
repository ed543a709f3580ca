//! Conversions between numpy arrays and the engine's inputs.

use logicars_core::{GridShape, ParamInfo, Wires};
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;

use std::borrow::Cow;

use pyo3::exceptions::{PyMemoryError, PyTypeError};

use crate::errors::{InvalidValueError, MemoryLimitError, ShapeError};

/// Parameter arrays as Python gets them: `[(name, shape, offset)]`.
pub fn param_tuples(info: Vec<ParamInfo>) -> Vec<(String, Vec<usize>, usize)> {
    info.into_iter()
        .map(|p| (p.name, p.shape, p.offset))
        .collect()
}

pub fn slice<'a, T: numpy::Element>(
    name: &str,
    a: &'a PyReadonlyArrayDyn<'_, T>,
) -> PyResult<&'a [T]> {
    a.as_slice()
        .map_err(|_| ShapeError::new_err(format!("{name}: array must be C-contiguous")))
}

/// `(B, H, W)` of a 4-d grid `(B, H, W, C)` with `C == channels`.
pub fn grid_shape(
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

pub fn wires_from(name: &str, arrays: Vec<PyReadonlyArrayDyn<'_, i32>>) -> PyResult<Vec<Wires>> {
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

pub fn wires_to<'py>(
    py: Python<'py>,
    wires: &[Wires],
) -> PyResult<Vec<Bound<'py, PyArrayDyn<i32>>>> {
    wires
        .iter()
        .map(|w| {
            let flat: Vec<i32> = w.a.iter().chain(&w.b).map(|&x| x as i32).collect();
            PyArray1::from_vec(py, flat).reshape(vec![2, w.len()])
        })
        .collect()
}

/// `(B, H, W)` of a `(B, H, W, C)` grid with `C == channels`.
pub fn grid_of(name: &str, dims: &[usize], channels: usize) -> PyResult<GridShape> {
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

/// A 0/1 array given as uint8 (used without a copy), bool or float32 (converted, and
/// checked to hold only 0 and 1, by `bits`). As an argument, any other object is a
/// `TypeError` (pyo3 names the argument in its note).
pub enum Binary<'py> {
    Bytes(PyReadonlyArrayDyn<'py, u8>),
    Bools(PyReadonlyArrayDyn<'py, bool>),
    Floats(PyReadonlyArrayDyn<'py, f32>),
}

impl<'a, 'py> FromPyObject<'a, 'py> for Binary<'py> {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Binary<'py>> {
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, u8>>() {
            return Ok(Binary::Bytes(a));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, bool>>() {
            return Ok(Binary::Bools(a));
        }
        if let Ok(a) = obj.extract::<PyReadonlyArrayDyn<'py, f32>>() {
            return Ok(Binary::Floats(a));
        }
        Err(PyTypeError::new_err(
            "expected a numpy array of uint8, bool or float32",
        ))
    }
}

impl Binary<'_> {
    pub fn shape(&self) -> Vec<usize> {
        match self {
            Binary::Bytes(a) => a.shape().to_vec(),
            Binary::Bools(a) => a.shape().to_vec(),
            Binary::Floats(a) => a.shape().to_vec(),
        }
    }

    /// The values as bytes: a uint8 array's own (C-contiguous), a copy of the others;
    /// a float other than 0 or 1 is an error naming `name`.
    pub fn bits(&self, name: &str) -> PyResult<Cow<'_, [u8]>> {
        match self {
            Binary::Bytes(a) => a.as_slice().map(Cow::Borrowed).map_err(|_| {
                ShapeError::new_err(format!(
                    "{name}: array must be C-contiguous (use np.ascontiguousarray)"
                ))
            }),
            Binary::Bools(a) => Ok(Cow::Owned(a.as_array().iter().map(|&b| b as u8).collect())),
            Binary::Floats(a) => {
                let mut v = Vec::with_capacity(a.len());
                for (i, &f) in a.as_array().iter().enumerate() {
                    if f != 0.0 && f != 1.0 {
                        return Err(InvalidValueError::new_err(format!(
                            "{name}: values must be 0 or 1, found {f} at flat index {i}"
                        )));
                    }
                    v.push(f as u8);
                }
                Ok(Cow::Owned(v))
            }
        }
    }
}

/// A zeroed uint8 array of `dims` from numpy's allocator (which, unlike Rust's, asks for
/// huge pages on big arrays: a 16 MB grid is then written without thousands of page
/// faults). An allocation the system refuses raises `MemoryLimitError` (numpy's own
/// constructor from Rust would panic on it).
pub fn zeros_u8<'py>(py: Python<'py>, dims: Vec<usize>) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    let bytes = dims.iter().product::<usize>();
    let array = py
        .import("numpy")?
        .call_method1("zeros", (dims, "uint8"))
        .map_err(|e| {
            if e.is_instance_of::<PyMemoryError>(py) {
                MemoryLimitError::new_err(format!(
                    "the system refused {} MB for the result (an address-space or cgroup \
                     limit, or memory in use elsewhere)",
                    bytes >> 20
                ))
            } else {
                e
            }
        })?;
    Ok(array.cast_into::<PyArrayDyn<u8>>()?)
}
