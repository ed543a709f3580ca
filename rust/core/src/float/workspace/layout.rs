//! Where each cell's neighbours are in the chunk-major state buffers, and the copies
//! that follow from it: a chunk's patch rows gathered from the state, its patch
//! gradients scattered to the chunks whose cells they belong to, and their sum.

use super::rows::{copy_rows, SharedRows};
use crate::float::kernels::Lanes;
use crate::float::wavefront;
use crate::grid::GridShape;
use crate::simd::{lanes_used, LANES, MAX_CHUNK_CELLS};

/// Where each cell's neighbours are, for one grid shape and boundary.
pub(crate) struct Layout {
    pub shape: GridShape,
    pub channels: usize,
    /// Cells per chunk: the floats of a state or arena row.
    pub row_len: usize,
    pub n_chunks: usize,
    /// State addresses (channel 0) of patch entry `e` of chunk `k`'s cells.
    nbr: AddrSpans,
    /// Where chunk `k`'s patch gradients go, chunk by chunk (`Scatter`).
    scatter: Vec<Vec<Scatter>>,
    /// The chunks as the wavefront sees them: the ones whose cells chunk `k`'s cells
    /// see (`k` included; the 3×3 neighbourhood is symmetric, and so is this), which its
    /// task of a step waits for in the step before, and their cells.
    pub chunks: wavefront::Chunks,
}

/// Lanes `src..src + len` of patch-gradient row `e` (of every channel) of one chunk
/// are the gradients that the cells `at..at + len` of chunk `to` receive through their
/// patch entry `e`: they are copied to chunk `to`'s rows of the patch-gradient buffer,
/// so that a chunk's gather reads its own nine rows per channel, whole. Each
/// (chunk, entry, lane) of that buffer has one source at most; the others stay zero.
#[derive(Debug, Clone, Copy)]
struct Scatter {
    to: u32,
    e: u8,
    at: u8,
    len: u8,
    src: u8,
}

/// Lanes `at..at + len` of a chunk's row take the `len` floats from address `src` on,
/// or zeros where `src` is `ZERO` (cells outside a zero-padded grid, padding cells).
#[derive(Debug, Clone, Copy)]
struct AddrSpan {
    at: u8,
    len: u8,
    src: u32,
}

impl AddrSpan {
    const ZERO: u32 = u32::MAX;
}

/// One address per (entry, cell), stored as spans of consecutive addresses: neighbours
/// of consecutive cells are mostly consecutive, so a chunk's row is copied or summed a
/// slice at a time instead of a lane at a time.
struct AddrSpans {
    spans: Vec<AddrSpan>,
    /// Spans of chunk `k`, entry `e`: `spans[start[9k + e]..start[9k + e + 1]]`.
    start: Vec<usize>,
    /// Lanes a span copies from the wrong address, with their own (`AddrSpan::ZERO`:
    /// zero), written after the row's spans: `fixes[fix_start[9k + e]..fix_start[9k + e
    /// + 1]]`. Empty unless the spans were built with `fixes` (`AddrSpans::new`).
    fixes: Vec<(u8, u32)>,
    fix_start: Vec<usize>,
}

impl AddrSpans {
    /// From `addr[e * n_pad + n]`; `zero` is the address standing for a zero cell. With
    /// `fixes`, a span goes on over one lane off its addresses when the next lane is on
    /// them again (a neighbour across a periodic grid row's wrap, or a zero beyond a
    /// grid's edge), and the lane goes to `fixes`: a wide grid's patch row is then one
    /// span per source chunk instead of one per grid row.
    fn new(addr: &[u32], (n_pad, row_len): (usize, usize), zero: u32, fixes: bool) -> AddrSpans {
        let mut spans = Vec::new();
        let mut start = vec![0];
        let (mut fixed, mut fix_start) = (Vec::new(), vec![0]);
        for k in 0..n_pad / row_len {
            for e in 0..9 {
                let lanes = &addr[e * n_pad + k * row_len..][..row_len];
                let src = |i: usize| {
                    if lanes[i] == zero {
                        AddrSpan::ZERO
                    } else {
                        lanes[i]
                    }
                };
                let mut i = 0;
                while i < row_len {
                    let first = src(i);
                    // What lane `i + len` must read to extend the span (zeros stay zeros).
                    let extends = |len: usize| match first {
                        AddrSpan::ZERO => AddrSpan::ZERO,
                        _ => first + len as u32,
                    };
                    let mut len = 1;
                    while i + len < row_len {
                        if src(i + len) == extends(len) {
                            len += 1;
                        } else if fixes
                            && first != AddrSpan::ZERO
                            && i + len + 1 < row_len
                            && src(i + len + 1) == extends(len + 1)
                        {
                            fixed.push(((i + len) as u8, src(i + len)));
                            len += 2;
                        } else {
                            break;
                        }
                    }
                    spans.push(AddrSpan {
                        at: i as u8,
                        len: len as u8,
                        src: first,
                    });
                    i += len;
                }
                start.push(spans.len());
                fix_start.push(fixed.len());
            }
        }
        AddrSpans {
            spans,
            start,
            fixes: fixed,
            fix_start,
        }
    }

    fn fixes(&self, k: usize, e: usize) -> &[(u8, u32)] {
        &self.fixes[self.fix_start[9 * k + e]..self.fix_start[9 * k + e + 1]]
    }

    fn get(&self, k: usize, e: usize) -> &[AddrSpan] {
        &self.spans[self.start[9 * k + e]..self.start[9 * k + e + 1]]
    }
}

/// The cell at (r + dr, c + dc) from cell `n` = (b, r, c), wrapped around a periodic
/// grid, or None outside a zero-padded one.
fn neighbour(
    shape: GridShape,
    periodic: bool,
    n: usize,
    (dr, dc): (isize, isize),
) -> Option<usize> {
    let (h, w) = (shape.height as isize, shape.width as isize);
    let hw = shape.height * shape.width;
    let (b, rc) = (n / hw, n % hw);
    let (mut r, mut c) = (
        (rc / shape.width) as isize + dr,
        (rc % shape.width) as isize + dc,
    );
    if periodic {
        r = r.rem_euclid(h);
        c = c.rem_euclid(w);
    } else if r < 0 || r >= h || c < 0 || c >= w {
        return None;
    }
    Some(b * hw + (r * w + c) as usize)
}

/// Each chunk's `Scatter` list, from the patch-gradient address of every (chunk, entry,
/// lane) that receives a gradient (`inv`, built without fixes: a span never crosses
/// chunks, since the lane past a row is no cell's address).
fn scatter_lists(inv: &AddrSpans, n_chunks: usize, chunk_gpatch: usize) -> Vec<Vec<Scatter>> {
    let mut scatter = vec![Vec::new(); n_chunks];
    for k in 0..n_chunks {
        for e in 0..9 {
            for span in inv.get(k, e).iter().filter(|s| s.src != AddrSpan::ZERO) {
                let (m, lane) = (
                    span.src as usize / chunk_gpatch,
                    span.src as usize % chunk_gpatch,
                );
                scatter[m].push(Scatter {
                    to: k as u32,
                    e: e as u8,
                    at: span.at,
                    len: span.len,
                    src: lane as u8,
                });
            }
        }
    }
    scatter
}

/// Where the gradient w.r.t. the state a step produced comes from.
pub(super) enum Next<'a> {
    /// The last step's: the loss gradient (the chunk's rows).
    Final(&'a [f32]),
    /// An earlier step's: the chunk's patch gradients from the step that read the
    /// state, plus (asynchronous steps) the part that passed through cells that did not
    /// fire. Each slice holds the chunk's rows only.
    Gather {
        gpatch: &'a [f32],
        grad_state: &'a [f32],
        mask: Option<&'a [f32]>,
    },
}

impl Layout {
    pub fn new(shape: GridShape, channels: usize, row_len: usize, periodic: bool) -> Layout {
        // Lanes are stored as u8 (`AddrSpan`, `Scatter`); `Spec::validate` checks the width.
        assert!(row_len <= MAX_CHUNK_CELLS && row_len.is_multiple_of(LANES));
        let n_cells = shape.cells();
        let n_chunks = n_cells.div_ceil(row_len);
        let n_pad = n_chunks * row_len;
        let state_addr = |n: usize| (n / row_len) * channels * row_len + n % row_len;
        let gpatch_addr = |n: usize| (n / row_len) * 9 * channels * row_len + n % row_len;
        let zero_state = state_addr(n_pad) as u32;
        let zero_gpatch = gpatch_addr(n_pad) as u32;
        let mut nbr = vec![zero_state; 9 * n_pad];
        let mut inv = vec![zero_gpatch; 9 * n_pad];
        let mut deps = vec![Vec::new(); n_chunks];
        for e in 0..9 {
            let (dr, dc) = (e as isize / 3 - 1, e as isize % 3 - 1);
            for n in 0..n_cells {
                if let Some(m) = neighbour(shape, periodic, n, (dr, dc)) {
                    nbr[e * n_pad + n] = state_addr(m) as u32;
                    deps[n / row_len].push((m / row_len) as u32);
                }
                if let Some(m) = neighbour(shape, periodic, n, (-dr, -dc)) {
                    inv[e * n_pad + n] = gpatch_addr(m) as u32;
                }
            }
        }
        let inv = AddrSpans::new(&inv, (n_pad, row_len), zero_gpatch, false);
        let scatter = scatter_lists(&inv, n_chunks, 9 * channels * row_len);
        for d in &mut deps {
            d.sort_unstable();
            d.dedup();
        }
        let cells = (0..n_chunks)
            .map(|k| (n_cells - k * row_len).min(row_len))
            .collect();
        Layout {
            shape,
            channels,
            row_len,
            n_chunks,
            nbr: AddrSpans::new(&nbr, (n_pad, row_len), zero_state, true),
            scatter,
            chunks: wavefront::Chunks { deps, cells },
        }
    }

    pub fn n_pad(&self) -> usize {
        self.n_chunks * self.row_len
    }

    /// Floats of one state buffer, including the zero chunk.
    pub fn state_len(&self) -> usize {
        (self.n_chunks + 1) * self.channels * self.row_len
    }

    /// Floats of one chunk of a state buffer.
    pub fn chunk_state_len(&self) -> usize {
        self.channels * self.row_len
    }

    /// Floats of one chunk's patch-gradient rows: 9 per channel.
    pub fn chunk_gpatch_len(&self) -> usize {
        9 * self.channels * self.row_len
    }

    /// Cells of the grid in chunk `k`: `row_len` but in the last chunk, whose padding
    /// cells past the grid the kernels skip, a SIMD block at a time.
    pub fn chunk_cells(&self, k: usize) -> usize {
        self.chunks.cells[k]
    }

    /// Chunk `k` as the kernels see it: its cells in rows of `row_len` floats.
    pub fn lanes(&self, k: usize) -> Lanes {
        Lanes {
            cells: self.chunk_cells(k),
            width: self.row_len,
        }
    }

    /// Address of (cell, channel) in a state buffer.
    pub fn addr(&self, n: usize, c: usize) -> usize {
        let row_len = self.row_len;
        (n / row_len) * self.channels * row_len + c * row_len + n % row_len
    }

    /// Writes the 9 patch rows of every channel of chunk `k` into the arena.
    ///
    /// The spans of an entry are the same for every channel, so a span is cut into
    /// fixed pieces once (`pieces`) and each piece copied for every channel in turn: a
    /// branch-free strided copy, several times faster than copying span by span and
    /// channel by channel (docs/performance.md).
    pub fn fill_patch(&self, state: &[f32], k: usize, act: &mut [f32]) {
        // SAFETY: the slice is valid, and no one writes it while it is borrowed.
        unsafe { self.fill_patch_from(state.as_ptr(), state.len(), k, act) }
    }

    /// `fill_patch` from a state buffer of `state_len` floats at `state`, of which it
    /// reads the chunks in `chunks.deps[k]` and the zero chunk. Safety: those floats
    /// are valid to read, and no thread writes them during the call.
    pub unsafe fn fill_patch_from(
        &self,
        state: *const f32,
        state_len: usize,
        k: usize,
        act: &mut [f32],
    ) {
        // Lanes `at..at + len` of entry `e`'s row of every channel, from state address
        // `src` on (`AddrSpan::ZERO`: zeros).
        let row_len = self.row_len;
        let mut set = |e: usize, at: usize, len: usize, src: u32| {
            let rows = &mut act[e * row_len + at..];
            match src {
                AddrSpan::ZERO => {
                    for row in rows.chunks_mut(9 * row_len).take(self.channels) {
                        row[..len].iter_mut().for_each(|v| *v = 0.0);
                    }
                }
                src => {
                    let (from, avail) = (
                        state.add(src as usize),
                        state_len.saturating_sub(src as usize),
                    );
                    copy_rows(
                        rows,
                        (from, avail),
                        len,
                        (9 * row_len, row_len),
                        self.channels,
                    )
                }
            }
        };
        // The kernels read no lane past the last block holding cells.
        let lanes = lanes_used(self.chunk_cells(k));
        for e in 0..9 {
            for span in self.nbr.get(k, e) {
                let at = span.at as usize;
                if at < lanes {
                    set(e, at, (span.len as usize).min(lanes - at), span.src);
                }
            }
            for &(lane, src) in self.nbr.fixes(k, e) {
                if (lane as usize) < lanes {
                    set(e, lane as usize, 1, src);
                }
            }
        }
    }

    /// Writes chunk `k`'s gradient w.r.t. a state (`chunk_len` floats) into `g`.
    pub(super) fn state_gradient(&self, k: usize, next: &Next<'_>, g: &mut [f32]) {
        let (gpatch, grad_state, mask) = match *next {
            Next::Final(grad) => {
                g.copy_from_slice(grad);
                return;
            }
            Next::Gather {
                gpatch,
                grad_state,
                mask,
            } => (gpatch, grad_state, mask),
        };
        // The chunk's own nine rows per channel, which the chunks that read its cells
        // scattered there (`scatter_patch_gradient`), summed a block of lanes at a time
        // in registers: a loop over a lane count known only at run time compiled to
        // scalar adds through the stack (docs/performance.md). Every cell adds its terms
        // in entry order, then the pass-through. Entries with no source are +0, and a
        // sum that starts at +0 is never -0, so adding a zero of either sign (a patch
        // gradient's first gate stores it) leaves it as it is.
        const BLOCK: usize = LANES;
        let row_len = self.row_len;
        let blocks = lanes_used(self.chunk_cells(k)) / BLOCK;
        for (row, patch) in g
            .chunks_exact_mut(row_len)
            .zip(gpatch.chunks_exact(9 * row_len))
        {
            // The whole row: zeroing only the lanes past the blocks compiled the loop
            // below differently, and slower (docs/performance.md).
            row.fill(0.0);
            for (b, out) in row.chunks_exact_mut(BLOCK).take(blocks).enumerate() {
                let mut sum = [0f32; BLOCK];
                for entry in patch.chunks_exact(row_len) {
                    let entry = &entry[b * BLOCK..][..BLOCK];
                    for i in 0..BLOCK {
                        sum[i] += entry[i];
                    }
                }
                out.copy_from_slice(&sum);
            }
        }
        if let Some(m) = mask {
            for (row, passed) in g
                .chunks_exact_mut(row_len)
                .zip(grad_state.chunks_exact(row_len))
            {
                for i in 0..row_len {
                    row[i] += passed[i] * (1.0 - m[i]);
                }
            }
        }
        // Padding cells past the grid have no gradient.
        let real = self.chunk_cells(k);
        for row in g.chunks_exact_mut(row_len) {
            row[real..].iter_mut().for_each(|v| *v = 0.0);
        }
    }

    /// Copies chunk `k`'s patch gradients (`grad`'s first `9 · channels` rows) to the
    /// chunks whose cells receive them (`Scatter`).
    pub(super) fn scatter_patch_gradient(&self, k: usize, grad: &[f32], out: &SharedRows) {
        let row_len = self.row_len;
        let chunk_gpatch = self.chunk_gpatch_len();
        for s in &self.scatter[k] {
            let row = s.e as usize * row_len;
            let src = &grad[row + s.src as usize..];
            let at = s.to as usize * chunk_gpatch + row + s.at as usize;
            // SAFETY: `(s.to, row of every channel, s.at..s.at + s.len)` has this chunk
            // as its only source, so no other task writes it, and its reader (chunk
            // `s.to`'s task of the step after, in `chunks.deps[k]`) waits for this task.
            unsafe { out.write_rows(at, src, (s.len as usize, 9 * row_len), self.channels) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunk widths the layout tests run with: one SIMD block, the default, a width
    /// that is not a power of two, and the widest.
    const ROW_LENS: [usize; 4] = [16, 64, 80, 128];

    /// The scatter writes each (chunk, entry, lane) of the patch-gradient buffer from one
    /// chunk at most (the tasks of a region write it without locks), and exactly the
    /// cells' neighbours: a cell in the grid receives the gradient of entry `e` from the
    /// cell it appears in as entry `e`, and a padding cell nothing.
    #[test]
    fn scatter_reaches_every_neighbour_once() {
        for (periodic, row_len) in [false, true]
            .into_iter()
            .flat_map(|p| ROW_LENS.map(|r| (p, r)))
        {
            let shape = GridShape {
                batch: 2,
                height: 9,
                width: 13,
            };
            let layout = Layout::new(shape, 3, row_len, periodic);
            let chunk_gpatch = 9 * row_len;
            // (destination chunk, entry, lane) -> (source chunk, source lane)
            let mut from = vec![None; layout.n_chunks * chunk_gpatch];
            for (m, list) in layout.scatter.iter().enumerate() {
                for s in list {
                    for j in 0..s.len as usize {
                        let at = s.to as usize * chunk_gpatch + s.e as usize * row_len;
                        let slot = &mut from[at + s.at as usize + j];
                        assert!(slot.is_none(), "written twice");
                        *slot = Some(m * row_len + s.src as usize + j);
                    }
                }
            }
            let (h, w) = (shape.height as isize, shape.width as isize);
            for n in 0..layout.n_pad() {
                for e in 0..9 {
                    let (dr, dc) = (e as isize / 3 - 1, e as isize % 3 - 1);
                    let want = (n < shape.cells()).then(|| {
                        let hw = (h * w) as usize;
                        let (b, r, c) = (n / hw, (n % hw) as isize / w, (n % hw) as isize % w);
                        let (r, c) = (r - dr, c - dc);
                        let inside = (0..h).contains(&r) && (0..w).contains(&c);
                        let (r, c) = (r.rem_euclid(h), c.rem_euclid(w));
                        (periodic || inside).then_some(b * hw + (r * w + c) as usize)
                    });
                    let got = from[(n / row_len) * chunk_gpatch + e * row_len + n % row_len];
                    assert_eq!(got, want.flatten(), "cell {n} entry {e}");
                }
            }
        }
    }

    /// The gather sums each cell's nine patch-gradient entries in entry order (then the
    /// pass-through), a block of lanes at a time: the same bits as a sum cell by cell,
    /// +0 past the grid's cells, over a partly filled last chunk.
    #[test]
    fn gather_sums_each_cells_entries_in_order() {
        for row_len in ROW_LENS {
            gather_sums_in_order(row_len);
        }
    }

    fn gather_sums_in_order(row_len: usize) {
        let shape = GridShape {
            batch: 1,
            height: 7,
            width: 11,
        };
        let channels = 2;
        let layout = Layout::new(shape, channels, row_len, true);
        let patch_len = 9 * channels * row_len;
        // Values of many magnitudes, so that another order of addition shows.
        let value = |i: usize| ((i * 2654435761) % 1000) as f32 * 10f32.powi((i % 7) as i32 - 3);
        let gpatch: Vec<f32> = (0..layout.n_chunks * patch_len)
            .map(|i| value(i) - 400.0)
            .collect();
        let passed: Vec<f32> = (0..channels * row_len).map(|i| value(i + 7)).collect();
        let mask: Vec<f32> = (0..row_len).map(|i| (i % 3 == 0) as u8 as f32).collect();
        for k in 0..layout.n_chunks {
            for mask in [None, Some(&mask[..])] {
                let next = Next::Gather {
                    gpatch: &gpatch[k * patch_len..][..patch_len],
                    grad_state: &passed,
                    mask,
                };
                let mut g = vec![f32::NAN; channels * row_len];
                layout.state_gradient(k, &next, &mut g);
                for (c, lane) in (0..channels).flat_map(|c| (0..row_len).map(move |l| (c, l))) {
                    let mut want = 0f32;
                    if lane < layout.chunk_cells(k) {
                        for e in 0..9 {
                            want += gpatch[k * patch_len + (c * 9 + e) * row_len + lane];
                        }
                        if let Some(m) = mask {
                            want += passed[c * row_len + lane] * (1.0 - m[lane]);
                        }
                    }
                    let got = g[c * row_len + lane];
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "chunk {k} channel {c} lane {lane}"
                    );
                }
            }
        }
    }

    /// The patch fill writes every (channel, entry, lane) of a chunk with the value of
    /// that neighbour of that cell, zero outside a zero-padded grid and for padding
    /// cells, on grids whose rows wrap inside chunks and spans cross chunks; it leaves
    /// the lanes past the last block holding cells, which the kernels do not read.
    #[test]
    fn fill_patch_writes_every_neighbour() {
        let grids = [(false, 13), (true, 13), (true, 20), (false, 70)];
        for ((periodic, width), row_len) in grids.into_iter().flat_map(|g| ROW_LENS.map(|r| (g, r)))
        {
            let shape = GridShape {
                batch: 2,
                height: 9,
                width,
            };
            let channels = 3;
            let layout = Layout::new(shape, channels, row_len, periodic);
            let mut state = vec![0f32; layout.state_len()];
            for n in 0..shape.cells() {
                for c in 0..channels {
                    state[layout.addr(n, c)] = (1 + n * channels + c) as f32;
                }
            }
            let (h, w) = (shape.height as isize, width as isize);
            for k in 0..layout.n_chunks {
                let mut act = vec![f32::NAN; 9 * channels * row_len];
                layout.fill_patch(&state, k, &mut act);
                let lanes = lanes_used(layout.chunk_cells(k));
                for lane in 0..row_len {
                    let n = k * row_len + lane;
                    for (c, e) in (0..channels).flat_map(|c| (0..9).map(move |e| (c, e))) {
                        let (dr, dc) = (e as isize / 3 - 1, e as isize % 3 - 1);
                        let want = if n < shape.cells() {
                            let hw = (h * w) as usize;
                            let (b, r, col) =
                                (n / hw, (n % hw) as isize / w, (n % hw) as isize % w);
                            let (r, col) = (r + dr, col + dc);
                            let inside = (0..h).contains(&r) && (0..w).contains(&col);
                            let (r, col) = (r.rem_euclid(h), col.rem_euclid(w));
                            let m = b * hw + (r * w + col) as usize;
                            if periodic || inside {
                                (1 + m * channels + c) as f32
                            } else {
                                0.0
                            }
                        } else {
                            0.0
                        };
                        let got = act[(c * 9 + e) * row_len + lane];
                        if lane < lanes {
                            assert_eq!(got, want, "chunk {k} lane {lane} channel {c} entry {e}");
                        } else {
                            assert!(got.is_nan(), "lane {lane} past the blocks written");
                        }
                    }
                }
            }
        }
    }

    /// Expanding the spans gives back every address, whatever mix of consecutive
    /// addresses, jumps and zero cells a chunk holds.
    #[test]
    fn spans_expand_to_the_addresses() {
        let (row_len, zero) = (64, 9999);
        let n_pad = 2 * row_len;
        let addr: Vec<u32> = (0..9 * n_pad)
            .map(|i| match i {
                _ if (i * 7) % 11 == 0 || (40..60).contains(&(i % n_pad)) => zero,
                _ if i % 13 == 0 => 5000 + 3 * i as u32,
                _ => 100 + i as u32,
            })
            .collect();
        let plain = AddrSpans::new(&addr, (n_pad, row_len), zero, false);
        let fixed = AddrSpans::new(&addr, (n_pad, row_len), zero, true);
        assert!(plain.fixes.is_empty() && !fixed.fixes.is_empty());
        assert!(fixed.spans.len() < plain.spans.len());
        for spans in [plain, fixed] {
            for k in 0..2 {
                for e in 0..9 {
                    let mut expanded = Vec::new();
                    for span in spans.get(k, e) {
                        assert_eq!(span.at as usize, expanded.len(), "spans tile the chunk");
                        expanded.extend((0..span.len as u32).map(|j| match span.src {
                            AddrSpan::ZERO => zero,
                            src => src + j,
                        }));
                    }
                    for &(lane, src) in spans.fixes(k, e) {
                        expanded[lane as usize] = if src == AddrSpan::ZERO { zero } else { src };
                    }
                    assert_eq!(expanded, addr[e * n_pad + k * row_len..][..row_len]);
                }
            }
        }
    }
}
