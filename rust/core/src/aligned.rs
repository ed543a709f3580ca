//! Number buffers that start on a cache line.
//!
//! The kernels read and write 64-float rows with 512-bit (or 256-bit) loads and stores.
//! A `Vec<f32>` is only 16-byte aligned, so every such access straddled two cache lines
//! and cost two; on the 64-byte boundary of this buffer a chunk-step is markedly faster
//! (`examples/sections.rs`, docs/performance.md).

use std::ops::{Deref, DerefMut};

/// One 64-byte cache line of zeros to start with.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// Element types whose all-zero bit pattern is the value 0 and that any bytes may hold
/// (sealed: the unsafe casts below rely on it).
pub trait Plain: sealed::Sealed + Copy + 'static {}
impl Plain for f32 {}
impl Plain for f64 {}
impl Plain for u64 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
    impl Sealed for u64 {}
}

/// A zero-initialised, fixed-length buffer whose first element is 64-byte aligned.
/// It derefs to `[T]`.
#[derive(Clone)]
pub struct AlignedVec<T: Plain = f32> {
    lines: Vec<Line>,
    len: usize,
    _element: std::marker::PhantomData<T>,
}

impl<T: Plain> AlignedVec<T> {
    pub fn zeros(len: usize) -> AlignedVec<T> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("buffer size overflows usize");
        AlignedVec {
            lines: vec![Line([0; 64]); bytes.div_ceil(64)],
            len,
            _element: std::marker::PhantomData,
        }
    }

    /// [`AlignedVec::zeros`] that reports a failed allocation (its size in bytes)
    /// instead of aborting the process: the system may refuse memory below the
    /// engine's cap (`ulimit -v`, cgroups, memory taken meanwhile). Zeroed pages come
    /// from the allocator as `zeros` gets them, untouched until used.
    pub fn try_zeros(len: usize) -> std::result::Result<AlignedVec<T>, usize> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or(usize::MAX)?;
        let n = bytes.div_ceil(64);
        let lines = if n == 0 {
            Vec::new()
        } else {
            let layout = std::alloc::Layout::array::<Line>(n).map_err(|_| bytes)?;
            // SAFETY: the layout has a non-zero size; all-zero bytes are a valid `Line`.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<Line>();
            if ptr.is_null() {
                return Err(bytes);
            }
            // SAFETY: `ptr` comes from the global allocator with the layout of `n`
            // `Line`s, all initialised (zeroed): a `Vec` of length and capacity `n`.
            unsafe { Vec::from_raw_parts(ptr, n, n) }
        };
        Ok(AlignedVec {
            lines,
            len,
            _element: std::marker::PhantomData,
        })
    }

    pub fn from_slice(values: &[T]) -> AlignedVec<T> {
        let mut v = AlignedVec::zeros(values.len());
        v.copy_from_slice(values);
        v
    }
}

impl<T: Plain> Deref for AlignedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the lines are `len * size_of::<T>()` or more contiguous initialised
        // bytes, aligned to 64 (enough for any `Plain` type), and every bit pattern is a
        // valid `T`.
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }
}

impl<T: Plain> DerefMut for AlignedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, borrowed mutably through `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

impl<T: Plain + std::fmt::Debug> std::fmt::Debug for AlignedVec<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_zeros_reports_a_refused_allocation_instead_of_aborting() {
        let v = AlignedVec::<f32>::try_zeros(1000).unwrap();
        assert_eq!(v.len(), 1000);
        assert!(v.iter().all(|&x| x == 0.0));
        assert_eq!(v.as_ptr() as usize % 64, 0);
        assert!(AlignedVec::<f32>::try_zeros(0).unwrap().is_empty());
        // More than any address space: refused, reported with its size.
        assert!(matches!(
            AlignedVec::<f64>::try_zeros(usize::MAX / 4),
            Err(usize::MAX)
        ));
        // black_box: in a release build the optimizer may drop an allocation that is
        // never used, and report success.
        let huge = (1usize << 62) / 4;
        assert!(std::hint::black_box(AlignedVec::<f32>::try_zeros(huge)).is_err());
    }

    #[test]
    fn starts_on_a_cache_line_and_holds_exactly_its_length() {
        for len in [0, 1, 15, 16, 17, 64 * 337] {
            let mut v: AlignedVec = AlignedVec::zeros(len);
            assert_eq!(v.as_ptr() as usize % 64, 0);
            assert_eq!(v.len(), len);
            assert!(v.iter().all(|&x| x == 0.0));
            v.iter_mut().enumerate().for_each(|(i, x)| *x = i as f32);
            let copy = AlignedVec::from_slice(&v);
            assert_eq!(&copy[..], &v[..]);
            let sums = AlignedVec::<f64>::zeros(len);
            assert_eq!((sums.as_ptr() as usize % 64, sums.len()), (0, len));
        }
    }
}
