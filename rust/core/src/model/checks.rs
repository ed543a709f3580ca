//! The checks of a model's inputs (grids, targets, rollouts, wiring, values), each
//! before anything changes or is allocated.

use super::Model;
use crate::error::{shape_err, value_err, Result};
use crate::float::Workspace;
use crate::grid::GridShape;
use crate::wiring::Wires;

impl Model {
    pub(super) fn check_grid(
        &self,
        name: &str,
        data: &[f32],
        shape: GridShape,
        channels: usize,
    ) -> Result<()> {
        if shape.batch == 0 || shape.height == 0 || shape.width == 0 {
            return shape_err!("{name}: batch, height and width must be >= 1, got {shape:?}");
        }
        let want = shape.cells() * channels;
        if data.len() != want {
            return shape_err!(
                "{name}: expected {} values (B={} H={} W={} C={channels}), got {}",
                want,
                shape.batch,
                shape.height,
                shape.width,
                data.len()
            );
        }
        check_finite(name, data)
    }

    /// Checks a target grid: all channels, or only the loss channels, per cell.
    pub(super) fn check_target(&self, y: &[f32], shape: GridShape) -> Result<usize> {
        let (c, n_loss) = (self.spec.channels, self.spec.loss_channels.len());
        let per_cell = if y.len() == shape.cells() * c {
            c
        } else {
            n_loss
        };
        self.check_grid("y", y, shape, per_cell)?;
        check_unit_range("y", y)?;
        Ok(per_cell)
    }

    /// Everything a rollout of `steps` steps from `x` needs, checked before any state
    /// changes (a refused call must not advance the mask stream) and before anything
    /// is allocated. `masks`: whether update masks will be drawn or copied; `record`:
    /// whether every grid is returned.
    pub(super) fn check_rollout(
        &self,
        x: &[f32],
        shape: GridShape,
        steps: usize,
        masks: bool,
        record: bool,
    ) -> Result<()> {
        self.check_grid("x", x, shape, self.spec.channels)?;
        check_unit_range("x", x)?;
        self.check_rollout_memory(shape, steps, masks, record)
    }

    /// Whether a rollout of `steps` steps on grids of `shape` fits the memory cap, without
    /// a grid: what `train` checks before it makes a run directory. `masks` and `record`
    /// as `check_rollout`'s.
    pub fn check_rollout_memory(
        &self,
        shape: GridShape,
        steps: usize,
        masks: bool,
        record: bool,
    ) -> Result<()> {
        let c = self.spec.channels;
        if steps == 0 {
            return value_err!("steps must be >= 1, got 0");
        }
        // The masks (B × steps × H × W floats) and recorded grids come on top of the
        // workspace.
        let cells = shape.cells();
        let float_bytes = |n: usize| n.saturating_mul(std::mem::size_of::<f32>());
        let mask_bytes = if masks {
            float_bytes(cells.saturating_mul(steps))
        } else {
            0
        };
        let record_bytes = if record {
            float_bytes(
                cells
                    .saturating_mul(c)
                    .saturating_mul(steps.saturating_add(1)),
            )
        } else {
            0
        };
        Workspace::check_budget(
            &self.program,
            shape,
            steps,
            mask_bytes.saturating_add(record_bytes),
        )
    }
}

pub(super) fn check_wires(name: &str, layers: &[usize], wires: &[Wires]) -> Result<()> {
    if wires.len() != layers.len() - 1 {
        return shape_err!(
            "{name}: expected wires for {} layers, got {}",
            layers.len() - 1,
            wires.len()
        );
    }
    for (i, (w, pair)) in wires.iter().zip(layers.windows(2)).enumerate() {
        w.check(pair[0], pair[1], &format!("{name}_wires_{i}"))?;
    }
    Ok(())
}

pub(super) fn check_unit_range(name: &str, v: &[f32]) -> Result<()> {
    match v.iter().position(|x| !(0.0..=1.0).contains(x)) {
        Some(i) => value_err!(
            "{name}: values must lie in [0, 1], found {} at flat index {i}",
            v[i]
        ),
        None => Ok(()),
    }
}

pub(super) fn check_finite(name: &str, v: &[f32]) -> Result<()> {
    match v.iter().position(|x| !x.is_finite()) {
        Some(i) => value_err!(
            "{name}: values must be finite, found {} at flat index {i}",
            v[i]
        ),
        None => Ok(()),
    }
}
