//! logicars-core: the engine of Differentiable Logic Cellular Automata.
//!
//! A model ([`model`], configured by a [`spec::Spec`]) is a perception block (K small
//! gate networks over each channel's 3×3 patch) and an update network (centre cell ++
//! perception -> next state), trained by back-propagation through every CA step with
//! AdamW ([`optim`]; DESIGN.md §3).
//!
//! - [`relax`]: how a gate's parameters become 4 coefficients `(α, β, γ, δ)` in
//!   training: the softmax over the 16 two-input gates, Gumbel and hard
//!   straight-through, annealing and truth-table relaxations. The float engine only
//!   ever sees coefficients.
//! - [`float`]: the float engine: a step compiled to a gate program, SIMD kernels that
//!   run it forward and backward (3 multiply-adds per gate and cell forward), and the
//!   rollout and back-propagation over chunks of cells as a wavefront.
//! - [`hard`]: the learned circuit as real logic on packed bits: compiled, exported, and
//!   run by a portable slot interpreter or by x86-64 machine code generated at run time.
//!   The hard loss of a training step runs on it, bit-sliced, whenever the grid and the
//!   masks are binary.
//! - [`model::LossSteps`]: which states of a training rollout the loss reads (the last
//!   by default, or every state from a step on).
//! - Leaf modules that the engines share: [`grid`] (`GridShape`), [`simd`] (the SIMD
//!   level and chunk widths), [`gates`], [`wiring`], [`threads`], [`memory`],
//!   [`interrupt`], [`error`].

pub mod aligned;
pub mod error;
pub mod float;
pub mod gates;
pub mod grid;
pub mod hard;
pub mod interrupt;
pub mod memory;
pub mod model;
pub mod optim;
pub mod peak;
pub mod relax;
pub mod simd;
pub mod spec;
pub mod threads;
pub mod wiring;

pub use error::{Error, Result};
pub use grid::GridShape;
pub use memory::cap_mb as memory_cap_mb;
pub use model::{
    param_layout, Decoding, DriftOutcome, DriftTask, LossSteps, Model, ParamInfo, StepOutcome,
};
pub use relax::Relax;
pub use spec::{PerceiveSpec, Spec, UpdateSpec};
pub use wiring::{Wires, Wiring};
