//! Ctrl-C during long runs: the engine asks between chunks of steps, on the calling
//! thread, whether Python has a pending signal; the signal handler's exception
//! (`KeyboardInterrupt` for SIGINT) is then raised.

use std::sync::Mutex;

use logicars_core as core;
use logicars_core::interrupt::{Interrupt, INTERRUPT_CHECK_EVERY};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

use crate::errors::to_py;

/// Runs `work` with the GIL released, handing it an [`Interrupt`] that runs Python's
/// signal handlers about every [`INTERRUPT_CHECK_EVERY`]; a handler's exception stops
/// the run and is raised.
pub fn detach_interruptible<R: Send>(
    py: Python<'_>,
    work: impl for<'a> FnOnce(Interrupt<'a>) -> core::Result<R> + Send,
) -> PyResult<R> {
    let signalled: Mutex<Option<PyErr>> = Mutex::new(None);
    let check = || {
        Python::attach(|py| match py.check_signals() {
            Ok(()) => false,
            Err(e) => {
                *signalled.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                true
            }
        })
    };
    let interrupt = Interrupt {
        check: &check,
        every: INTERRUPT_CHECK_EVERY,
    };
    py.detach(|| work(interrupt)).map_err(|e| match e {
        core::Error::Interrupted => signalled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| PyKeyboardInterrupt::new_err("interrupted")),
        e => to_py(e),
    })
}
