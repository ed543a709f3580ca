//! Rollouts and back-propagation through time over a batch of grids.
//!
//! The state of every step lives in a chunk-major buffer: chunk `k` holds `C` rows of
//! `row_len` cells (the model's cells per chunk), and one extra all-zero chunk at the
//! end stands for the cells outside a zero-padded grid. A step runs every chunk
//! through the gate program (perception + update) in a per-thread arena; a chunk starts
//! its next step once its neighbours are done with this one (`wavefront`), not once
//! every chunk is. Back-propagation recomputes each step's activations from the stored
//! state instead of keeping them, so memory stays at a few states plus one arena per
//! thread.

use std::sync::Mutex;
use std::time::Instant;

use super::kernels::{self, Lanes};
use super::program::Program;
use super::wavefront;
use crate::aligned::AlignedVec;
use crate::error::{Error, Result};
use crate::grid::GridShape;
use crate::interrupt::Interrupt;
use crate::memory;
use crate::simd::{self, lanes_used, LANES, MAX_CHUNK_CELLS};
use crate::threads;

/// What a workspace buffer is, in the error when the system refuses one.
const WHAT: &str = "a rollout buffer";

/// Where each cell's neighbours are, for one grid shape and boundary.
pub(crate) struct Layout {
    pub shape: GridShape,
    pub channels: usize,
    /// Cells per chunk: the floats of a state or arena row.
    pub row_len: usize,
    pub n_chunks: usize,
    /// State addresses (channel 0) of patch entry `e` of chunk `k`'s cells.
    nbr: Runs,
    /// Where chunk `k`'s patch gradients go, chunk by chunk (`Scatter`).
    scatter: Vec<Vec<Scatter>>,
    /// The chunks as the wavefront sees them: the ones whose cells chunk `k`'s cells
    /// see (`k` included; the 3×3 neighbourhood is symmetric, and so is this), which its
    /// task of a step waits for in the step before, and their cells.
    chunks: wavefront::Chunks,
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
struct Run {
    at: u8,
    len: u8,
    src: u32,
}

impl Run {
    const ZERO: u32 = u32::MAX;
}

/// One address per (entry, cell), stored as runs of consecutive addresses: neighbours
/// of consecutive cells are mostly consecutive, so a chunk's row is copied or summed a
/// slice at a time instead of a lane at a time.
struct Runs {
    runs: Vec<Run>,
    /// Runs of chunk `k`, entry `e`: `runs[start[9k + e]..start[9k + e + 1]]`.
    start: Vec<usize>,
    /// Lanes a run copies from the wrong address, with their own (`Run::ZERO`: zero),
    /// written after the row's runs: `fixes[fix_start[9k + e]..fix_start[9k + e + 1]]`.
    /// Empty unless the runs were built with `fixes` (`Runs::new`).
    fixes: Vec<(u8, u32)>,
    fix_start: Vec<usize>,
}

impl Runs {
    /// From `addr[e * n_pad + n]`; `zero` is the address standing for a zero cell. With
    /// `fixes`, a run goes on over one lane off its addresses when the next lane is on
    /// them again (a neighbour across a periodic grid row's wrap, or a zero beyond a
    /// grid's edge), and the lane goes to `fixes`: a wide grid's patch row is then one
    /// run per source chunk instead of one per grid row.
    fn new(addr: &[u32], (n_pad, row_len): (usize, usize), zero: u32, fixes: bool) -> Runs {
        let mut runs = Vec::new();
        let mut start = vec![0];
        let (mut fixed, mut fix_start) = (Vec::new(), vec![0]);
        for k in 0..n_pad / row_len {
            for e in 0..9 {
                let lanes = &addr[e * n_pad + k * row_len..][..row_len];
                let src = |i: usize| {
                    if lanes[i] == zero {
                        Run::ZERO
                    } else {
                        lanes[i]
                    }
                };
                let mut i = 0;
                while i < row_len {
                    let first = src(i);
                    // What lane `i + len` must read to extend the run (zeros stay zeros).
                    let extends = |len: usize| match first {
                        Run::ZERO => Run::ZERO,
                        _ => first + len as u32,
                    };
                    let mut len = 1;
                    while i + len < row_len {
                        if src(i + len) == extends(len) {
                            len += 1;
                        } else if fixes
                            && first != Run::ZERO
                            && i + len + 1 < row_len
                            && src(i + len + 1) == extends(len + 1)
                        {
                            fixed.push(((i + len) as u8, src(i + len)));
                            len += 2;
                        } else {
                            break;
                        }
                    }
                    runs.push(Run {
                        at: i as u8,
                        len: len as u8,
                        src: first,
                    });
                    i += len;
                }
                start.push(runs.len());
                fix_start.push(fixed.len());
            }
        }
        Runs {
            runs,
            start,
            fixes: fixed,
            fix_start,
        }
    }

    fn fixes(&self, k: usize, e: usize) -> &[(u8, u32)] {
        &self.fixes[self.fix_start[9 * k + e]..self.fix_start[9 * k + e + 1]]
    }

    fn get(&self, k: usize, e: usize) -> &[Run] {
        &self.runs[self.start[9 * k + e]..self.start[9 * k + e + 1]]
    }
}

impl Layout {
    fn new(shape: GridShape, channels: usize, row_len: usize, periodic: bool) -> Layout {
        // Lanes are stored as u8 (`Run`, `Scatter`); `Spec::validate` checks the width.
        assert!(row_len <= MAX_CHUNK_CELLS && row_len.is_multiple_of(LANES));
        let n_cells = shape.cells();
        let n_chunks = n_cells.div_ceil(row_len);
        let n_pad = n_chunks * row_len;
        let (h, w) = (shape.height as isize, shape.width as isize);
        let state_addr = |n: usize| (n / row_len) * channels * row_len + n % row_len;
        let gpatch_addr = |n: usize| (n / row_len) * 9 * channels * row_len + n % row_len;
        // The cell at (r + dr, c + dc) of board b, or None outside a zero-padded grid.
        let shifted = |n: usize, dr: isize, dc: isize| -> Option<usize> {
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
        };
        let zero_state = state_addr(n_pad) as u32;
        let zero_gpatch = gpatch_addr(n_pad) as u32;
        let mut nbr = vec![zero_state; 9 * n_pad];
        let mut inv = vec![zero_gpatch; 9 * n_pad];
        let mut deps = vec![Vec::new(); n_chunks];
        for e in 0..9 {
            let (dr, dc) = (e as isize / 3 - 1, e as isize % 3 - 1);
            for n in 0..n_cells {
                if let Some(m) = shifted(n, dr, dc) {
                    nbr[e * n_pad + n] = state_addr(m) as u32;
                    deps[n / row_len].push((m / row_len) as u32);
                }
                if let Some(m) = shifted(n, -dr, -dc) {
                    inv[e * n_pad + n] = gpatch_addr(m) as u32;
                }
            }
        }
        let inv = Runs::new(&inv, (n_pad, row_len), zero_gpatch, false);
        let chunk_gpatch = 9 * channels * row_len;
        let mut scatter = vec![Vec::new(); n_chunks];
        for k in 0..n_chunks {
            for e in 0..9 {
                for run in inv.get(k, e).iter().filter(|r| r.src != Run::ZERO) {
                    // A run never crosses chunks: the lane past a row is no cell's address.
                    let (m, lane) = (
                        run.src as usize / chunk_gpatch,
                        run.src as usize % chunk_gpatch,
                    );
                    scatter[m].push(Scatter {
                        to: k as u32,
                        e: e as u8,
                        at: run.at,
                        len: run.len,
                        src: lane as u8,
                    });
                }
            }
        }
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
            nbr: Runs::new(&nbr, (n_pad, row_len), zero_state, true),
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

    fn chunk_state_len(&self) -> usize {
        self.channels * self.row_len
    }

    /// Cells of the grid in chunk `k`: `row_len` but in the last chunk, whose padding
    /// cells past the grid the kernels skip, a SIMD block at a time.
    fn chunk_cells(&self, k: usize) -> usize {
        self.chunks.cells[k]
    }

    /// Chunk `k` as the kernels see it: its cells in rows of `row_len` floats.
    fn lanes(&self, k: usize) -> Lanes {
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
    /// The runs of an entry are the same for every channel, so a run is cut into fixed
    /// pieces once (`pieces`) and each piece copied for every channel in turn: a
    /// branch-free strided copy. Copied run by run and channel by channel, the lizard's
    /// fill cost 15 µs per chunk, several times its stores (docs/performance.md).
    fn fill_patch(&self, state: &[f32], k: usize, act: &mut [f32]) {
        // SAFETY: the slice is valid, and no one writes it while it is borrowed.
        unsafe { self.fill_patch_from(state.as_ptr(), state.len(), k, act) }
    }

    /// `fill_patch` from a state buffer of `state_len` floats at `state`, of which it
    /// reads the chunks in `chunks.deps[k]` and the zero chunk. Safety: those floats
    /// are valid to read, and no thread writes them during the call.
    unsafe fn fill_patch_from(
        &self,
        state: *const f32,
        state_len: usize,
        k: usize,
        act: &mut [f32],
    ) {
        // Lanes `at..at + len` of entry `e`'s row of every channel, from state address
        // `src` on (`Run::ZERO`: zeros).
        let row_len = self.row_len;
        let mut set = |e: usize, at: usize, len: usize, src: u32| {
            let rows = &mut act[e * row_len + at..];
            match src {
                Run::ZERO => {
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
            for run in self.nbr.get(k, e) {
                let at = run.at as usize;
                if at < lanes {
                    set(e, at, (run.len as usize).min(lanes - at), run.src);
                }
            }
            for &(lane, src) in self.nbr.fixes(k, e) {
                if (lane as usize) < lanes {
                    set(e, lane as usize, 1, src);
                }
            }
        }
    }
}

/// Copies the first `len` floats of `count` rows, row `i` of `src` (`src_len` floats
/// from a pointer) starting at `i · src_stride` and of `dst` at `i · dst_stride`, a piece
/// at a time for all rows (`pieces`): the branches on `len` are taken once, not once per
/// row. Safety: the source floats are valid to read, and no thread writes the ones
/// copied during the call.
unsafe fn copy_rows(
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
                // loads and stores (a quarter of the lizard's patch fill).
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

/// Scratch rows of one thread: activations and their gradients.
struct Arena {
    act: AlignedVec,
    grad: AlignedVec,
}

/// Every buffer a rollout or a gradient needs, allocated once per grid shape.
pub(crate) struct Workspace {
    pub layout: Layout,
    steps: usize,
    /// `steps + 1` states, each `layout.state_len()` floats.
    pub states: AlignedVec,
    /// Update masks, `steps × n_pad` (1 = the cell updates); empty when synchronous.
    pub masks: Vec<f32>,
    /// Gradients w.r.t. a state, two buffers used in turn by `backward`'s steps.
    grad_state: [AlignedVec; 2],
    /// Gradients w.r.t. every chunk's patch rows (plus a zero chunk), two buffers.
    gpatch: [AlignedVec; 2],
    /// Coefficient-gradient sums, `n_chunks × n_coefs`, reduced in chunk order.
    acc: AlignedVec<f64>,
    arenas: Vec<Mutex<Arena>>,
    /// Rows of the activation and the gradient arena.
    n_rows: (usize, usize),
    /// The perception outputs of every step and chunk (`Reuse`, one block of
    /// `outputs` rows each), when the program has a plan and they fit
    /// (`REUSE_MAX_BYTES`); else empty.
    perception: AlignedVec,
    /// Whether `perception` holds the outputs of the last forward's steps.
    perception_kept: bool,
}

/// The most memory the kept perception outputs may take (the lizard's: 11 MB).
const REUSE_MAX_BYTES: usize = 256 << 20;

impl Workspace {
    /// Bytes a workspace for this shape would take (saturating: absurd step counts
    /// give `usize::MAX`, never a wrapped small number).
    pub fn estimate_bytes(
        program: &Program,
        shape: GridShape,
        steps: usize,
        threads: usize,
    ) -> usize {
        let row_len = program.row_len;
        let n_chunks = shape.cells().div_ceil(row_len);
        let c = program.channels;
        let state_len = (n_chunks + 1) * c * row_len;
        let floats =
            steps
                .saturating_add(1)
                .saturating_mul(state_len)
                .saturating_add(steps.saturating_mul(n_chunks * row_len))
                .saturating_add(2 * state_len)
                .saturating_add(2 * (n_chunks + 1) * 9 * c * row_len)
                .saturating_add(threads.saturating_mul(
                    (program.kept.gates.n_rows + program.backward.n_rows) * row_len,
                ));
        let tables = 2 * 9 * n_chunks * row_len * 4;
        floats
            .saturating_mul(4)
            .saturating_add(n_chunks.saturating_mul(program.n_coefs()).saturating_mul(8))
            .saturating_add(tables)
    }

    /// Refuses, before anything is allocated, a rollout whose workspace plus
    /// `extra_bytes` (drawn masks, recorded grids) would exceed `LOGICARS_MAX_MEMORY_MB`.
    pub fn check_budget(
        program: &Program,
        shape: GridShape,
        steps: usize,
        extra_bytes: usize,
    ) -> Result<()> {
        let threads = threads::num_threads();
        let bytes =
            Self::estimate_bytes(program, shape, steps, threads).saturating_add(extra_bytes);
        if memory::over_cap(bytes) {
            let cap_mb = memory::cap_mb();
            return Err(Error::Memory(format!(
                "a grid of {}x{}x{} cells over {steps} steps needs about {} MB of buffers, \
                 more than the limit of {cap_mb} MB (set LOGICARS_MAX_MEMORY_MB to raise it)",
                shape.batch,
                shape.height,
                shape.width,
                bytes >> 20
            )));
        }
        if shape.cells() >= (u32::MAX as usize) / (9 * program.channels.max(1) * 2) {
            return Err(Error::Memory(format!(
                "a grid of {} cells is too large to address",
                shape.cells()
            )));
        }
        Ok(())
    }

    pub fn new(
        program: &Program,
        shape: GridShape,
        steps: usize,
        periodic: bool,
    ) -> Result<Workspace> {
        Self::check_budget(program, shape, steps, 0)?;
        let threads = threads::num_threads();
        let row_len = program.row_len;
        let layout = Layout::new(shape, program.channels, row_len, periodic);
        let state_len = layout.state_len();
        let n_chunks = layout.n_chunks;
        let gpatch_len = (n_chunks + 1) * 9 * program.channels * row_len;
        let mut ws = Workspace {
            states: memory::try_zeros((steps + 1) * state_len, WHAT)?,
            masks: Vec::new(),
            grad_state: [
                memory::try_zeros(state_len, WHAT)?,
                memory::try_zeros(state_len, WHAT)?,
            ],
            gpatch: [
                memory::try_zeros(gpatch_len, WHAT)?,
                memory::try_zeros(gpatch_len, WHAT)?,
            ],
            acc: memory::try_zeros(n_chunks * program.n_coefs(), WHAT)?,
            arenas: Vec::new(),
            n_rows: (program.kept.gates.n_rows, program.backward.n_rows),
            perception: AlignedVec::zeros(0),
            perception_kept: false,
            layout,
            steps,
        };
        ws.ensure_arenas(threads)?;
        if let Some(reuse) = &program.kept.reuse {
            // Optional: without room for it the kept pass computes the perception.
            let len = steps
                .saturating_mul(n_chunks)
                .saturating_mul(reuse.outputs * row_len);
            let bytes = len.saturating_mul(4);
            let total = Self::estimate_bytes(program, shape, steps, threads).saturating_add(bytes);
            if bytes <= REUSE_MAX_BYTES && !memory::over_cap(total) {
                ws.perception = memory::try_zeros(len, WHAT).unwrap_or(AlignedVec::zeros(0));
            }
        }
        Ok(ws)
    }

    /// Whether this workspace serves `shape` over `steps` steps.
    pub fn fits(&self, shape: GridShape, steps: usize) -> bool {
        self.layout.shape == shape && self.steps >= steps
    }

    /// One arena per pool thread (the pool may have grown since the workspace was made).
    fn ensure_arenas(&mut self, threads: usize) -> Result<()> {
        let (act_rows, grad_rows) = self.n_rows;
        let row_len = self.layout.row_len;
        while self.arenas.len() < threads {
            self.arenas.push(Mutex::new(Arena {
                act: memory::try_zeros(act_rows * row_len, WHAT)?,
                grad: memory::try_zeros(grad_rows * row_len, WHAT)?,
            }));
        }
        Ok(())
    }

    pub fn state(&self, t: usize) -> &[f32] {
        let len = self.layout.state_len();
        &self.states[t * len..(t + 1) * len]
    }

    /// Sets state 0 from a `B × H × W × C` grid (padding cells stay 0).
    pub fn load_grid(&mut self, grid: &[f32]) {
        let len = self.layout.state_len();
        let (layout, state) = (&self.layout, &mut self.states[..len]);
        state.iter_mut().for_each(|v| *v = 0.0);
        for (n, cell) in grid.chunks(layout.channels).enumerate() {
            for (c, &v) in cell.iter().enumerate() {
                state[layout.addr(n, c)] = v;
            }
        }
    }

    /// Appends state `t` to `out` as a `B × H × W × C` grid.
    pub fn read_grid(&self, t: usize, out: &mut Vec<f32>) {
        let state = self.state(t);
        let c = self.layout.channels;
        out.reserve(self.layout.shape.cells() * c);
        for n in 0..self.layout.shape.cells() {
            out.extend((0..c).map(|ch| state[self.layout.addr(n, ch)]));
        }
    }

    /// Runs `steps` steps from state 0, keeping every state. `coefs`: 4 per parameter.
    /// With `binarize`, every state but the last is rounded to 0 or 1 (see
    /// [`binarize_row`]). With `for_backward`, also keeps what `backward` can reuse.
    #[allow(clippy::too_many_arguments)]
    pub fn forward(
        &mut self,
        program: &Program,
        coefs: &[[f32; 4]],
        steps: usize,
        masked: bool,
        binarize: bool,
        for_backward: bool,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<()> {
        let pool = threads::pool();
        self.ensure_arenas(pool.current_num_threads())?;
        let level = simd::simd_level();
        let len = self.layout.state_len();
        let chunk_len = self.layout.chunk_state_len();
        let n_pad = self.layout.n_pad();
        let n_chunks = self.layout.n_chunks;
        let row_len = self.layout.row_len;
        self.perception_kept = false;
        let keep = for_backward && !self.perception.is_empty();
        let Workspace {
            layout,
            states,
            masks,
            arenas,
            perception,
            ..
        } = self;
        let reuse = program.kept.reuse.as_ref().filter(|_| keep);
        let perception = SharedRows::new(perception);
        let states = SharedRows::new(states);
        // Chunk `k`'s part of step `t`: state t + 1's chunk `k` from the chunks of
        // state t around it.
        let step_chunk = |t: usize, k: usize| {
            let mask = masked.then(|| &masks[t * n_pad + k * row_len..][..row_len]);
            let mut arena = lock_arena(arenas);
            let gates = &program.rollout;
            let act = &mut arena.act[..];
            // SAFETY: the chunks of state t that the fill reads (`chunks.deps[k]`, and the zero
            // chunk, never written) were written by finished tasks.
            unsafe { layout.fill_patch_from(states.ptr.add(t * len), len, k, act) };
            let (cells, chunk) = (layout.chunk_cells(k), layout.lanes(k));
            let (rows, mut done) = (gates.n_rows, 0);
            if let Some(reuse) = reuse {
                let perceive = &gates.instrs[..reuse.update_from];
                kernels::forward_instrs(perceive, rows, coefs, act, chunk, level);
                let block = (t * n_chunks + k) * reuse.outputs * row_len;
                // Only the lanes the kernels read: a quarter of the lizard's last chunk.
                let lanes = lanes_used(cells);
                for &(row, j) in &reuse.rows {
                    let at = block + j as usize * row_len;
                    let src = &act[row as usize * row_len..][..lanes];
                    // SAFETY: block (t, k) is this task's alone, and nothing reads the
                    // buffer before `backward`.
                    unsafe { perception.stream_row(at, src) };
                }
                // The streamed stores are weakly ordered: fenced before the task ends.
                store_fence();
                done = reuse.update_from;
            }
            kernels::forward_instrs(&gates.instrs[done..], rows, coefs, act, chunk, level);
            // SAFETY: chunk k of state t + 1 is this task's alone; chunk k of state t
            // was written by a finished task.
            let out = unsafe { states.slice_mut((t + 1) * len + k * chunk_len, chunk_len) };
            let old = unsafe { states.slice(t * len + k * chunk_len, chunk_len) };
            for (c, &row) in gates.out_rows.iter().enumerate() {
                let new = &arena.act[row as usize * row_len..][..row_len];
                let dst = &mut out[c * row_len..][..row_len];
                match mask {
                    None => dst.copy_from_slice(new),
                    Some(m) => {
                        let old = &old[c * row_len..][..row_len];
                        for i in 0..row_len {
                            dst[i] = old[i] * (1.0 - m[i]) + new[i] * m[i];
                        }
                    }
                }
                // The gates skip lanes past the last block holding cells, so the
                // arena's rows hold an earlier chunk's values there: padding cells
                // stay 0, whichever thread ran which chunk before.
                dst[cells..].fill(0.0);
                if binarize && t + 1 < steps {
                    binarize_row(dst);
                } else {
                    // The gates' polynomial form (c0 + c1·a + c2·b + c3·ab) can round a
                    // state just past [0, 1]; saturated XOR-like gates double such an
                    // excursion in every layer, so unclamped it reaches inf within a
                    // rollout. The backward pass treats the clamp as the identity.
                    clamp_row(dst);
                }
            }
        };
        // One hand-over to the pool per `interrupt.every` of running (else one in all),
        // the check made between them on the calling thread.
        let mut t = 0;
        while t < steps {
            let until = Interrupt::deadline(interrupt);
            let stop = || until.is_some_and(|u| Instant::now() >= u);
            let from = t;
            let task = |i: usize, k: usize| step_chunk(from + i, k);
            t += pool.install(|| wavefront::run(steps - from, &layout.chunks, &task, &stop));
            if t < steps {
                Interrupt::poll(interrupt)?;
            }
        }
        self.perception_kept = keep;
        Ok(())
    }

    /// Back-propagates from `grad_final` (gradient of the loss w.r.t. the state after
    /// `steps` steps, a state buffer) through every step, using the states left by
    /// `forward` with the same coefficients `coefs`. The gradient w.r.t. each gate's
    /// inputs goes through `back_coefs` (the same slice, or for a straight-through
    /// relaxation the relaxed gate of a hard forward). Returns the coefficient gradient
    /// `dL/dc` (4 per parameter), summed over cells, steps and the batch.
    ///
    /// The task of chunk `k` at step `t` first gathers the gradient w.r.t. its cells of
    /// state `t + 1` from the patch gradients that step t + 1's tasks of its neighbours
    /// left, then back-propagates through step `t`. Patch and state gradients alternate
    /// between two buffers by the step's parity; the wavefront's dependencies order
    /// every write of a row against its reads.
    pub fn backward(
        &mut self,
        program: &Program,
        coefs: &[[f32; 4]],
        back_coefs: &[[f32; 4]],
        steps: usize,
        masked: bool,
        loss_grad: LossGrad<'_>,
    ) -> Result<Vec<f64>> {
        let pool = threads::pool();
        self.ensure_arenas(pool.current_num_threads())?;
        let level = simd::simd_level();
        let chunk_len = self.layout.chunk_state_len();
        let n_pad = self.layout.n_pad();
        let row_len = self.layout.row_len;
        let n_coefs = program.n_coefs();
        // Floats of one chunk's patch-gradient rows, and of every chunk's.
        let patch_len = 9 * program.channels * row_len;
        let gpatch_len = self.layout.n_chunks * patch_len;
        self.acc.iter_mut().for_each(|v| *v = 0.0);
        let Workspace {
            layout,
            states,
            masks,
            arenas,
            grad_state,
            gpatch,
            acc,
            perception,
            perception_kept,
            ..
        } = self;
        let n_chunks = layout.n_chunks;
        let reuse = program.kept.reuse.as_ref().filter(|_| *perception_kept);
        let state_len = layout.state_len();
        let mask_of =
            |t: usize, k: usize| masked.then(|| &masks[t * n_pad + k * row_len..][..row_len]);
        let states = &states[..];
        let grad_state = grad_state.each_mut().map(|g| SharedRows::new(&mut g[..]));
        let gpatch = gpatch
            .each_mut()
            .map(|g| SharedRows::new(&mut g[..gpatch_len]));
        let acc_rows = SharedRows::new(acc);
        // Chunk `k`'s part of step `t`: it gathers the gradient w.r.t. its cells of state
        // t + 1 from the patch gradients that step t + 1's tasks scattered to it, then
        // back-propagates through step t and scatters its patch gradients. Patch and
        // state gradients alternate between two buffers by the step's parity.
        let step_chunk = |t: usize, k: usize| {
            let (now, before) = (t % 2, (t + 1) % 2);
            // SAFETY: a chunk's rows of the state-gradient buffers and of `acc` are
            // its own tasks' alone, and they run one after the other. Its patch-gradient
            // rows of the other parity were written by step t + 1's tasks of the chunks
            // around it (`chunks.deps[k]`), all finished; the next writers of those rows are
            // step t - 1's tasks of the same chunks, which wait for this one.
            let (g, after, acc) = unsafe {
                let g = grad_state[now].slice_mut(k * chunk_len, chunk_len);
                let after = if t + 1 == steps {
                    Next::Final(loss_grad.chunk(t + 1, k, chunk_len, state_len))
                } else {
                    Next::Gather {
                        gpatch: gpatch[before].slice(k * patch_len, patch_len),
                        grad_state: grad_state[before].slice(k * chunk_len, chunk_len),
                        mask: mask_of(t + 1, k),
                    }
                };
                (g, after, acc_rows.slice_mut(k * n_coefs, n_coefs))
            };
            layout.state_gradient(k, &after, g);
            if t + 1 < steps && t + 1 >= loss_grad.from {
                // A state the loss reads before the last: its own loss gradient joins
                // the one that came back from the steps after it.
                let own = loss_grad.chunk(t + 1, k, chunk_len, state_len);
                g.iter_mut().zip(own).for_each(|(a, b)| *a += b);
            }
            let mut guard = lock_arena(arenas);
            let arena = &mut *guard;
            layout.fill_patch(
                &states[t * state_len..(t + 1) * state_len],
                k,
                &mut arena.act,
            );
            let (cells, chunk) = (layout.chunk_cells(k), layout.lanes(k));
            let kept = &program.kept;
            let (act, rows) = (&mut arena.act[..], kept.gates.n_rows);
            let mut done = 0;
            if let Some(reuse) = reuse {
                // The rollout's outputs of this step and chunk; the backward replays the
                // hidden perception rows per channel.
                let len = reuse.outputs * row_len;
                let block = &perception[(t * n_chunks + k) * len..][..len];
                // The lanes the rollout streamed out (all but in a last, partial chunk).
                let lanes = lanes_used(cells);
                let dst = &mut act[reuse.first as usize * row_len..][..len];
                if lanes == row_len {
                    dst.copy_from_slice(block);
                } else {
                    for (d, b) in dst
                        .chunks_exact_mut(row_len)
                        .zip(block.chunks_exact(row_len))
                    {
                        d[..lanes].copy_from_slice(&b[..lanes]);
                    }
                }
                done = reuse.update_from;
            }
            let update = &kept.gates.instrs[done..];
            kernels::forward_instrs(update, rows, coefs, act, chunk, level);
            let back = &program.backward;
            for &row in &back.unwritten {
                arena.grad[row as usize * row_len..][..row_len].fill(0.0);
            }
            seed_outputs(&back.out_rows, g, mask_of(t, k), (&mut arena.grad, row_len));
            let rows = (kept.gates.n_rows, back.n_rows);
            for (replay, part) in &kept.segments {
                let replay = &kept.replay[replay.clone()];
                let act = &mut arena.act[..];
                kernels::forward_instrs(replay, rows.0, coefs, act, chunk, level);
                let arenas = (&arena.act[..], &mut arena.grad[..]);
                let part = &kept.backward[part.clone()];
                kernels::backward_instrs(part, rows, back_coefs, arenas, acc, chunk, level);
            }
            layout.scatter_patch_gradient(k, &arena.grad, &gpatch[now]);
        };
        let task = |i: usize, k: usize| step_chunk(steps - 1 - i, k);
        pool.install(|| wavefront::run(steps, &layout.chunks, &task, &|| false));
        let mut total = vec![0f64; n_coefs];
        for chunk in acc.chunks(n_coefs) {
            for (t, v) in total.iter_mut().zip(chunk) {
                *t += v;
            }
        }
        Ok(total)
    }
}

/// Clamps a relaxed state row to [0, 1] (NaN stays NaN, to surface as an error).
fn clamp_row(row: &mut [f32]) {
    row.iter_mut().for_each(|v| *v = v.clamp(0.0, 1.0));
}

/// Rounds a state row to 0 or 1 (`≥ 0.5` is 1). The backward treats the rounding as the
/// identity (straight-through): it recomputes each step from the rounded state the step
/// ran from. A relaxed circuit trained this way cannot carry information from step to
/// step in fractional values, which its hard circuit does not have.
fn binarize_row(row: &mut [f32]) {
    row.iter_mut()
        .for_each(|v| *v = if *v >= 0.5 { 1.0 } else { 0.0 });
}

/// Writes a chunk's gradient w.r.t. the next state (`g`, one `row_len` row per channel)
/// into the gradient rows (of `row_len` floats) of the step's outputs, through the
/// chunk's update mask when the step is asynchronous (cells that did not fire pass no
/// gradient back through the gates).
fn seed_outputs(
    out_rows: &[u32],
    g: &[f32],
    mask: Option<&[f32]>,
    (grad, row_len): (&mut [f32], usize),
) {
    for (c, &row) in out_rows.iter().enumerate() {
        let g = &g[c * row_len..][..row_len];
        let dst = &mut grad[row as usize * row_len..][..row_len];
        match mask {
            None => dst.copy_from_slice(g),
            Some(m) => {
                for i in 0..row_len {
                    dst[i] = g[i] * m[i];
                }
            }
        }
    }
}

/// The loss gradient w.r.t. every state the loss reads: states `from..=steps` of the
/// rollout, one state buffer (`Layout::state_len` floats) each, in step order.
#[derive(Clone, Copy)]
pub(crate) struct LossGrad<'a> {
    pub from: usize,
    pub grads: &'a [f32],
}

impl LossGrad<'_> {
    /// Chunk `k`'s rows of the gradient w.r.t. state `t` (`from <= t`).
    fn chunk(&self, t: usize, k: usize, chunk_len: usize, state_len: usize) -> &[f32] {
        &self.grads[(t - self.from) * state_len + k * chunk_len..][..chunk_len]
    }
}

/// Where the gradient w.r.t. the state a step produced comes from.
enum Next<'a> {
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
    /// Writes chunk `k`'s gradient w.r.t. a state (`chunk_len` floats) into `g`.
    fn state_gradient(&self, k: usize, next: &Next<'_>, g: &mut [f32]) {
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
        // in registers (a loop over a lane count known only at run time compiled to
        // scalar adds through the stack: 5% of the lizard's epoch). Every cell adds its
        // terms in entry order, then the pass-through. Entries with no source are +0,
        // and a sum that starts at +0 is never -0, so adding a zero of either sign (a
        // patch gradient's first gate stores it) leaves it as it is.
        const BLOCK: usize = LANES;
        let row_len = self.row_len;
        let blocks = lanes_used(self.chunk_cells(k)) / BLOCK;
        for (row, patch) in g
            .chunks_exact_mut(row_len)
            .zip(gpatch.chunks_exact(9 * row_len))
        {
            // The whole row: zeroing only the lanes past the blocks compiled the loop
            // below differently and made the lizard's epoch 21% slower.
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
}

impl Layout {
    /// Copies chunk `k`'s patch gradients (`grad`'s first `9 · channels` rows) to the
    /// chunks whose cells receive them (`Scatter`).
    fn scatter_patch_gradient(&self, k: usize, grad: &[f32], out: &SharedRows) {
        let row_len = self.row_len;
        let chunk_gpatch = 9 * self.channels * row_len;
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

/// A buffer that concurrent tasks read and write at disjoint places: the wavefront's
/// dependencies (`Layout::chunks`) keep a task off the places others are writing.
struct SharedRows<T = f32> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: users promise disjoint places (`slice`, `slice_mut`, `write_rows`).
unsafe impl<T: Send> Sync for SharedRows<T> {}

impl<T> SharedRows<T> {
    fn new(buf: &mut [T]) -> SharedRows<T> {
        SharedRows {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
        }
    }

    /// Elements `at..at + len`, to read. Safety: no thread writes them meanwhile.
    unsafe fn slice(&self, at: usize, len: usize) -> &[T] {
        assert!(at + len <= self.len);
        std::slice::from_raw_parts(self.ptr.add(at), len)
    }

    /// Elements `at..at + len`, to write. Safety: no other thread reads or writes
    /// them meanwhile.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice_mut(&self, at: usize, len: usize) -> &mut [T] {
        assert!(at + len <= self.len);
        std::slice::from_raw_parts_mut(self.ptr.add(at), len)
    }
}

impl SharedRows {
    /// `copy_rows` into this buffer from `at` on, of `len` floats of `rows` rows one
    /// every `stride` floats (in both: a chunk's patch rows of one entry). Safety: no
    /// other thread reads or writes those floats while the buffer is shared.
    unsafe fn write_rows(
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

    /// Copies `src` to `at..at + src.len()` with non-temporal stores (where the CPU has
    /// them: every x86-64; elsewhere a plain copy), for rows read again only after many
    /// others have been written, so that they do not evict rows the next tasks read:
    /// the perception outputs, which the backward reads after the whole rollout (the
    /// lizard's epoch −0.4% to −3%: docs/performance.md, round seven). `at` must be a
    /// multiple of 4 floats from a 16-byte aligned buffer, `src.len()` a multiple of 4.
    /// Call [`store_fence`] before another thread may read them. Safety: as
    /// `write_rows`.
    unsafe fn stream_row(&self, at: usize, src: &[f32]) {
        assert!(at + src.len() <= self.len);
        let dst = self.ptr.add(at);
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_loadu_ps, _mm_stream_ps};
            assert!((dst as usize).is_multiple_of(16) && src.len().is_multiple_of(4));
            for i in (0..src.len()).step_by(4) {
                _mm_stream_ps(dst.add(i), _mm_loadu_ps(src.as_ptr().add(i)));
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len());
    }
}

/// Orders earlier non-temporal stores (`SharedRows::stream_row`) before later stores,
/// such as the release that makes a finished task's rows visible to other threads.
fn store_fence() {
    // SAFETY: SSE is part of x86-64.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// The arena of the calling worker thread. Each thread runs one chunk at a time, so
/// the lock is never contended; it only proves exclusive access.
fn lock_arena(arenas: &[Mutex<Arena>]) -> std::sync::MutexGuard<'_, Arena> {
    let i = rayon::current_thread_index().unwrap_or(0) % arenas.len();
    arenas[i].lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::spec::Spec;

    /// Chunk widths the layout tests run with: one SIMD block, the default, the
    /// lizard's, and the widest.
    const ROW_LENS: [usize; 4] = [16, 64, 80, 128];

    /// A rollout and its back-propagation give the same states and coefficient sums, bit
    /// for bit, with the whole arena kept, with the perception replayed per channel, and
    /// with the kept pass taking the rollout's perception outputs (`Reuse`): zero-padded
    /// and periodic, synchronous and with update masks, over a partly filled last chunk
    /// whose padding cells stay +0 (else they would hold whatever chunk the same thread
    /// ran before: states that depend on the schedule).
    #[test]
    fn replayed_and_reused_perception_change_no_bit() {
        for row_len in [32, 64, 80] {
            replay_and_reuse_change_no_bit(row_len);
        }
    }

    fn replay_and_reuse_change_no_bit(row_len: usize) {
        let spec = Spec::from_json(&format!(
            r#"{{"channels": 4, "periodic": false, "num_steps": 3, "loss_channels": [0],
                "lr": 0.05, "perceive": {{"n_kernels": 3, "layers": [9, 8, 4, 2],
                "connections": ["first_kernel", "unique", "unique"]}},
                "update": {{"layers": [28, 32, 16, 8, 4],
                "connections": ["unique", "random", "unique", "unique"]}},
                "chunk_cells": {row_len}}}"#
        ))
        .unwrap();
        let model = Model::new(spec, 5).unwrap();
        let compile = |replay| {
            let (p, u) = (model.perceive_wires(), model.update_wires());
            Program::compile_with(model.spec(), p, u, Some(replay))
        };
        let (whole, replayed) = (compile(false), compile(true));
        assert!(whole.kept.reuse.is_none() && replayed.kept.reuse.is_some());
        let coefs: Vec<[f32; 4]> = (0..whole.n_params)
            .map(|i| std::array::from_fn(|k| ((i * 7 + k * 13) % 17) as f32 / 17.0 - 0.3))
            .collect();
        let shape = GridShape {
            batch: 2,
            height: 9,
            width: 13,
        };
        let steps = 3;
        let x: Vec<f32> = (0..shape.cells() * 4)
            .map(|i| ((i * 37) % 10) as f32 / 9.0)
            .collect();
        let run = |p: &Program, reuse: bool, periodic: bool, masked: bool| {
            let mut ws = Workspace::new(p, shape, steps, periodic).unwrap();
            assert_eq!(ws.perception.is_empty(), p.kept.reuse.is_none());
            if !reuse {
                ws.perception = AlignedVec::zeros(0);
            }
            ws.load_grid(&x);
            if masked {
                let n = steps * ws.layout.n_pad();
                ws.masks = (0..n).map(|i| ((i * 11) % 3 != 0) as u8 as f32).collect();
            }
            ws.forward(p, &coefs, steps, masked, false, true, None)
                .unwrap();
            assert_eq!(ws.perception_kept, reuse && p.kept.reuse.is_some());
            let grad_final: Vec<f32> = (0..ws.layout.state_len())
                .map(|i| ((i * 13) % 7) as f32 - 3.0)
                .collect();
            let sums = ws
                .backward(
                    p,
                    &coefs,
                    &coefs,
                    steps,
                    masked,
                    LossGrad {
                        from: steps,
                        grads: &grad_final,
                    },
                )
                .unwrap();
            let states: Vec<u32> = ws.states.iter().map(|v| v.to_bits()).collect();
            let real = shape.cells() % row_len;
            for state in ws.states.chunks_exact(ws.layout.state_len()) {
                let last = &state[(ws.layout.n_chunks - 1) * 4 * row_len..][..4 * row_len];
                let padding = last.chunks_exact(row_len).flat_map(|row| &row[real..]);
                assert!(padding.into_iter().all(|&v| v.to_bits() == 0));
            }
            let sums: Vec<u64> = sums.iter().map(|v| v.to_bits()).collect();
            (states, sums)
        };
        for (periodic, masked) in [(false, false), (true, true)] {
            let want = run(&whole, false, periodic, masked);
            assert!(want.1.iter().any(|&s| s != 0));
            assert!(run(&replayed, false, periodic, masked) == want);
            assert!(run(&replayed, true, periodic, masked) == want);
        }
    }

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

    /// `load_grid` puts every (cell, channel) of the grid at its `addr`, and zeros in
    /// the padding lanes of the last chunk and in the zero chunk (here: stale values
    /// from a state loaded before), and `read_grid` gives the grid back.
    #[test]
    fn load_grid_places_every_cell_and_zeros_the_rest() {
        let spec = Spec::from_json(
            r#"{"channels": 5, "periodic": true, "num_steps": 1, "loss_channels": [0],
                "perceive": {"n_kernels": 2, "layers": [9, 8, 4],
                "connections": ["first_kernel", "unique"]},
                "update": {"layers": [45, 24, 12, 6, 5],
                "connections": ["unique", "unique", "unique", "unique"]}}"#,
        )
        .unwrap();
        let model = Model::new(spec, 1).unwrap();
        let (p, u) = (model.perceive_wires(), model.update_wires());
        let program = Program::compile(model.spec(), p, u);
        let shape = GridShape {
            batch: 2,
            height: 7,
            width: 11,
        };
        let mut ws = Workspace::new(&program, shape, 1, true).unwrap();
        let n = shape.cells() * 5;
        let grid: Vec<f32> = (0..n).map(|i| i as f32 + 1.0).collect();
        ws.states.iter_mut().for_each(|v| *v = -1.0);
        ws.load_grid(&grid);
        let mut want = vec![0f32; ws.layout.state_len()];
        for (i, &v) in grid.iter().enumerate() {
            want[ws.layout.addr(i / 5, i % 5)] = v;
        }
        assert_eq!(ws.state(0), &want[..]);
        let mut back = Vec::new();
        ws.read_grid(0, &mut back);
        assert_eq!(back, grid);
    }

    /// The patch fill writes every (channel, entry, lane) of a chunk with the value of
    /// that neighbour of that cell, zero outside a zero-padded grid and for padding
    /// cells, on grids whose rows wrap inside chunks and runs cross chunks; it leaves
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

    /// Expanding the runs gives back every address, whatever mix of consecutive
    /// addresses, jumps and zero cells a chunk holds.
    #[test]
    fn runs_expand_to_the_addresses() {
        let (row_len, zero) = (64, 9999);
        let n_pad = 2 * row_len;
        let addr: Vec<u32> = (0..9 * n_pad)
            .map(|i| match i {
                _ if (i * 7) % 11 == 0 || (40..60).contains(&(i % n_pad)) => zero,
                _ if i % 13 == 0 => 5000 + 3 * i as u32,
                _ => 100 + i as u32,
            })
            .collect();
        let plain = Runs::new(&addr, (n_pad, row_len), zero, false);
        let fixed = Runs::new(&addr, (n_pad, row_len), zero, true);
        assert!(plain.fixes.is_empty() && !fixed.fixes.is_empty());
        assert!(fixed.runs.len() < plain.runs.len());
        for runs in [plain, fixed] {
            for k in 0..2 {
                for e in 0..9 {
                    let mut expanded = Vec::new();
                    for run in runs.get(k, e) {
                        assert_eq!(run.at as usize, expanded.len(), "runs tile the chunk");
                        expanded.extend((0..run.len as u32).map(|j| match run.src {
                            Run::ZERO => zero,
                            src => src + j,
                        }));
                    }
                    for &(lane, src) in runs.fixes(k, e) {
                        expanded[lane as usize] = if src == Run::ZERO { zero } else { src };
                    }
                    assert_eq!(expanded, addr[e * n_pad + k * row_len..][..row_len]);
                }
            }
        }
    }
}
