//! The arguments of a run, checked once for `HardCircuit.simulate` and `Simulator.run`,
//! and the run itself with the GIL released and Ctrl-C checked between chunks of steps.

use logicars_core::hard::{self, Masks, SimOptions};
use logicars_core::{self as core, GridShape};
use numpy::{PyArrayDyn, PyArrayMethods};
use pyo3::prelude::*;

use crate::convert::{zeros_u8, Binary};
use crate::errors::{to_py, InvalidValueError, ShapeError};
use crate::signals::detach_interruptible;

/// The arguments of a run (`HardCircuit.simulate`, `Simulator.run`) before they are
/// checked against the grid.
pub struct RunArgs<'py> {
    pub steps: usize,
    pub fire_rate: Option<f64>,
    pub seed: u64,
    pub masks: Option<Binary<'py>>,
    pub damage: Option<Binary<'py>>,
    pub damage_from: usize,
    pub damage_until: Option<usize>,
    pub record_every: usize,
}

impl<'py> RunArgs<'py> {
    /// Checks the arguments against `shape`, then calls `run` with the options and an
    /// output array of `(B, H, W, C)`, or `(frames, B, H, W, C)` when recording (the GIL
    /// released); without `read`, with no array, and returns None.
    pub fn call(
        &self,
        py: Python<'py>,
        shape: GridShape,
        channels: usize,
        read: bool,
        run: impl FnOnce(&SimOptions<'_>, Option<&mut [u8]>) -> core::Result<()> + Send,
    ) -> PyResult<Option<Bound<'py, PyArrayDyn<u8>>>> {
        let steps = self.steps;
        let masks = self.masks(shape)?;
        let damage = self.damage(shape)?;
        // Named as `Model.simulate` takes them: `damage_steps=(start, end)`.
        let start = self.damage_from;
        if let Some(end) = self.damage_until.filter(|&end| start > end) {
            return Err(InvalidValueError::new_err(format!(
                "damage_steps: expected 0 <= start <= end, got ({start}, {end})"
            )));
        }
        let damage_until = self.damage_until.unwrap_or(steps).min(steps);
        if start > damage_until {
            return Err(InvalidValueError::new_err(format!(
                "damage_steps: start {start} is after the run's {steps} steps"
            )));
        }
        let mut opts = SimOptions::new(steps, false);
        opts.record_every = self.record_every;
        opts.damage_steps = self.damage_from..damage_until;
        let m = masks.map(|m| m.bits("masks")).transpose()?;
        let d = damage.map(|d| d.bits("damage")).transpose()?;
        let m = m.as_deref();
        opts.damage = d.as_deref();
        opts.masks = match (m, self.fire_rate) {
            (Some(m), _) => Masks::Given(m),
            (None, Some(fire_rate)) => Masks::Random {
                fire_rate,
                seed: self.seed,
            },
            (None, None) => Masks::Sync,
        };
        if !read {
            // Ctrl-C during a long run: the engine asks between chunks of steps.
            detach_interruptible(py, |interrupt| {
                let mut opts = opts.clone();
                opts.interrupt = Some(interrupt);
                run(&opts, None)
            })?;
            return Ok(None);
        }
        // Checked first, so that no array is made for a run that is refused.
        hard::output_len(shape, channels, &opts).map_err(to_py)?;
        let mut dims = vec![shape.batch, shape.height, shape.width, channels];
        if self.record_every > 0 {
            dims.insert(0, hard::n_frames(steps, self.record_every));
        }
        let array = zeros_u8(py, dims)?;
        {
            let mut rw = array.readwrite();
            let out = rw
                .as_slice_mut()
                .map_err(|e| ShapeError::new_err(e.to_string()))?;
            detach_interruptible(py, |interrupt| {
                let mut opts = opts.clone();
                opts.interrupt = Some(interrupt);
                run(&opts, Some(out))
            })?;
        }
        Ok(Some(array))
    }

    /// The update masks, checked against `shape` and `fire_rate`.
    fn masks(&self, shape: GridShape) -> PyResult<Option<&Binary<'py>>> {
        let steps = self.steps;
        let masks = self.masks.as_ref();
        if let Some(m) = masks {
            let want = [shape.batch, steps, shape.height, shape.width];
            if m.shape() != want {
                return Err(ShapeError::new_err(format!(
                    "masks: expected shape (B, steps, H, W) = {want:?}, got {:?}",
                    m.shape()
                )));
            }
            if self.fire_rate.is_some() {
                return Err(InvalidValueError::new_err(
                    "give either masks or fire_rate, not both",
                ));
            }
        }
        Ok(masks)
    }

    /// The damage plane, checked against `shape`.
    fn damage(&self, shape: GridShape) -> PyResult<Option<&Binary<'py>>> {
        let damage = self.damage.as_ref();
        if let Some(d) = damage {
            let ds = d.shape();
            let hw = [shape.height, shape.width];
            if !(ds == hw || ds == [shape.batch, shape.height, shape.width]) {
                return Err(ShapeError::new_err(format!(
                    "damage: expected shape (H, W) = {hw:?} or (B, H, W), got {ds:?}"
                )));
            }
        }
        Ok(damage)
    }
}
