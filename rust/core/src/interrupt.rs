//! Stopping long runs: a check the caller supplies (the Python bindings look for
//! Ctrl-C there), asked between chunks of steps on the calling thread, outside the pool.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// How often the Python bindings ask whether a long run should stop.
pub const INTERRUPT_CHECK_EVERY: Duration = Duration::from_millis(50);

/// A check whether to stop a run: `true` stops it with [`Error::Interrupted`]. Results
/// never depend on it (the steps run in the same order, only in more hand-overs).
#[derive(Clone, Copy)]
pub struct Interrupt<'a> {
    pub check: &'a (dyn Fn() -> bool + Sync),
    /// Running time between checks (zero: after every step).
    pub every: Duration,
}

impl std::fmt::Debug for Interrupt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

impl Interrupt<'_> {
    /// When the chunk of steps starting now should hand back for the next check.
    pub fn deadline(interrupt: Option<Interrupt<'_>>) -> Option<Instant> {
        interrupt.map(|i| Instant::now() + i.every)
    }

    /// `Err(Interrupted)` when `interrupt` says stop.
    pub fn poll(interrupt: Option<Interrupt<'_>>) -> Result<()> {
        match interrupt {
            Some(i) if (i.check)() => Err(Error::Interrupted),
            _ => Ok(()),
        }
    }
}
