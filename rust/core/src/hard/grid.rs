//! The JIT engine's grid: bit planes with ghost words, packing and unpacking, and the
//! step loop that runs a compiled [`Kernel`] row by row.
//!
//! **Layout.** One bit per cell. Grid row `g = b·H + r` holds `C` channel rows of
//! `stride` words: channel row `(g·C + c)` starts at word `(g·C + c)·stride`, its data
//! words `0..nw` (64 columns each, bit `k` of word `i` = column `64·i + k`) start at word
//! `lanes` of it (4 for AVX2 kernels, 8 for AVX-512), aligned to a vector. The word before the data (the left ghost) holds the
//! west neighbour of column 0 in its top bit, and the bit just past column `W - 1` (in
//! the last word, or the word after it) holds the east neighbour of column `W - 1`: the
//! wrapped column with a periodic boundary, else 0. So a kernel builds every patch input
//! from plain loads and shifts, with no test at the row ends. After a row is written the
//! row's padding is rewritten ([`Layout::fix_row`]). Vertical neighbours come from the
//! row pointers (a zero row outside a zero-boundary grid).

use std::arch::x86_64::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use super::jit::{Isa, Kernel, RowArgs};
use super::masks::{random_mask, StepMask};
use super::netlist::Netlist;
use super::packing::{check_channel_read, Geo};
use crate::aligned::AlignedVec;
use crate::error::{shape_err, value_err, Result};
use crate::grid::GridShape;
use crate::memory;
use crate::threads;

/// The fewest cells a task of a step holds.
const MIN_TASK_CELLS: usize = 1 << 15;

/// Sizes of one padded grid.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) batch: usize,
    pub(crate) height: usize,
    pub(crate) width: usize,
    pub(crate) channels: usize,
    pub(crate) periodic: bool,
    /// Words per vector of the kernels' instruction set (4: AVX2, 8: AVX-512); also the
    /// word of a channel row where its data starts (the word before is the left ghost),
    /// so that data vectors are aligned.
    pub(crate) lanes: usize,
    /// Data words per row, `⌈W/64⌉`.
    pub(crate) nw: usize,
    /// Vectors per row, `⌈nw/lanes⌉`.
    pub(crate) vectors: usize,
    /// Words per channel row: the ghost word and padding, the data (rounded up to whole
    /// vectors) and a vector of slack for the loads one word past the data.
    pub(crate) stride: usize,
}

impl Layout {
    pub(crate) fn new(shape: GridShape, channels: usize, periodic: bool, lanes: usize) -> Layout {
        let nw = shape.width.div_ceil(64);
        let vectors = nw.div_ceil(lanes);
        Layout {
            batch: shape.batch,
            height: shape.height,
            width: shape.width,
            channels,
            periodic,
            lanes,
            nw,
            vectors,
            stride: lanes + lanes * vectors + lanes,
        }
    }

    pub(crate) fn rows(&self) -> usize {
        self.batch * self.height
    }

    pub(crate) fn words(&self) -> usize {
        self.rows() * self.channels * self.stride
    }

    /// The rows above and below grid row `g` (None: the zero row) for one kernel
    /// call, and how many rows (at most `left`) it covers: a row at a board's edge alone
    /// (its neighbours wrap or are 0), else every row up to the board's last but one.
    fn call_rows(&self, g: usize, left: usize) -> (Option<usize>, Option<usize>, usize) {
        let r = g % self.height;
        if r == 0 || r + 1 == self.height {
            let up = if r > 0 {
                Some(g - 1)
            } else if self.periodic {
                Some(g + self.height - 1)
            } else {
                None
            };
            let down = if r + 1 < self.height {
                Some(g + 1)
            } else if self.periodic {
                Some(g + 1 - self.height)
            } else {
                None
            };
            (up, down, 1)
        } else {
            let rows = (self.height - 1 - r).min(left);
            (Some(g - 1), Some(g + 1), rows)
        }
    }

    /// Where the data of grid row `g`, channel 0, starts.
    fn row_at(&self, g: usize) -> usize {
        g * self.channels * self.stride + self.lanes
    }

    /// Rewrites the padding of one grid row (all channels, `row` = its `C·stride` words):
    /// bits past column `W - 1` cleared, then the ghost bits set from the wrapped columns
    /// (periodic) or left 0.
    fn fix_row(&self, row: &mut [u64]) {
        let (nw, w) = (self.nw, self.width);
        let tail = w % 64;
        for ch in row.chunks_exact_mut(self.stride) {
            let data = &mut ch[self.lanes - 1..];
            // data[0] is the left ghost, data[1 + i] word i.
            if tail != 0 {
                data[nw] &= (1u64 << tail) - 1;
            }
            data[1 + nw..=self.lanes * self.vectors + 1].fill(0);
            if self.periodic {
                let last = (data[1 + (w - 1) / 64] >> ((w - 1) % 64)) & 1;
                let first = data[1] & 1;
                data[0] = last << 63;
                data[1 + w / 64] |= first << tail;
            } else {
                data[0] = 0;
            }
        }
    }
}

/// Packs `cells[k·step]` (k < 64·words.len(), as far as `cells` goes) into bits; returns
/// the OR of every byte read (> 1 means a value that is not 0 or 1).
fn pack_bits(cells: &[u8], step: usize, words: &mut [u64]) -> u8 {
    let mut seen = 0u8;
    let n = cells.len().div_ceil(step);
    for (i, word) in words.iter_mut().enumerate() {
        let lo = 64 * i;
        if lo >= n {
            *word = 0;
            continue;
        }
        let hi = (lo + 64).min(n);
        if step == 1 && hi - lo == 64 {
            let (w, s) = pack64(&cells[lo..hi]);
            *word = w;
            seen |= s;
            continue;
        }
        let mut w = 0u64;
        for k in lo..hi {
            let v = cells[k * step];
            seen |= v;
            w |= ((v & 1) as u64) << (k - lo);
        }
        *word = w;
    }
    seen
}

/// 64 bytes of 0/1 to 64 bits, and the OR of the bytes.
#[inline]
fn pack64(bytes: &[u8]) -> (u64, u8) {
    {
        // SAFETY: SSE2 is part of x86-64; the four unaligned loads read the 64 bytes.
        unsafe {
            let p = bytes.as_ptr().cast::<__m128i>();
            let (mut word, mut any) = (0u64, _mm_setzero_si128());
            for q in 0..4 {
                let v = _mm_loadu_si128(p.add(q));
                any = _mm_or_si128(any, v);
                // Bit 0 of every byte to its top bit, then one bit per byte.
                let bits = _mm_movemask_epi8(_mm_slli_epi16(v, 7)) as u32 as u64;
                word |= bits << (16 * q);
            }
            // Bits 1..7 of any byte set means a value > 1.
            let high = _mm_movemask_epi8(_mm_cmpeq_epi8(
                _mm_and_si128(any, _mm_set1_epi8(-2)),
                _mm_setzero_si128(),
            ));
            (word, if high == 0xFFFF { 0 } else { 2 })
        }
    }
}

/// 32 bits to 32 bytes of 0/1 (byte `j` = bit `j`).
///
/// # Safety
/// The CPU has AVX2 (every `GridSim` runs where the JIT does) and `dst` holds 32 bytes.
#[target_feature(enable = "avx2")]
unsafe fn spread32(bits: u32, dst: *mut u8) {
    // Byte j of the result takes byte j / 8 of `bits` (a shuffle within each 128-bit
    // half, where the broadcast puts all four), then keeps bit j % 8 of it.
    let v = _mm256_set1_epi32(bits as i32);
    let pick = _mm256_setr_epi8(
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3,
        3, 3,
    );
    let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
    let set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(v, pick), bit), bit);
    let ones = _mm256_and_si256(set, _mm256_set1_epi8(1));
    // SAFETY: the caller's contract.
    unsafe { _mm256_storeu_si256(dst.cast(), ones) };
}

/// Unpacks `words` to `cells[k·step]` for every k that `cells` holds.
fn unpack_bits(words: &[u64], step: usize, cells: &mut [u8]) {
    if step == 1 {
        let mut chunks = cells.chunks_exact_mut(32);
        let mut k = 0;
        for chunk in &mut chunks {
            let b = (words[k / 64] >> (k % 64)) as u32;
            // SAFETY: a `GridSim` exists only where the JIT runs, which needs AVX2; the
            // chunk holds 32 bytes.
            unsafe { spread32(b, chunk.as_mut_ptr()) };
            k += 32;
        }
        for (j, v) in chunks.into_remainder().iter_mut().enumerate() {
            *v = ((words[(k + j) / 64] >> ((k + j) % 64)) & 1) as u8;
        }
        return;
    }
    for (k, v) in cells.iter_mut().step_by(step).enumerate() {
        *v = ((words[k / 64] >> (k % 64)) & 1) as u8;
    }
}

/// The first value of `x` that is not 0 or 1, as an error naming `what`.
fn not_binary(what: &str, x: &[u8]) -> Result<()> {
    match x.iter().position(|&v| v > 1) {
        Some(i) => value_err!(
            "{what}: values must be 0 or 1, found {} at flat index {i}",
            x[i]
        ),
        None => Ok(()),
    }
}

/// A failure to compile or map a kernel.
fn jit_err(e: std::io::Error) -> crate::error::Error {
    crate::error::Error::Value(format!("JIT: {e}"))
}

/// Dense mask planes: `nw` words per grid row, plus slack for the last row's last vector.
fn mask_plane(rows: usize, nw: usize, lanes: usize) -> Result<Vec<u64>> {
    memory::try_vec(rows * nw + lanes, 0, WHAT)
}

/// What the buffers are, in the error when the system refuses them.
const WHAT: &str = "the simulator's buffers";

/// A kernel's instruction set, layout and variant: row stride, mask words, masked, damaged.
type KernelKey = (Isa, usize, usize, bool, bool);

/// One netlist with its compiled kernels, shared by its simulators: a circuit simulated
/// call after call (a step-by-step loop, analyze's probes) is compiled once per grid
/// width and variant, not once per call (compiling costs far more than a small step).
#[derive(Clone)]
pub(crate) struct KernelCache {
    net: Arc<Netlist>,
    kernels: Arc<Mutex<HashMap<KernelKey, Arc<Kernel>>>>,
}

impl KernelCache {
    /// Kernels kept at most; beyond, the cache starts over (grids of many widths).
    const CAPACITY: usize = 32;

    pub(crate) fn new(net: Netlist) -> KernelCache {
        KernelCache {
            net: Arc::new(net),
            kernels: Default::default(),
        }
    }

    fn get(&self, key: KernelKey) -> std::io::Result<Arc<Kernel>> {
        let lock = || {
            self.kernels
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some(kernel) = lock().get(&key) {
            return Ok(Arc::clone(kernel));
        }
        let (isa, stride, nw, masked, damaged) = key;
        let kernel = Arc::new(Kernel::compile(
            &self.net, isa, stride, nw, masked, damaged,
        )?);
        let mut kernels = lock();
        if kernels.len() >= Self::CAPACITY {
            kernels.clear();
        }
        kernels.insert(key, Arc::clone(&kernel));
        Ok(kernel)
    }
}

/// The JIT engine's simulator: two padded grids, the kernels of the variants a step
/// needs (compiled on first use), a packed mask and damage plane, spill areas.
pub(crate) struct GridSim {
    isa: Isa,
    lay: Layout,
    geo: Geo,
    cur: AlignedVec<u64>,
    next: AlignedVec<u64>,
    zero_row: AlignedVec<u64>,
    mask: Vec<u64>,
    damage: Vec<u64>,
    /// Grid rows of the damage plane (`H` or `B·H`).
    damage_rows: usize,
    /// Kernels by `masked + 2·damaged`, from `cache` (which holds the netlist).
    kernels: [Option<Arc<Kernel>>; 4],
    cache: KernelCache,
    spills: Vec<Mutex<AlignedVec<u64>>>,
}

impl GridSim {
    /// A simulator of `cache`'s netlist for `shape`, taking its kernels from `cache`;
    /// fails if the OS refuses executable memory or the buffers.
    pub(crate) fn new(
        cache: KernelCache,
        shape: GridShape,
        periodic: bool,
        isa: Isa,
    ) -> Result<GridSim> {
        let channels = cache.net.channels;
        let lay = Layout::new(shape, channels, periodic, isa.lanes());
        let plain = cache
            .get((isa, lay.stride, lay.nw, false, false))
            .map_err(jit_err)?;
        let mut sim = GridSim {
            isa,
            lay,
            geo: Geo::new(shape, channels, periodic),
            cur: memory::try_zeros(lay.words(), WHAT)?,
            next: memory::try_zeros(lay.words(), WHAT)?,
            zero_row: memory::try_zeros(channels * lay.stride, WHAT)?,
            mask: mask_plane(lay.rows(), lay.nw, lay.lanes)?,
            damage: Vec::new(),
            damage_rows: 0,
            kernels: [Some(plain), None, None, None],
            cache,
            spills: Vec::new(),
        };
        sim.size_spills()?;
        Ok(sim)
    }

    /// The JIT back end this simulator runs.
    pub(crate) fn engine(&self) -> super::simulator::HardEngine {
        match self.isa {
            Isa::Avx2 => super::simulator::HardEngine::Jit,
            Isa::Avx512 { .. } => super::simulator::HardEngine::JitAvx512,
        }
    }

    /// Bytes of the buffers a simulator of this size holds.
    pub(crate) fn estimate_bytes(channels: usize, shape: GridShape) -> usize {
        let lay = Layout::new(shape, channels, false, Isa::MAX_LANES);
        lay.words()
            .saturating_mul(2)
            .saturating_add(lay.rows().saturating_mul(lay.nw) * 2)
            .saturating_mul(8)
    }

    fn size_spills(&mut self) -> Result<()> {
        let words = self
            .kernels
            .iter()
            .flatten()
            .map(|k| k.spill_words())
            .max()
            .unwrap_or(0);
        let threads = threads::num_threads().max(1);
        if self.spills.len() < threads || self.spills[0].lock().map_or(0, |s| s.len()) < words {
            self.spills = (0..threads)
                .map(|_| {
                    Ok(Mutex::new(memory::try_zeros(
                        words.max(self.lay.lanes),
                        WHAT,
                    )?))
                })
                .collect::<Result<_>>()?;
        }
        Ok(())
    }

    fn cells(&self) -> usize {
        self.lay.rows() * self.lay.width
    }

    /// Sets the state from a `B × H × W × C` grid of 0/1 bytes (checked while packing).
    pub(crate) fn load(&mut self, x: &[u8]) -> Result<()> {
        let lay = self.lay;
        let c_n = lay.channels;
        if x.len() != self.cells() * c_n {
            return shape_err!(
                "x: expected B*H*W*C = {} values, got {}",
                self.cells() * c_n,
                x.len()
            );
        }
        let cur = &mut self.cur;
        let seen = threads::pool().install(|| {
            cur.par_chunks_mut(c_n * lay.stride)
                .zip(x.par_chunks(lay.width * c_n))
                .map(|(row, cells)| {
                    let mut seen = 0;
                    for (c, ch) in row.chunks_exact_mut(lay.stride).enumerate() {
                        seen |= pack_bits(&cells[c..], c_n, &mut ch[lay.lanes..lay.lanes + lay.nw]);
                    }
                    lay.fix_row(row);
                    seen
                })
                .reduce(|| 0, |a, b| a | b)
        });
        if seen > 1 {
            return not_binary("x", x);
        }
        Ok(())
    }

    /// Writes the current state into `out` as a `B × H × W × C` grid of 0/1 bytes.
    pub(crate) fn read_into(&self, out: &mut [u8]) {
        let all: Vec<usize> = (0..self.lay.channels).collect();
        self.read_channels_into(&all, out)
    }

    /// Channels `channels` of the current state, in that order, as `B × H × W × L` bytes.
    pub(crate) fn read_channels_into(&self, channels: &[usize], out: &mut [u8]) {
        let lay = self.lay;
        let (c_n, l) = (lay.channels, channels.len());
        check_channel_read(channels, c_n, self.cells(), out);
        if l == 0 {
            return;
        }
        threads::pool().install(|| {
            out.par_chunks_mut(lay.width * l)
                .zip(self.cur.par_chunks(c_n * lay.stride))
                .for_each(|(cells, row)| {
                    for (j, &c) in channels.iter().enumerate() {
                        let ch = &row[c * lay.stride..][..lay.stride];
                        unpack_bits(&ch[lay.lanes..lay.lanes + lay.nw], l, &mut cells[j..]);
                    }
                })
        });
    }

    /// Sets the damage plane: `H × W` (every board) or `B × H × W` bytes, 1 = the cell
    /// is forced to 0 after the steps that apply damage. `None` removes it.
    pub(crate) fn set_damage(&mut self, cells: Option<&[u8]>) -> Result<()> {
        let Some(d) = cells else {
            self.damage = Vec::new();
            self.damage_rows = 0;
            return Ok(());
        };
        let lay = self.lay;
        let hw = lay.height * lay.width;
        if d.len() != hw && d.len() != hw * lay.batch {
            return shape_err!(
                "damage: expected H*W = {hw} or B*H*W = {} values, got {}",
                hw * lay.batch,
                d.len()
            );
        }
        let rows = d.len() / lay.width;
        let mut plane = mask_plane(rows, lay.nw, lay.lanes)?;
        let seen = threads::pool().install(|| {
            plane[..rows * lay.nw]
                .par_chunks_mut(lay.nw)
                .zip(d.par_chunks(lay.width))
                .map(|(words, cells)| pack_bits(cells, 1, words))
                .reduce(|| 0, |a, b| a | b)
        });
        if seen > 1 {
            return not_binary("damage", d);
        }
        self.damage = plane;
        self.damage_rows = rows;
        Ok(())
    }

    /// Packs this step's update mask; false when every cell updates.
    fn prepare_mask(&mut self, mask: StepMask<'_>) -> Result<bool> {
        let lay = self.lay;
        let hw = lay.height * lay.width;
        match mask {
            StepMask::All => Ok(false),
            StepMask::Given { masks, steps, t } => {
                if masks.len() != lay.batch * steps * hw || t >= steps {
                    return shape_err!(
                        "masks: expected B*steps*H*W = {} values and t < steps = {steps}, got {} values and t = {t}",
                        lay.batch * steps * hw,
                        masks.len()
                    );
                }
                let seen = self.mask[..lay.rows() * lay.nw]
                    .par_chunks_mut(lay.nw)
                    .enumerate()
                    .map(|(g, words)| {
                        let (b, r) = (g / lay.height, g % lay.height);
                        let at = ((b * steps + t) * lay.height + r) * lay.width;
                        pack_bits(&masks[at..at + lay.width], 1, words)
                    })
                    .reduce(|| 0, |a, b| a | b);
                if seen > 1 {
                    not_binary("masks", masks)?;
                }
                Ok(true)
            }
            StepMask::Random { fire_rate, seed, t } => {
                if !(fire_rate > 0.0 && fire_rate <= 1.0) {
                    return value_err!("fire_rate must be in (0, 1], got {fire_rate}");
                }
                let n = lay.rows() * lay.nw;
                random_mask(&self.geo, &mut self.mask[..n], fire_rate, seed, t);
                Ok(true)
            }
        }
    }

    /// Runs one step (see `super::slots::SlotSim::step`).
    pub(crate) fn step(&mut self, mask: StepMask<'_>, damaged: bool) -> Result<()> {
        let pool = threads::pool();
        let masked = pool.install(|| self.prepare_mask(mask))?;
        let damaged = damaged && !self.damage.is_empty();
        let variant = masked as usize + 2 * damaged as usize;
        if self.kernels[variant].is_none() {
            let key = (self.isa, self.lay.stride, self.lay.nw, masked, damaged);
            let k = self.cache.get(key).map_err(jit_err)?;
            self.kernels[variant] = Some(k);
            self.size_spills()?;
        }
        if self.spills.len() < pool.current_num_threads() {
            self.size_spills()?; // the pool grew since the last step
        }
        let kernel = self.kernels[variant].as_ref().unwrap();
        let lay = self.lay;
        let row_words = lay.channels * lay.stride;
        let rows = lay.rows();
        // Tasks of whole rows, a few per thread for balance, but at least 32768 cells
        // each: a task costs more to hand out than a few microseconds of rows.
        // Results do not depend on the split.
        let tasks = 4 * pool.current_num_threads().max(1);
        let rows_per_task = rows.div_ceil(tasks).max(MIN_TASK_CELLS.div_ceil(lay.width));
        let (cur, zero, spills) = (&self.cur[..], &self.zero_row[..], &self.spills);
        let mask = masked.then_some(&self.mask[..]);
        let damage = damaged.then_some(&self.damage[..]);
        let damage_rows = self.damage_rows;
        pool.install(|| {
            self.next
                .par_chunks_mut(rows_per_task * row_words)
                .enumerate()
                .for_each(|(task, out)| {
                    let i = rayon::current_thread_index().unwrap_or(0) % spills.len();
                    let mut spill = spills[i].lock().unwrap_or_else(|e| e.into_inner());
                    let row0 = task * rows_per_task;
                    let n_rows = out.len() / row_words;
                    let at = |row: usize| cur[lay.row_at(row)..].as_ptr();
                    let zero = zero[lay.lanes..].as_ptr();
                    let mut k = 0;
                    while k < n_rows {
                        let g = row0 + k;
                        let (up, down, rows) = lay.call_rows(g, n_rows - k);
                        let args = RowArgs {
                            up: up.map_or(zero, at),
                            mid: at(g),
                            down: down.map_or(zero, at),
                            out: out[k * row_words + lay.lanes..].as_mut_ptr(),
                            mask: mask.map_or(std::ptr::null(), |m| m[g * lay.nw..].as_ptr()),
                            damage: damage.map_or(std::ptr::null(), |d| {
                                d[g % damage_rows * lay.nw..].as_ptr()
                            }),
                            spill: spill.as_mut_ptr(),
                            vectors: lay.vectors,
                            rows,
                        };
                        // SAFETY: the simulator exists only where its kernels' instruction
                        // set is available (`Isa::available`); rows hold `C·stride` words with the data at `lanes`, so
                        // every load of a kernel (one word before the data to one vector
                        // past it) stays inside a row, and the `rows` rows are all in
                        // one board, as are their mask and damage rows (planes with a
                        // vector of slack); the spill area is sized for every kernel;
                        // `out` is in the other buffer.
                        unsafe { kernel.run(&args) };
                        for row in
                            out[k * row_words..(k + rows) * row_words].chunks_exact_mut(row_words)
                        {
                            lay.fix_row(row);
                        }
                        k += rows;
                    }
                });
        });
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(())
    }
}
