//! The slot engine: the portable interpreter of a [`Circuit`] over arena slots, the
//! fallback where the JIT cannot run and the oracle of the JIT's tests.
//!
//! **Step.** Words are processed in blocks of `L` consecutive words (1 to 64; see
//! [`auto_words`]: the widest whose arena stays in L1, 64 words = 4096 cells for a
//! small trained circuit); a slot of the arena is `[u64; L]`, so every gate is one
//! branch-free bitwise operation on `64·L` bits: explicit AVX-512 instructions where the
//! CPU has them, else what LLVM vectorises. Per block: shift the patch words in, run the
//! gates kernel by kernel, write the outputs (blended with the old state under the
//! update mask, damaged cells cleared). Tasks of whole grid rows run in parallel on the
//! crate's rayon pool with one arena per thread, allocated once per [`SlotSim`]; the
//! step loop allocates nothing. The result never depends on the thread count: blocks
//! are independent and async masks come from one random stream per grid row and step.

use std::sync::Mutex;

use rayon::prelude::*;

use super::circuit::{Circuit, Output};
use super::kernels::Arena;
use super::masks::{given_mask, random_mask, StepMask};
use super::packing::{check_channel_read, pack_plane, Geo};
use crate::error::{shape_err, value_err, Result};
use crate::grid::GridShape;
use crate::memory;
use crate::simd::{simd_level, SimdLevel};
use crate::threads;

/// What the buffers are, in the error when the system refuses them.
const WHAT: &str = "the simulator's buffers";

/// Arena bytes per thread the automatic block width aims for: well inside a 48 KiB L1
/// data cache, next to the state rows a block reads.
const ARENA_BUDGET: usize = 40 << 10;

/// Block widths (in 64-bit words) the engine is compiled for.
pub const SUPPORTED_WORDS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Checks a block width asked for (0: automatic).
pub fn check_words(words: usize) -> Result<()> {
    if words != 0 && !SUPPORTED_WORDS.contains(&words) {
        return value_err!("words must be one of {SUPPORTED_WORDS:?} (or 0), got {words}");
    }
    Ok(())
}

/// The block width used when none is asked for: the widest whose arena fits in 40 KiB
/// (64 words = 4096 cells for circuits of up to 80 slots, 16 words up to 320 slots).
/// Wider blocks spread each gate's fixed cost (reading the instruction, the loop) over
/// more cells; an arena that leaves L1 costs more than that saves (`benches/hard.rs`,
/// `LOGICARS_BENCH_WORDS`).
pub fn auto_words(circuit: &Circuit) -> usize {
    let slot_bytes = circuit.n_slots.max(1) * 8;
    SUPPORTED_WORDS
        .iter()
        .rev()
        .copied()
        .find(|&w| w * slot_bytes <= ARENA_BUDGET)
        .unwrap_or(1)
}

/// Writes the patch words of words `base .. end` (at most `L`) into their arena slots;
/// lanes past `end` get 0.
#[inline(always)]
fn fill_block<const L: usize>(
    circuit: &Circuit,
    geo: &Geo,
    state: &[u64],
    base: usize,
    end: usize,
    arena: &mut [[u64; L]],
) {
    let nw = geo.nw;
    if nw == 1 {
        // One word per grid row (W ≤ 64): slot by slot, the block's rows in turn, one
        // shift of one word each: faster than by segments, a call per grid row and patch
        // input (docs/performance.md).
        let n = end - base;
        let mut rows = [[None; 3]; L];
        let mut r = base % geo.height;
        for (lane, nbr) in rows[..n].iter_mut().enumerate() {
            *nbr = geo.neighbour_rows(base + lane, r);
            r = if r + 1 == geo.height { 0 } else { r + 1 };
        }
        for f in &circuit.fills {
            let dst = &mut arena[f.slot as usize];
            for (d, nbr) in dst[..n].iter_mut().zip(&rows) {
                *d = match nbr[f.dr] {
                    Some(src) => geo.shifted_word(state, src, f.channel, f.dc),
                    None => 0,
                };
            }
            dst[n..].fill(0);
        }
        return;
    }
    let (mut row, mut i) = (base / nw, base % nw);
    let mut r = row % geo.height;
    let mut n = base;
    // One segment per grid row the block touches: shift whole runs of words.
    while n < end {
        let len = (nw - i).min(end - n);
        let lanes = n - base..n - base + len;
        let rows = geo.neighbour_rows(row, r);
        for f in &circuit.fills {
            let dst = &mut arena[f.slot as usize][lanes.clone()];
            match rows[f.dr] {
                Some(src) => geo.shifted_segment(state, src, i, f.channel, f.dc, dst),
                None => dst.fill(0),
            }
        }
        n += len;
        row += 1;
        r = if r + 1 == geo.height { 0 } else { r + 1 };
        i = 0;
    }
    if end - base < L {
        for f in &circuit.fills {
            arena[f.slot as usize][end - base..].fill(0);
        }
    }
}

/// Writes the next state of words `base .. end` into `out`, the rows from `row0` on of
/// the next state, blending with the old state under the update mask and clearing
/// damaged cells and the padding columns (`damage` holds whole grid rows: `H` or
/// `B·H` of them).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn write_block<const L: usize>(
    circuit: &Circuit,
    geo: &Geo,
    state: &[u64],
    (base, end): (usize, usize),
    arena: &[[u64; L]],
    mask: Option<&[u64]>,
    damage: Option<&[u64]>,
    out: &mut [u64],
    row0: usize,
) {
    let (nw, c_n) = (geo.nw, geo.channels);
    let (mut row, mut i) = (base / nw, base % nw);
    let mut n = base;
    // One segment per grid row, as in `fill_block`.
    while n < end {
        let len = (nw - i).min(end - n);
        let lanes = n - base..n - base + len;
        let (at, local) = (row * c_n * nw + i, (row - row0) * c_n * nw + i);
        let m = mask.map(|m| &m[n..n + len]);
        let dead = damage.map(|d| {
            let k = n % d.len(); // d holds whole rows, so the segment is contiguous
            &d[k..k + len]
        });
        for (c, src) in circuit.outputs.iter().enumerate() {
            let dst = &mut out[local + c * nw..][..len];
            match *src {
                Output::Const(b) => dst.fill(0u64.wrapping_sub(b as u64)),
                Output::Slot { slot, neg } => {
                    let flip = 0u64.wrapping_sub(neg as u64);
                    for (d, &v) in dst.iter_mut().zip(&arena[slot as usize][lanes.clone()]) {
                        *d = v ^ flip;
                    }
                }
            }
            if let Some(m) = m {
                let old = &state[at + c * nw..][..len];
                for ((d, &m), &o) in dst.iter_mut().zip(m).zip(old) {
                    *d = (o & !m) | (*d & m);
                }
            }
            if let Some(dead) = dead {
                for (d, &k) in dst.iter_mut().zip(dead) {
                    *d &= !k;
                }
            }
            if i + len == nw {
                dst[len - 1] &= geo.last_mask;
            }
        }
        n += len;
        row += 1;
        i = 0;
    }
}

/// Every buffer a simulation needs, allocated once: two packed states, a packed mask,
/// a packed damage plane and one arena per thread (and a copy of the circuit).
pub struct SlotSim {
    circuit: Circuit,
    geo: Geo,
    batch: usize,
    words: usize,
    level: SimdLevel,
    cur: Vec<u64>,
    next: Vec<u64>,
    mask: Vec<u64>,
    damage: Vec<u64>,
    arenas: Vec<Mutex<Arena>>,
}

impl SlotSim {
    /// Buffers for `shape` grids; `words` = 64-bit words per block (one of
    /// [`SUPPORTED_WORDS`], 0 for [`auto_words`]). The state starts all 0.
    pub fn new(
        circuit: &Circuit,
        shape: GridShape,
        periodic: bool,
        words: usize,
    ) -> Result<SlotSim> {
        let words = if words == 0 {
            auto_words(circuit)
        } else {
            words
        };
        check_words(words)?;
        if shape.batch == 0 || shape.height == 0 || shape.width == 0 {
            return shape_err!("batch, height and width must be >= 1, got {shape:?}");
        }
        let geo = Geo::new(shape, circuit.channels, periodic);
        let threads = threads::num_threads().max(1);
        Ok(SlotSim {
            circuit: circuit.clone(),
            geo,
            batch: shape.batch,
            words,
            level: simd_level(),
            cur: memory::try_vec(geo.n_words * geo.channels, 0, WHAT)?,
            next: memory::try_vec(geo.n_words * geo.channels, 0, WHAT)?,
            mask: memory::try_vec(geo.n_words, 0, WHAT)?,
            damage: Vec::new(),
            arenas: (0..threads)
                .map(|_| Ok(Mutex::new(Arena::new(circuit.n_slots, words)?)))
                .collect::<Result<_>>()?,
        })
    }

    /// Bytes of the buffers a simulator of this size holds.
    pub fn estimate_bytes(circuit: &Circuit, shape: GridShape, words: usize) -> usize {
        let n_words = shape
            .batch
            .saturating_mul(shape.height)
            .saturating_mul(shape.width.div_ceil(64));
        let threads = threads::num_threads().max(1);
        n_words
            .saturating_mul(2 * circuit.channels + 2)
            .saturating_add(threads * circuit.n_slots * words.max(64))
            .saturating_mul(8)
    }

    fn cells(&self) -> usize {
        (self.batch)
            .saturating_mul(self.geo.height)
            .saturating_mul(self.geo.width)
    }

    /// 64-bit words per block.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Sets the state from a `B × H × W × C` grid of 0/1 bytes.
    pub fn load(&mut self, x: &[u8]) -> Result<()> {
        let c_n = self.geo.channels;
        if x.len() != self.cells() * c_n {
            return shape_err!(
                "x: expected B*H*W*C = {} values, got {}",
                self.cells() * c_n,
                x.len()
            );
        }
        if let Some(i) = x.iter().position(|&v| v > 1) {
            return value_err!("x: values must be 0 or 1, found {} at flat index {i}", x[i]);
        }
        let (nw, w) = (self.geo.nw, self.geo.width);
        let cur = &mut self.cur;
        threads::pool().install(|| {
            cur.par_chunks_mut(nw * c_n)
                .zip(x.par_chunks(w * c_n))
                .for_each(|(words, cells)| {
                    // A row of one word (W <= 64) cell by cell, every channel at once:
                    // the bytes in order (a wide model's 128 channels strided by C were
                    // slow: docs/performance.md). Wider rows a word at a time.
                    if nw == 1 {
                        words.fill(0);
                        for (k, cell) in cells.chunks_exact(c_n).enumerate() {
                            for (word, &v) in words.iter_mut().zip(cell) {
                                *word |= ((v != 0) as u64) << k;
                            }
                        }
                        return;
                    }
                    for c in 0..c_n {
                        for i in 0..nw {
                            let mut v = 0u64;
                            let end = (64 * (i + 1)).min(w);
                            for (k, col) in (64 * i..end).enumerate() {
                                v |= ((cells[col * c_n + c] != 0) as u64) << k;
                            }
                            words[c * nw + i] = v;
                        }
                    }
                })
        });
        Ok(())
    }

    /// Sets the damage plane: `H × W` (every board) or `B × H × W` bytes, 1 = the cell
    /// is forced to 0 after the steps that apply damage. `None` removes it.
    pub fn set_damage(&mut self, cells: Option<&[u8]>) -> Result<()> {
        let Some(d) = cells else {
            self.damage = Vec::new();
            return Ok(());
        };
        let hw = self.geo.height * self.geo.width;
        let boards = if d.len() == hw {
            1
        } else if d.len() == hw * self.batch {
            self.batch
        } else {
            return shape_err!(
                "damage: expected H*W = {hw} or B*H*W = {} values, got {}",
                hw * self.batch,
                d.len()
            );
        };
        if let Some(i) = d.iter().position(|&v| v > 1) {
            return value_err!(
                "damage: values must be 0 or 1, found {} at flat index {i}",
                d[i]
            );
        }
        let mut plane = memory::try_vec(boards * self.geo.height * self.geo.nw, 0u64, WHAT)?;
        threads::pool().install(|| pack_plane(&self.geo, d, &mut plane));
        self.damage = plane;
        Ok(())
    }

    /// Writes the current state into `out` as a `B × H × W × C` grid of 0/1 bytes.
    pub fn read_into(&self, out: &mut [u8]) {
        let all: Vec<usize> = (0..self.geo.channels).collect();
        self.read_channels_into(&all, out)
    }

    /// Writes channels `channels` of the current state, in that order, into `out` as a
    /// `B × H × W × L` grid of 0/1 bytes (`L = channels.len()`).
    pub fn read_channels_into(&self, channels: &[usize], out: &mut [u8]) {
        let (c_n, nw, w) = (self.geo.channels, self.geo.nw, self.geo.width);
        let l = channels.len();
        check_channel_read(channels, c_n, self.cells(), out);
        if l == 0 {
            return;
        }
        threads::pool().install(|| {
            out.par_chunks_mut(w * l)
                .zip(self.cur.par_chunks(nw * c_n))
                .for_each(|(cells, words)| {
                    for (col, cell) in cells.chunks_exact_mut(l).enumerate() {
                        let (i, k) = (col / 64, col % 64);
                        for (v, &c) in cell.iter_mut().zip(channels) {
                            *v = ((words[c * nw + i] >> k) & 1) as u8;
                        }
                    }
                })
        });
    }

    /// Packs this step's update mask; false when every cell updates.
    fn prepare_mask(&mut self, mask: StepMask<'_>) -> Result<bool> {
        let geo = self.geo;
        let hw = geo.height * geo.width;
        match mask {
            StepMask::All => Ok(false),
            StepMask::Given { masks, steps, t } => {
                if masks.len() != self.batch * steps * hw || t >= steps {
                    return shape_err!(
                        "masks: expected B*steps*H*W = {} values and t < steps = {steps}, got {} values and t = {t}",
                        self.batch * steps * hw,
                        masks.len()
                    );
                }
                given_mask(&geo, masks, steps, t, &mut self.mask);
                Ok(true)
            }
            StepMask::Random { fire_rate, seed, t } => {
                if !(fire_rate > 0.0 && fire_rate <= 1.0) {
                    return value_err!("fire_rate must be in (0, 1], got {fire_rate}");
                }
                random_mask(&geo, &mut self.mask, fire_rate, seed, t);
                Ok(true)
            }
        }
    }

    /// Runs one step: every cell (or the masked ones) takes its new state, then, with
    /// `damaged`, the cells of the damage plane are set to 0 in every channel.
    pub fn step(&mut self, mask: StepMask<'_>, damaged: bool) -> Result<()> {
        let masked = threads::pool().install(|| self.prepare_mask(mask))?;
        match self.words {
            1 => self.step_blocks::<1>(masked, damaged),
            2 => self.step_blocks::<2>(masked, damaged),
            4 => self.step_blocks::<4>(masked, damaged),
            8 => self.step_blocks::<8>(masked, damaged),
            16 => self.step_blocks::<16>(masked, damaged),
            32 => self.step_blocks::<32>(masked, damaged),
            64 => self.step_blocks::<64>(masked, damaged),
            w => unreachable!("words = {w} was validated"),
        }
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(())
    }

    fn step_blocks<const L: usize>(&mut self, masked: bool, damaged: bool) {
        let pool = threads::pool();
        let SlotSim {
            circuit,
            geo,
            level,
            cur,
            next,
            mask,
            damage,
            arenas,
            ..
        } = self;
        let (circuit, geo, level) = (&*circuit, *geo, *level);
        let (nw, c_n) = (geo.nw, geo.channels);
        let total_rows = geo.n_words / nw;
        // Tasks of whole grid rows, a few per thread for balance, each at least a block;
        // results do not depend on the split.
        let tasks = 4 * pool.current_num_threads().max(1);
        let rows_per_task = L.div_ceil(nw).max(total_rows.div_ceil(tasks));
        let mask = masked.then_some(&mask[..]);
        let damage = (damaged && !damage.is_empty()).then_some(&damage[..]);
        let cur: &[u64] = cur;
        pool.install(|| {
            next.par_chunks_mut(rows_per_task * nw * c_n)
                .enumerate()
                .for_each(|(task, out)| {
                    let i = rayon::current_thread_index().unwrap_or(0) % arenas.len();
                    let mut guard = arenas[i].lock().unwrap_or_else(|e| e.into_inner());
                    let arena = guard.slots::<L>();
                    let row0 = task * rows_per_task;
                    let stop = (row0 + out.len() / (nw * c_n)) * nw;
                    let mut base = row0 * nw;
                    while base < stop {
                        let end = (base + L).min(stop);
                        fill_block::<L>(circuit, &geo, cur, base, end, arena);
                        circuit.eval::<L>(arena, level);
                        write_block::<L>(
                            circuit,
                            &geo,
                            cur,
                            (base, end),
                            arena,
                            mask,
                            damage,
                            out,
                            row0,
                        );
                        base = end;
                    }
                });
        });
    }
}
