//! The hard engine: a learned circuit run as real logic on packed bits.
//!
//! - [`compile`]: the float program with one hard gate per parameter, folded, pruned,
//!   scheduled and given arena slots ([`Circuit`]);
//! - [`netlist`] and [`export`]: the same circuit as a slot-free netlist, and its
//!   C, Verilog, DigitalJS and DOT exporters;
//! - two engines that run a circuit bit-identically (the same masks, the same damage,
//!   the same frames): the **slot** interpreter ([`slots`], with its gate `kernels`
//!   and the `packing` of grids into words), portable and the oracle of the JIT's
//!   tests, and the **JIT** (`jit`, `grid`): the pruned netlist compiled to AVX2 or
//!   AVX-512 machine code at run time, on x86-64 CPUs with AVX2 (AVX-512F) whose OS
//!   grants executable memory;
//! - [`masks`] (sync, given or seeded random updates) and [`options`] (what a run
//!   steps and returns);
//! - [`simulator`]: the engine choice, a reusable [`Simulator`] and [`simulate`].
//!
//! The submodules import one another directly, never through this module, which only
//! re-exports the public API.

pub mod circuit;
pub mod compile;
pub mod export;
// The JIT emits x86-64 code; elsewhere only the slot engine is built.
#[cfg(target_arch = "x86_64")]
pub(crate) mod grid;
#[cfg(target_arch = "x86_64")]
pub(crate) mod jit;
pub(crate) mod kernels;
pub mod masks;
pub mod netlist;
pub mod options;
pub(crate) mod packing;
pub mod simulator;
pub mod slots;

pub use circuit::{Circuit, CircuitStats};
pub use kernels::Kind;
pub use masks::{draw_masks, Masks, StepMask};
pub use netlist::{Gate, NetOutput, Netlist, PatchInput};
pub use options::{frame_steps, is_frame, n_frames, Interrupt, SimOptions, INTERRUPT_CHECK_EVERY};
pub use simulator::{
    default_engine, jit_available, jit_avx512_available, output_len, simulate, simulate_into,
    simulate_on, CompiledCircuit, HardEngine, Simulator,
};
pub use slots::{auto_words, check_words, SUPPORTED_WORDS};

#[cfg(test)]
mod slot_tests;
#[cfg(test)]
mod tests;
