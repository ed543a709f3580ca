//! Copies between rows of floats, and the buffers that the tasks of a wavefront share.

/// Copies the first `len` floats of `count` rows, row `i` of `src` (`src_len` floats
/// from a pointer) starting at `i · src_stride` and of `dst` at `i · dst_stride`, a piece
/// at a time for all rows (`pieces`): the branches on `len` are taken once, not once per
/// row. Safety: the source floats are valid to read, and no thread writes the ones
/// copied during the call.
pub(super) unsafe fn copy_rows(
    dst: &mut [f32],
    (src, src_len): (*const f32, usize),
    len: usize,
    (dst_stride, src_stride): (usize, usize),
    count: usize,
) {
    if count == 0 {
        return;
    }
    assert!((count - 1) * dst_stride + len <= dst.len());
    assert!((count - 1) * src_stride + len <= src_len);
    copy_rows_unchecked(dst.as_mut_ptr(), src, len, (dst_stride, src_stride), count)
}

/// `copy_rows` without bounds. Safety: `dst` and `src` are valid for every row's `len`
/// floats, and do not overlap.
#[inline(always)]
unsafe fn copy_rows_unchecked(
    dst: *mut f32,
    src: *const f32,
    len: usize,
    strides: (usize, usize),
    count: usize,
) {
    unsafe fn piece<const N: usize>(
        mut dst: *mut f32,
        mut src: *const f32,
        (dst_stride, src_stride): (usize, usize),
        count: usize,
    ) {
        for _ in 0..count {
            if N == 1 {
                // One float per row: left to itself, the compiler turns the loop into
                // AVX-512 gathers and scatters, several times slower on AMD than plain
                // loads and stores (docs/performance.md).
                dst.write_volatile(src.read_volatile());
            } else {
                let piece = (src as *const [f32; N]).read_unaligned();
                (dst as *mut [f32; N]).write_unaligned(piece);
            }
            dst = dst.add(dst_stride);
            src = src.add(src_stride);
        }
    }
    pieces(len, |off, n| {
        let (d, s) = (dst.add(off), src.add(off));
        match n {
            16 => piece::<16>(d, s, strides, count),
            4 => piece::<4>(d, s, strides, count),
            _ => piece::<1>(d, s, strides, count),
        }
    });
}

/// Cuts `0..len` into pieces of 16, 4 or 1 floats, `(offset, size)`: the last of a size
/// ends where the run ends and may overlap the one before (the same floats again).
fn pieces(len: usize, mut piece: impl FnMut(usize, usize)) {
    let n = match len {
        16.. => 16,
        4.. => 4,
        _ => 1,
    };
    for off in (0..len - n).step_by(n).chain([len - n]) {
        piece(off, n);
    }
}

/// A buffer that concurrent tasks read and write at disjoint places: the wavefront's
/// dependencies (`Layout::chunks`) keep a task off the places others are writing.
pub(super) struct SharedRows<T = f32> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: users promise disjoint places (`slice`, `slice_mut`, `write_rows`).
unsafe impl<T: Send> Sync for SharedRows<T> {}

impl<T> SharedRows<T> {
    pub(super) fn new(buf: &mut [T]) -> SharedRows<T> {
        SharedRows {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        }
    }

    /// The first element, for reads through a raw pointer (`Layout::fill_patch_from`).
    pub(super) fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// Elements `at..at + len`, to read. Safety: no thread writes them meanwhile.
    pub(super) unsafe fn slice(&self, at: usize, len: usize) -> &[T] {
        assert!(at + len <= self.len);
        std::slice::from_raw_parts(self.ptr.add(at), len)
    }

    /// Elements `at..at + len`, to write. Safety: no other thread reads or writes
    /// them meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn slice_mut(&self, at: usize, len: usize) -> &mut [T] {
        assert!(at + len <= self.len);
        std::slice::from_raw_parts_mut(self.ptr.add(at), len)
    }
}

impl SharedRows {
    /// `copy_rows` into this buffer from `at` on, of `len` floats of `rows` rows one
    /// every `stride` floats (in both: a chunk's patch rows of one entry). Safety: no
    /// other thread reads or writes those floats while the buffer is shared.
    pub(super) unsafe fn write_rows(
        &self,
        at: usize,
        src: &[f32],
        (len, stride): (usize, usize),
        rows: usize,
    ) {
        if rows == 0 {
            return;
        }
        assert!(at + (rows - 1) * stride + len <= self.len);
        assert!((rows - 1) * stride + len <= src.len());
        copy_rows_unchecked(self.ptr.add(at), src.as_ptr(), len, (stride, stride), rows)
    }
}
