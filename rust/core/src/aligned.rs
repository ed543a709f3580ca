//! Float buffers that start on a cache line.
//!
//! The kernels read and write 64-float rows with 512-bit (or 256-bit) loads and stores.
//! A `Vec<f32>` is only 16-byte aligned, so every such access straddled two cache lines
//! and cost two; on the 64-byte boundary of this buffer the checkerboard's chunk-step
//! fell from 126 to 104 us (`examples/sections.rs`, docs/performance.md).

use std::ops::{Deref, DerefMut};

/// Floats per 64-byte cache line.
const LINE: usize = 16;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; LINE]);

/// A zero-initialised, fixed-length `f32` buffer whose first element is 64-byte aligned.
/// It derefs to `[f32]`.
#[derive(Clone)]
pub struct AlignedVec {
    lines: Vec<Line>,
    len: usize,
}

impl AlignedVec {
    pub fn zeros(len: usize) -> AlignedVec {
        AlignedVec {
            lines: vec![Line([0.0; LINE]); len.div_ceil(LINE)],
            len,
        }
    }

    pub fn from_slice(values: &[f32]) -> AlignedVec {
        let mut v = AlignedVec::zeros(values.len());
        v.copy_from_slice(values);
        v
    }
}

impl Deref for AlignedVec {
    type Target = [f32];
    fn deref(&self) -> &[f32] {
        // SAFETY: `Line` is `repr(C)` over `[f32; LINE]` with no padding (64 bytes, align
        // 64), so the lines are `lines.len() * LINE >= len` contiguous initialised floats.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }
}

impl DerefMut for AlignedVec {
    fn deref_mut(&mut self) -> &mut [f32] {
        // SAFETY: as in `deref`, borrowed mutably through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

impl std::fmt::Debug for AlignedVec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_cache_line_and_holds_exactly_its_length() {
        for len in [0, 1, 15, 16, 17, 64 * 337] {
            let mut v = AlignedVec::zeros(len);
            assert_eq!(v.as_ptr() as usize % 64, 0);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == 0.0));
            v.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
            let copy = AlignedVec::from_slice(&v);
            assert_eq!(&copy[..], &v[..]);
        }
    }
}
