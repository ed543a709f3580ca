//! The module's functions: threads, memory cap, masks, wiring, build information.

use logicars_core::hard;
use logicars_core::{self as core, GridShape};
use numpy::{PyArray1, PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;

use crate::convert::param_tuples;
use crate::errors::to_py;

/// The steps whose grids `HardCircuit.simulate(..., record_every)` returns.
#[pyfunction]
pub fn frame_steps(steps: usize, record_every: usize) -> Vec<usize> {
    hard::frame_steps(steps, record_every)
}

/// The memory cap in MB every estimate is compared with: `LOGICARS_MAX_MEMORY_MB`, else
/// 8192 or less under an address-space or cgroup limit.
#[pyfunction]
pub fn memory_cap_mb() -> usize {
    core::memory_cap_mb()
}

/// The update masks `HardCircuit.simulate` draws for `fire_rate` and `seed`, as uint8
/// `(B, steps, H, W)`: replayable in `rollout(masks=...)`.
#[pyfunction]
pub fn draw_masks<'py>(
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
pub fn unique_pairs(in_width: usize, out: usize) -> PyResult<(Vec<u32>, Vec<u32>)> {
    let w = core::wiring::unique_pairs(in_width, out).map_err(to_py)?;
    Ok((w.a, w.b))
}

/// A config's parameter arrays `[(name, shape, offset)]` in the flat logits, as
/// `Engine.param_info` gives them, without building a model: validates the config (as
/// `Engine.create` does, errors naming the field) and draws nothing.
#[pyfunction]
pub fn param_layout(config_json: &str) -> PyResult<Vec<(String, Vec<usize>, usize)>> {
    let spec = core::Spec::from_json(config_json).map_err(to_py)?;
    Ok(param_tuples(core::param_layout(&spec)))
}

/// Checks a learning rate (finite, > 0) as a training step would, before a run starts.
#[pyfunction]
pub fn check_lr(lr: f64) -> PyResult<()> {
    core::optim::check_lr(lr).map_err(to_py)
}

/// Checks a decoupled weight decay (finite, >= 0) as a training step would.
#[pyfunction]
pub fn check_weight_decay(weight_decay: f64) -> PyResult<()> {
    core::optim::check_weight_decay(weight_decay).map_err(to_py)
}

/// Checks AdamW's first-moment decay (in [0, 1)) as a training step would.
#[pyfunction]
pub fn check_beta1(beta1: f64) -> PyResult<()> {
    core::optim::check_beta1(beta1).map_err(to_py)
}

/// Sets the number of worker threads (0: `RAYON_NUM_THREADS` or one per core).
#[pyfunction]
pub fn set_num_threads(threads: usize) -> PyResult<()> {
    core::threads::set_num_threads(threads).map_err(to_py)
}

#[pyfunction]
pub fn num_threads() -> usize {
    core::threads::num_threads()
}

/// Test hook, not API: panics on an engine worker thread with the GIL released, as a
/// bug in the engine would, so tests can show that a Rust panic surfaces as
/// `logicars.errors.PanicException` and the interpreter keeps running.
#[pyfunction]
#[pyo3(name = "_panic_for_tests")]
pub fn panic_for_tests(py: Python<'_>, message: &str) {
    let message = message.to_owned();
    py.detach(|| core::threads::pool().install(|| panic!("{message}")));
}

/// Measured FMA lane-operations per second on every thread of the pool, with the
/// kernels' SIMD level (`logicars_core::peak`). Takes tens of milliseconds.
#[pyfunction]
pub fn measure_fma_peak(py: Python<'_>) -> f64 {
    py.detach(|| core::peak::fma_lane_ops_per_s(core::simd::simd_level()))
}

/// How this extension was built and which SIMD kernels it runs.
#[pyfunction]
pub fn build_info() -> Vec<(&'static str, String)> {
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
        ("simd_level", core::simd::simd_level().name().to_string()),
        ("hard_engine", hard::default_engine().name().to_string()),
        ("threads", core::threads::num_threads().to_string()),
    ]
}
