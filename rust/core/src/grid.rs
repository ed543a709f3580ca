//! The size of a batch of grids, shared by the float and the hard engine (a leaf
//! module: it imports nothing of the crate).

/// Batch and spatial size of a grid; channels come from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GridShape {
    pub batch: usize,
    pub height: usize,
    pub width: usize,
}

impl GridShape {
    /// Cells of all grids; saturates rather than wraps, so that an absurd shape fails
    /// the size and memory checks instead of passing them as a small one.
    pub fn cells(&self) -> usize {
        self.batch
            .saturating_mul(self.height)
            .saturating_mul(self.width)
    }
}
