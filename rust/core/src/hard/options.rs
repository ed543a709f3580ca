//! The options of a simulation and which grids it returns.

use std::ops::Range;

use super::masks::Masks;
pub use crate::interrupt::{Interrupt, INTERRUPT_CHECK_EVERY};

/// Options of [`simulate`](super::simulate).
#[derive(Debug, Clone)]
pub struct SimOptions<'a> {
    pub steps: usize,
    /// Wrap around the edges (else cells outside the grid are 0).
    pub periodic: bool,
    pub masks: Masks<'a>,
    /// `H × W` (all boards) or `B × H × W` bytes, 1 = a dead cell: forced to 0 in every
    /// channel after each step `t` (0-based) in `damage_steps`.
    pub damage: Option<&'a [u8]>,
    pub damage_steps: Range<usize>,
    /// 0: return only the final grid; `k`: return the grids after steps 0, k, 2k, …
    /// and always the final one (see [`frame_steps`]).
    pub record_every: usize,
    /// 64-bit words per block, 0 for [`auto_words`](super::auto_words).
    pub words: usize,
    /// Asked whether to stop, about every `Interrupt::every` of running, on the calling
    /// thread outside the pool; `true` stops the run with
    /// [`crate::error::Error::Interrupted`] (the Python bindings check for Ctrl-C here).
    /// Results do not depend on it.
    pub interrupt: Option<Interrupt<'a>>,
}

impl SimOptions<'_> {
    /// `steps` synchronous steps, no damage, final grid only.
    pub fn new(steps: usize, periodic: bool) -> SimOptions<'static> {
        SimOptions {
            steps,
            periodic,
            masks: Masks::Sync,
            damage: None,
            damage_steps: 0..0,
            record_every: 0,
            words: 0,
            interrupt: None,
        }
    }
}

/// Whether a simulation of `steps` steps returns the grid after step `t`: only the
/// final one when `record_every` is 0, else `0, k, 2k, …` and the final one.
pub fn is_frame(t: usize, steps: usize, record_every: usize) -> bool {
    t == steps || (record_every > 0 && t.is_multiple_of(record_every))
}

/// How many grids a simulation returns (see [`is_frame`]).
pub fn n_frames(steps: usize, record_every: usize) -> usize {
    match record_every {
        0 => 1,
        k => steps / k + 1 + usize::from(!steps.is_multiple_of(k)),
    }
}

/// The steps whose grids a simulation returns, in order (see [`is_frame`]).
pub fn frame_steps(steps: usize, record_every: usize) -> Vec<usize> {
    (0..=steps)
        .filter(|&t| is_frame(t, steps, record_every))
        .collect()
}
