//! The float engine: the relaxed model's gate program (`program`), the SIMD kernels
//! that run it over a chunk of cells (`kernels`), and the rollout/back-propagation
//! buffers over a batch of grids (`workspace`).

pub mod kernels;
pub mod program;
mod wavefront;
mod workspace;

pub(crate) use workspace::{ForwardOptions, LossGrad, Workspace};
