//! The packed layout of the slot engine: one bit per cell.
//!
//! **Layout.** One bit per cell. The state is `B·H` grid rows, each `C` channel rows
//! of `nw = ⌈W/64⌉` words: channel `c` of word `i` of grid row `row = b·H + r` is
//! `state[(row·C + c)·nw + i]`; bit `k` of word `i` is column `64·i + k`, bits past `W`
//! are kept 0. Cells are numbered by word `n = row·nw + i` (masks use this order).
//! Vertical neighbours are the rows above and below; horizontal neighbours are one-bit
//! shifts of whole row segments with the carry taken from the adjacent word (or the
//! wrapped / zero column at the grid edge). No per-bit gathers.

use rayon::prelude::*;

use crate::grid::GridShape;

/// Sizes of one packed grid and how its edges behave.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geo {
    pub(crate) height: usize,
    pub(crate) width: usize,
    pub(crate) channels: usize,
    pub(crate) periodic: bool,
    /// Words per grid row, `⌈W/64⌉`.
    pub(crate) nw: usize,
    /// Words of one channel of the state, `B·H·nw` (the buffer holds `C` times that).
    pub(crate) n_words: usize,
    /// Valid bits of a row's last word.
    pub(crate) last_mask: u64,
    /// Bit of column `W - 1` in a row's last word.
    pub(crate) wrap_bit: u32,
}

impl Geo {
    pub(crate) fn new(shape: GridShape, channels: usize, periodic: bool) -> Geo {
        let nw = shape.width.div_ceil(64);
        let tail = shape.width % 64;
        Geo {
            height: shape.height,
            width: shape.width,
            channels,
            periodic,
            nw,
            n_words: shape.batch * shape.height * nw,
            last_mask: if tail == 0 { !0 } else { (1u64 << tail) - 1 },
            wrap_bit: ((shape.width - 1) % 64) as u32,
        }
    }

    /// Grid rows (`b·H + r`) above, at and below `row` (row `r` of its board); `None`
    /// outside a zero grid.
    #[inline(always)]
    pub(crate) fn neighbour_rows(&self, row: usize, r: usize) -> [Option<usize>; 3] {
        let h = self.height;
        let up = if r > 0 {
            Some(row - 1)
        } else if self.periodic {
            Some(row + h - 1)
        } else {
            None
        };
        let down = if r + 1 < h {
            Some(row + 1)
        } else if self.periodic {
            Some(row + 1 - h)
        } else {
            None
        };
        [up, Some(row), down]
    }

    /// `shifted_segment` of the one word of grid row `row` when rows are one word.
    #[inline(always)]
    pub(crate) fn shifted_word(&self, state: &[u64], row: usize, c: usize, dc: usize) -> u64 {
        debug_assert_eq!(self.nw, 1);
        let w = state[row * self.channels + c];
        let wrap = |bit: u64| if self.periodic { bit } else { 0 };
        match dc {
            1 => w,
            0 => (w << 1) | wrap((w >> self.wrap_bit) & 1),
            _ => (w >> 1) | wrap((w & 1) << self.wrap_bit),
        }
    }

    /// Words `i0 .. i0 + dst.len()` (all in grid row `row`) of channel `c`, seen from
    /// column offset `dc - 1`: bit `k` of word `i` holds the cell at column
    /// `64·i + k + dc - 1`, wrapped or 0 past the edges.
    #[inline(always)]
    pub(crate) fn shifted_segment(
        &self,
        state: &[u64],
        row: usize,
        i0: usize,
        c: usize,
        dc: usize,
        dst: &mut [u64],
    ) {
        let (nw, len) = (self.nw, dst.len());
        let words = &state[(row * self.channels + c) * nw..][..nw];
        let src = &words[i0..i0 + len];
        match dc {
            1 => dst.copy_from_slice(src),
            0 => {
                // Bit k takes bit k - 1: the carry comes from the word before.
                let carry = if i0 > 0 {
                    words[i0 - 1] >> 63
                } else if self.periodic {
                    (words[nw - 1] >> self.wrap_bit) & 1
                } else {
                    0
                };
                dst[0] = (src[0] << 1) | carry;
                for (d, w) in dst[1..].iter_mut().zip(src.windows(2)) {
                    *d = (w[1] << 1) | (w[0] >> 63);
                }
            }
            _ => {
                // Bit k takes bit k + 1: the carry comes from the word after.
                let end = i0 + len;
                let carry = if end < nw {
                    words[end] << 63
                } else if self.periodic {
                    (words[0] & 1) << self.wrap_bit
                } else {
                    0
                };
                for (d, w) in dst.iter_mut().zip(src.windows(2)) {
                    *d = (w[0] >> 1) | (w[1] << 63);
                }
                dst[len - 1] = (src[len - 1] >> 1) | carry;
            }
        }
    }
}

/// `B × H × W` cells (0/1 bytes, any nonzero counts as 1), one plane, packed into rows
/// of `nw` words (`dst`: `B·H·nw` words).
pub(crate) fn pack_plane(geo: &Geo, src: &[u8], dst: &mut [u64]) {
    let w = geo.width;
    dst.par_chunks_mut(geo.nw)
        .zip(src.par_chunks(w))
        .for_each(|(words, cells)| pack_row(cells, 1, words));
}

/// Packs `cells[k·stride]` for k < W into `words`.
#[inline]
pub(crate) fn pack_row(cells: &[u8], stride: usize, words: &mut [u64]) {
    for (i, word) in words.iter_mut().enumerate() {
        let mut v = 0u64;
        for (k, cell) in cells[i * 64 * stride..]
            .iter()
            .step_by(stride)
            .take(64)
            .enumerate()
        {
            v |= ((*cell != 0) as u64) << k;
        }
        *word = v;
    }
}

/// Checks a read of channels `channels` of a `channels_n`-channel grid of `cells` cells
/// into `out` (`cells · channels.len()` bytes): a bad request is the caller's bug.
pub(crate) fn check_channel_read(channels: &[usize], channels_n: usize, cells: usize, out: &[u8]) {
    assert!(
        channels.iter().all(|&c| c < channels_n),
        "read: channel out of range"
    );
    assert_eq!(out.len(), cells * channels.len(), "read: B*H*W*L bytes");
}
