//! logicars-core: the engine of Differentiable Logic Cellular Automata.
//!
//! A model is a perception block (K small gate networks over each channel's 3×3
//! patch) and an update network (centre cell ++ perception -> next state). Training
//! relaxes every gate into a softmax mix of the 16 two-input gates; this crate folds
//! that mix into 4 coefficients per gate so a gate costs 3 multiply-adds per cell
//! forward, and back-propagates through every CA step (see DESIGN.md §3).

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
