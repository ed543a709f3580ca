//! The engine's constants and config schema, added to the module so that the Python
//! package reads them instead of copying them.

use logicars_core::spec::schema::{Absent, FIELDS};
use logicars_core::{self as core};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use serde_json::Value;

pub fn add(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // Seeds are u64 everywhere in the engine.
    m.add("MAX_SEED", u64::MAX)?;
    m.add("MAX_THREADS", core::threads::MAX_THREADS)?;
    m.add("DEFAULT_CHUNK_CELLS", core::simd::DEFAULT_CHUNK_CELLS)?;
    m.add("INIT_LOGIT", core::relax::INIT_PASS_LOGIT)?;
    m.add("RELAX_MODES", PyTuple::new(py, core::relax::MODES)?)?;
    m.add("WIRINGS", PyTuple::new(py, core::wiring::NAMES)?)?;
    m.add("CONFIG_FIELDS", config_fields(py)?)?;
    Ok(())
}

/// One dict per field of the config JSON, in the order its messages report them:
/// `path` (dotted), `list`, `expected` (what each value must be, as a message says it),
/// `required`, and `default` where an absent field has one value (a relaxation's
/// parameters have none: their default depends on the mode).
fn config_fields(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    let fields = FIELDS.iter().map(|f| {
        let d = PyDict::new(py);
        d.set_item("path", f.name())?;
        d.set_item("list", f.list)?;
        d.set_item("expected", f.expected.to_string())?;
        d.set_item("required", matches!(f.absent, Absent::Required))?;
        if let Absent::Default(value) = f.absent {
            d.set_item("default", to_python(py, &value())?)?;
        }
        Ok(d)
    });
    PyTuple::new(py, fields.collect::<PyResult<Vec<_>>>()?)
}

/// A JSON value as the Python value `json.loads` would give.
fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_pyobject(py)?.into_any(),
            (None, Some(i)) => i.into_pyobject(py)?.into_any(),
            _ => n.as_f64().unwrap_or(f64::NAN).into_pyobject(py)?.into_any(),
        },
        Value::String(s) => s.into_pyobject(py)?.into_any(),
        Value::Array(items) => {
            let items = items.iter().map(|v| to_python(py, v));
            PyList::new(py, items.collect::<PyResult<Vec<_>>>()?)?.into_any()
        }
        Value::Object(map) => {
            let d = PyDict::new(py);
            for (k, v) in map {
                d.set_item(k, to_python(py, v)?)?;
            }
            d.into_any()
        }
    })
}
