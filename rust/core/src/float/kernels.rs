//! The two hot loops: run a step's gate program forward, and backward, over one
//! chunk of cells (an arena row per activation, `Lanes::width` floats long). The same
//! generic code is compiled for several instruction sets and the best one the CPU has
//! is chosen once at run time, so a portable wheel still gets AVX2/AVX-512 with FMA.

// The kernels index several rows by one lane counter on purpose: it is what vectorises.
#![allow(clippy::needless_range_loop)]

use super::program::{BackInstr, Backward, Gates, Instr};
use crate::simd::{lanes_used, SimdLevel, DEFAULT_CHUNK_CELLS, LANES, MAX_CHUNK_CELLS};

/// A chunk in its arena: rows of `width` floats, of which the first `cells` lanes
/// (rounded up to whole SIMD blocks) are computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lanes {
    pub cells: usize,
    pub width: usize,
}

impl Lanes {
    /// Every lane of a chunk of the default width.
    pub const WHOLE: Lanes = Lanes {
        cells: DEFAULT_CHUNK_CELLS,
        width: DEFAULT_CHUNK_CELLS,
    };
}

/// Sets the CPU to flush denormal floats to zero while alive, restoring the previous
/// mode on drop. Gradients shrink through many layers and steps into the denormal
/// range, where x86 arithmetic is ~100x slower; values below 1e-38 do not matter.
pub struct FlushDenormals {
    #[cfg(target_arch = "x86_64")]
    saved: u32,
}

impl FlushDenormals {
    #[cfg(target_arch = "x86_64")]
    pub fn new() -> FlushDenormals {
        const FTZ_DAZ: u32 = 0x8040;
        let mut saved: u32 = 0;
        // SAFETY: stmxcsr/ldmxcsr only read and write the SSE control register.
        unsafe {
            std::arch::asm!("stmxcsr [{}]", in(reg) &mut saved, options(nostack));
            let mode = saved | FTZ_DAZ;
            std::arch::asm!("ldmxcsr [{}]", in(reg) &mode, options(nostack));
        }
        FlushDenormals { saved }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub fn new() -> FlushDenormals {
        FlushDenormals {}
    }
}

impl Default for FlushDenormals {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for FlushDenormals {
    fn drop(&mut self) {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: restores the mode saved in `new`.
        unsafe {
            std::arch::asm!("ldmxcsr [{}]", in(reg) &self.saved, options(nostack));
        }
    }
}

/// `x·y + z`, fused or not.
trait MulAdd {
    fn mul_add(x: f32, y: f32, z: f32) -> f32;
}
struct Separate;
struct Fused;
impl MulAdd for Separate {
    #[inline(always)]
    fn mul_add(x: f32, y: f32, z: f32) -> f32 {
        x * y + z
    }
}
impl MulAdd for Fused {
    #[inline(always)]
    fn mul_add(x: f32, y: f32, z: f32) -> f32 {
        x.mul_add(y, z)
    }
}

/// Adds the lane sums of the four coefficient-gradient accumulators to `acc[0..4]`.
/// Every implementation adds in `tree_sum`'s order, so results do not depend on it.
trait Reduce {
    fn add_sums(sums: [[f32; LANES]; 4], acc: &mut [f64]);
}

/// One `tree_sum` per accumulator.
struct EachTree;
impl Reduce for EachTree {
    #[inline(always)]
    fn add_sums(sums: [[f32; LANES]; 4], acc: &mut [f64]) {
        for (r, s) in sums.into_iter().enumerate() {
            acc[r] += tree_sum(s) as f64;
        }
    }
}

/// Rows of an arena addressed through a raw pointer: a gate writes one row while
/// reading two others of the same buffer. `Program::compile` guarantees that an
/// instruction's output row differs from its input rows and that every row index is
/// below `n_rows`; callers check the arena holds `n_rows` rows of `width` floats, and
/// that the `N` lanes read fit in a row.
///
/// `W`: the row width when it is known at compile time (one of the widths `on_lanes`
/// lists: the address of a row is then a shift or a constant multiply, measurably faster
/// than a width read at run time: docs/performance.md), or 0.
#[derive(Clone, Copy)]
struct Rows<const W: usize> {
    at: *mut f32,
    width: usize,
}

impl<const W: usize> Rows<W> {
    #[inline(always)]
    fn stride(self) -> usize {
        if W == 0 {
            self.width
        } else {
            W
        }
    }
    #[inline(always)]
    unsafe fn get<const N: usize>(self, r: u32) -> &'static [f32; N] {
        &*(self.at.add(r as usize * self.stride()) as *const [f32; N])
    }
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    unsafe fn get_mut<const N: usize>(self, r: u32) -> &'static mut [f32; N] {
        &mut *(self.at.add(r as usize * self.stride()) as *mut [f32; N])
    }
}

/// `N`: the cells of the chunk that are computed, a whole number of SIMD blocks: a
/// chunk at the end of a grid computes only the blocks holding cells, since lanes never
/// mix and its padding lanes are never read. `PIECE`: the cells of a gate computed in
/// registers before they are stored, where it divides `N` (else all `N`).
#[inline(always)]
fn forward_impl<A: MulAdd, const W: usize, const N: usize, const PIECE: usize>(
    instrs: &[Instr],
    coefs: &[[f32; 4]],
    act: &mut [f32],
    width: usize,
) {
    let rows = Rows::<W> {
        at: act.as_mut_ptr(),
        width,
    };
    for ins in instrs {
        let [c0, c1, c2, c3] = coefs[ins.coef as usize];
        // SAFETY: see `Rows`; out != a, b.
        let (a, b, out) = unsafe {
            (
                rows.get::<N>(ins.a),
                rows.get::<N>(ins.b),
                rows.get_mut::<N>(ins.out),
            )
        };
        // Computed into a local row, then stored: the rows come from one raw pointer,
        // so the compiler cannot prove `out` misses `a` and `b`, and where it does not
        // version the loop (rows of 16 or 32 cells at a run-time width) it made scalar
        // code of it. A row of `N` in pieces of `PIECE` where it divides: a row of 128
        // is 16 of AVX2's 16 registers, and went through the stack.
        let piece = if N.is_multiple_of(PIECE) { PIECE } else { N };
        for at in (0..N).step_by(piece) {
            let mut row = [0f32; N];
            for i in at..at + piece {
                // c0 + c1·a + (c2 + c3·a)·b: three multiply-adds.
                let lin = A::mul_add(c1, a[i], c0);
                row[i] = A::mul_add(A::mul_add(c3, a[i], c2), b[i], lin);
            }
            out[at..at + piece].copy_from_slice(&row[at..at + piece]);
        }
    }
}

/// A gate's four coefficient sums on one chunk, lane by lane, before their reduction.
type Sums = [[f32; LANES]; 4];

/// Sum of 16 lanes by halving: a fixed order, and a short dependency chain.
#[inline(always)]
fn tree_sum(mut v: [f32; LANES]) -> f32 {
    let mut n = LANES;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            v[i] += v[i + n];
        }
    }
    v[0]
}

/// Backward through one gate whose input rows differ: input gradients (stored or
/// added), and the four sums `Σgy, Σgy·a, Σgy·b, Σgy·a·b` of its coefficient gradient.
#[inline(always)]
fn backward_gate<A: MulAdd, const N: usize, const STORE_A: bool, const STORE_B: bool>(
    c: [f32; 4],
    (a, b, gy): (&[f32; N], &[f32; N], &[f32; N]),
    (ga, gb): (&mut [f32; N], &mut [f32; N]),
) -> Sums {
    let [_, c1, c2, c3] = c;
    let mut sums = [[0f32; LANES]; 4];
    for blk in 0..N / LANES {
        for l in 0..LANES {
            let i = blk * LANES + l;
            let (g, av, bv) = (gy[i], a[i], b[i]);
            let da = g * A::mul_add(c3, bv, c1);
            let db = g * A::mul_add(c3, av, c2);
            ga[i] = if STORE_A { da } else { ga[i] + da };
            gb[i] = if STORE_B { db } else { gb[i] + db };
            let g_a = g * av;
            sums[0][l] += g;
            sums[1][l] += g_a;
            sums[2][l] += g * bv;
            sums[3][l] = A::mul_add(g_a, bv, sums[3][l]);
        }
    }
    sums
}

/// The same for a gate reading one row twice (possible with `random` wiring).
#[inline(always)]
fn backward_gate_same_input<A: MulAdd, const N: usize>(
    ins: &BackInstr,
    c: [f32; 4],
    (a, gy): (&[f32; N], &[f32; N]),
    ga: &mut [f32; N],
) -> Sums {
    let [_, c1, c2, c3] = c;
    let mut sums = [[0f32; LANES]; 4];
    for blk in 0..N / LANES {
        for l in 0..LANES {
            let i = blk * LANES + l;
            let (g, av) = (gy[i], a[i]);
            let d = g * (A::mul_add(c3, av, c1) + A::mul_add(c3, av, c2));
            ga[i] = if ins.store_a { d } else { ga[i] + d };
            let g_a = g * av;
            sums[0][l] += g;
            sums[1][l] += g_a;
            sums[2][l] += g_a;
            sums[3][l] = A::mul_add(g_a, av, sums[3][l]);
        }
    }
    sums
}

/// How many gates ahead the backward asks for its coefficients, sums and input rows. A
/// layer's gates are sorted by input row, so their parameters come in a shuffled order,
/// and after the forward pass has streamed a whole arena through the cache each `acc`
/// and `coefs` entry missed. The input rows: a 128-cell chunk's kept arena (2.4 MB for
/// the checkerboard) overflows a Zen 3 core's 512 KiB L2, and the rows a gate reads are
/// not the ones the hardware prefetcher guesses: 2-6% off the checkerboard's epoch
/// there, but 1-3% onto the coloured G's (rows of 64 cells, which the hardware follows),
/// so only rows of at least `ROW_PREFETCH_CELLS` are prefetched (nothing gained in the
/// forward pass: docs/performance.md).
const PREFETCH_AHEAD: usize = 4;

/// The fewest cells per row whose input rows the backward prefetches.
const ROW_PREFETCH_CELLS: usize = 128;

/// Bytes per cache line: the stride of the row prefetches.
const CACHE_LINE: usize = 64;

/// Hints the CPU to load the cache line at `p` (no-op off x86).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[inline(always)]
fn backward_impl<A: MulAdd, R: Reduce, const W: usize, const N: usize>(
    instrs: &[BackInstr],
    coefs: &[[f32; 4]],
    act: &[f32],
    grad: &mut [f32],
    acc: &mut [f64],
    width: usize,
) {
    let act = Rows::<W> {
        at: act.as_ptr() as *mut f32,
        width,
    };
    let grad = Rows::<W> {
        at: grad.as_mut_ptr(),
        width,
    };
    // Each gate's sums are reduced after the next gate's loop is issued: the reduction is
    // a long chain of dependent shuffles, and started right after its own gate it held
    // the out-of-order window up. The sums still reach `acc` in gate order.
    let mut pending: Option<(Sums, usize)> = None;
    for (i, ins) in instrs.iter().enumerate() {
        if let Some(ahead) = instrs.get(i + PREFETCH_AHEAD) {
            prefetch(acc.as_ptr().wrapping_add(ahead.coef as usize * 4) as *const u8);
            prefetch(coefs.as_ptr().wrapping_add(ahead.coef as usize) as *const u8);
            if N >= ROW_PREFETCH_CELLS {
                for r in [ahead.a, ahead.b] {
                    let row = act.at.wrapping_add(r as usize * act.stride()) as *const u8;
                    for line in (0..N * 4).step_by(CACHE_LINE) {
                        prefetch(row.wrapping_add(line));
                    }
                }
            }
        }
        let c = coefs[ins.coef as usize];
        // SAFETY: see `Rows`; `act` and `grad` are different buffers, and the gradient
        // rows ga, gb (distinct in this branch) differ from gy (`program::backward_gates`).
        let sums = unsafe {
            let (a, gy) = (act.get::<N>(ins.a), grad.get::<N>(ins.gy));
            if ins.a == ins.b {
                backward_gate_same_input::<A, N>(ins, c, (a, gy), grad.get_mut::<N>(ins.ga))
            } else {
                let rows = (a, act.get::<N>(ins.b), gy);
                let g = (grad.get_mut::<N>(ins.ga), grad.get_mut::<N>(ins.gb));
                match (ins.store_a, ins.store_b) {
                    (true, true) => backward_gate::<A, N, true, true>(c, rows, g),
                    (true, false) => backward_gate::<A, N, true, false>(c, rows, g),
                    (false, true) => backward_gate::<A, N, false, true>(c, rows, g),
                    (false, false) => backward_gate::<A, N, false, false>(c, rows, g),
                }
            }
        };
        if let Some((sums, at)) = pending.replace((sums, ins.coef as usize * 4)) {
            R::add_sums(sums, &mut acc[at..at + 4]);
        }
    }
    if let Some((sums, at)) = pending {
        R::add_sums(sums, &mut acc[at..at + 4]);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::*;

    /// The four tree sums interleaved in 512-bit registers: each halving step of
    /// `tree_sum` adds the same lane pairs, for all four accumulators at once.
    struct Avx512Trees;
    impl Reduce for Avx512Trees {
        #[inline(always)]
        fn add_sums(sums: [[f32; LANES]; 4], acc: &mut [f64]) {
            assert!(acc.len() >= 4);
            // SAFETY: only inlined into the avx512f functions below; `acc` holds 4 values.
            unsafe {
                let [s0, s1, s2, s3] = sums.map(|s| _mm512_loadu_ps(s.as_ptr()));
                // Halve 16 -> 8: quarters (0, 1) + (2, 3) of two accumulators per register.
                let t01 = _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x44>(s0, s1),
                    _mm512_shuffle_f32x4::<0xEE>(s0, s1),
                );
                let t23 = _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x44>(s2, s3),
                    _mm512_shuffle_f32x4::<0xEE>(s2, s3),
                );
                // 8 -> 4: quarter r of the result belongs to accumulator r.
                let u = _mm512_add_ps(
                    _mm512_shuffle_f32x4::<0x88>(t01, t23),
                    _mm512_shuffle_f32x4::<0xDD>(t01, t23),
                );
                // 4 -> 2 -> 1 inside each quarter.
                let w = _mm512_add_ps(u, _mm512_permute_ps::<0x0E>(u));
                let z = _mm512_add_ps(w, _mm512_permute_ps::<0x01>(w));
                let lane0 = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 8, 4, 0);
                let totals = _mm512_castps512_ps128(_mm512_permutexvar_ps(lane0, z));
                let at = acc.as_mut_ptr();
                _mm256_storeu_pd(
                    at,
                    _mm256_add_pd(_mm256_loadu_pd(at), _mm256_cvtps_pd(totals)),
                );
            }
        }
    }

    /// The same with AVX2: each accumulator's two 8-lane halves added, then two
    /// accumulators per register for the 4 -> 2 -> 1 steps. Left to the compiler,
    /// `EachTree` became scalar inserts and shuffles through the stack, about as many
    /// instructions as a 64-cell gate's whole backward (docs/performance.md).
    struct Avx2Trees;
    impl Reduce for Avx2Trees {
        #[inline(always)]
        fn add_sums(sums: [[f32; LANES]; 4], acc: &mut [f64]) {
            assert!(acc.len() >= 4);
            // SAFETY: only inlined into the avx2 functions below; `acc` holds 4 values.
            unsafe {
                // 16 -> 8: lanes i and i + 8 of each accumulator.
                let [t0, t1, t2, t3] = sums.map(|s| {
                    _mm256_add_ps(
                        _mm256_loadu_ps(s.as_ptr()),
                        _mm256_loadu_ps(s.as_ptr().add(8)),
                    )
                });
                // 8 -> 4: lanes i and i + 4; accumulators (0, 1) and (2, 3) share a register,
                // one per 128-bit half.
                let u01 = _mm256_add_ps(
                    _mm256_permute2f128_ps::<0x20>(t0, t1),
                    _mm256_permute2f128_ps::<0x31>(t0, t1),
                );
                let u23 = _mm256_add_ps(
                    _mm256_permute2f128_ps::<0x20>(t2, t3),
                    _mm256_permute2f128_ps::<0x31>(t2, t3),
                );
                // 4 -> 2: lanes (0, 1) + (2, 3) of each half; halves hold (0, 2) and (1, 3).
                let w = _mm256_add_ps(
                    _mm256_shuffle_ps::<0x44>(u01, u23),
                    _mm256_shuffle_ps::<0xEE>(u01, u23),
                );
                // 2 -> 1: lane 0 + lane 1 of each pair; the low half holds [s0, s2, ..],
                // the high half [s1, s3, ..].
                let z = _mm256_add_ps(
                    _mm256_shuffle_ps::<0x88>(w, w),
                    _mm256_shuffle_ps::<0xDD>(w, w),
                );
                let totals =
                    _mm_unpacklo_ps(_mm256_castps256_ps128(z), _mm256_extractf128_ps::<1>(z));
                let at = acc.as_mut_ptr();
                _mm256_storeu_pd(
                    at,
                    _mm256_add_pd(_mm256_loadu_pd(at), _mm256_cvtps_pd(totals)),
                );
            }
        }
    }

    /// `Avx2Trees::add_sums` on its own, for the test that it matches `EachTree`.
    #[cfg(test)]
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn add_sums_avx2(sums: [[f32; LANES]; 4], acc: &mut [f64]) {
        Avx2Trees::add_sums(sums, acc)
    }

    /// `Avx512Trees::add_sums` on its own, for the test that it matches `EachTree`.
    #[cfg(test)]
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub unsafe fn add_sums_avx512(sums: [[f32; LANES]; 4], acc: &mut [f64]) {
        Avx512Trees::add_sums(sums, acc)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn forward_avx2<const W: usize, const N: usize>(
        i: &[Instr],
        c: &[[f32; 4]],
        act: &mut [f32],
        w: usize,
    ) {
        forward_impl::<Fused, W, N, HALF_ROW>(i, c, act, w)
    }
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub unsafe fn forward_avx512<const W: usize, const N: usize>(
        i: &[Instr],
        c: &[[f32; 4]],
        act: &mut [f32],
        w: usize,
    ) {
        forward_impl::<Fused, W, N, MAX_CHUNK_CELLS>(i, c, act, w)
    }
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn backward_avx2<const W: usize, const N: usize>(
        i: &[BackInstr],
        c: &[[f32; 4]],
        act: &[f32],
        grad: &mut [f32],
        acc: &mut [f64],
        w: usize,
    ) {
        backward_impl::<Fused, Avx2Trees, W, N>(i, c, act, grad, acc, w)
    }
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub unsafe fn backward_avx512<const W: usize, const N: usize>(
        i: &[BackInstr],
        c: &[[f32; 4]],
        act: &[f32],
        grad: &mut [f32],
        acc: &mut [f64],
        w: usize,
    ) {
        backward_impl::<Fused, Avx512Trees, W, N>(i, c, act, grad, acc, w)
    }
}

/// The AVX2 forward's piece of a row (16 vector registers): 64 cells.
const HALF_ROW: usize = MAX_CHUNK_CELLS / 2;

fn check_arena(n_rows: usize, width: usize, arena: &[f32]) {
    // Every row index of a gate list is below its n_rows (`program`).
    assert!(
        arena.len() >= n_rows * width,
        "arena smaller than the program needs"
    );
}

fn check_lanes(lanes: Lanes) {
    assert!(
        lanes.width <= MAX_CHUNK_CELLS && lanes_used(lanes.cells) <= lanes.width,
        "a chunk's lanes must fit its row"
    );
}

fn forward_portable<const W: usize, const N: usize>(
    i: &[Instr],
    c: &[[f32; 4]],
    act: &mut [f32],
    w: usize,
) {
    forward_impl::<Separate, W, N, MAX_CHUNK_CELLS>(i, c, act, w)
}

fn backward_portable<const W: usize, const N: usize>(
    i: &[BackInstr],
    c: &[[f32; 4]],
    act: &[f32],
    grad: &mut [f32],
    acc: &mut [f64],
    w: usize,
) {
    backward_impl::<Separate, EachTree, W, N>(i, c, act, grad, acc, w)
}

/// Calls `$kernel::<W, N>($args)` with `N` the chunk's cells rounded up to whole blocks
/// (at most `MAX_CHUNK_CELLS`, which `check_lanes` asserts) and `W` its row width where
/// that is one of the widths the presets use (64 and 80), else 0: the width read at run
/// time.
macro_rules! on_lanes {
    ($lanes:expr, $($kernel:ident)::+, $($args:expr),*) => {
        match ($lanes.width, lanes_used($lanes.cells)) {
            (64, 16) => $($kernel)::+::<64, 16>($($args),*),
            (64, 32) => $($kernel)::+::<64, 32>($($args),*),
            (64, 48) => $($kernel)::+::<64, 48>($($args),*),
            (64, 64) => $($kernel)::+::<64, 64>($($args),*),
            (80, 16) => $($kernel)::+::<80, 16>($($args),*),
            (80, 32) => $($kernel)::+::<80, 32>($($args),*),
            (80, 48) => $($kernel)::+::<80, 48>($($args),*),
            (80, 64) => $($kernel)::+::<80, 64>($($args),*),
            (80, 80) => $($kernel)::+::<80, 80>($($args),*),
            (_, n) => match n / LANES {
                1 => $($kernel)::+::<0, { LANES }>($($args),*),
                2 => $($kernel)::+::<0, { 2 * LANES }>($($args),*),
                3 => $($kernel)::+::<0, { 3 * LANES }>($($args),*),
                4 => $($kernel)::+::<0, { 4 * LANES }>($($args),*),
                5 => $($kernel)::+::<0, { 5 * LANES }>($($args),*),
                6 => $($kernel)::+::<0, { 6 * LANES }>($($args),*),
                7 => $($kernel)::+::<0, { 7 * LANES }>($($args),*),
                _ => $($kernel)::+::<0, MAX_CHUNK_CELLS>($($args),*),
            },
        }
    };
}

/// Runs the gates forward on one chunk's arena (`act`: rows of `lanes.width` floats)
/// for its first `lanes.cells` cells (rounded up to a whole SIMD block; the other lanes
/// are left as they are).
pub fn forward(gates: &Gates, coefs: &[[f32; 4]], act: &mut [f32], lanes: Lanes, level: SimdLevel) {
    forward_instrs(&gates.instrs, gates.n_rows, coefs, act, lanes, level)
}

/// `forward` on a list of gates over an arena of `n_rows` rows.
pub fn forward_instrs(
    instrs: &[Instr],
    n_rows: usize,
    coefs: &[[f32; 4]],
    act: &mut [f32],
    lanes: Lanes,
    level: SimdLevel,
) {
    check_lanes(lanes);
    check_arena(n_rows, lanes.width, act);
    let _ftz = FlushDenormals::new();
    let w = lanes.width;
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the level is only chosen when the CPU has these features.
        SimdLevel::Avx512 => unsafe {
            on_lanes!(lanes, x86::forward_avx512, instrs, coefs, act, w)
        },
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => unsafe { on_lanes!(lanes, x86::forward_avx2, instrs, coefs, act, w) },
        _ => on_lanes!(lanes, forward_portable, instrs, coefs, act, w),
    }
}

/// Runs the gates backward on one chunk's first `lanes.cells` cells: `act` holds the
/// activations of the full forward program (`act_rows` rows), `grad` must hold the
/// output rows' gradients and zeros on the `unwritten` patch rows; coefficient sums
/// are added to `acc` (4 per parameter).
pub fn backward(
    back: &Backward,
    act_rows: usize,
    coefs: &[[f32; 4]],
    (act, grad): (&[f32], &mut [f32]),
    acc: &mut [f64],
    lanes: Lanes,
    level: SimdLevel,
) {
    let rows = (act_rows, back.n_rows);
    backward_instrs(&back.instrs, rows, coefs, (act, grad), acc, lanes, level)
}

/// `backward` on a list of backward gates; `(act_rows, grad_rows)`: the arenas' rows.
pub fn backward_instrs(
    instrs: &[BackInstr],
    (act_rows, grad_rows): (usize, usize),
    coefs: &[[f32; 4]],
    (act, grad): (&[f32], &mut [f32]),
    acc: &mut [f64],
    lanes: Lanes,
    level: SimdLevel,
) {
    check_lanes(lanes);
    check_arena(act_rows, lanes.width, act);
    check_arena(grad_rows, lanes.width, grad);
    let _ftz = FlushDenormals::new();
    let w = lanes.width;
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the level is only chosen when the CPU has these features.
        SimdLevel::Avx512 => unsafe {
            on_lanes!(
                lanes,
                x86::backward_avx512,
                instrs,
                coefs,
                act,
                grad,
                acc,
                w
            )
        },
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx2 => unsafe {
            on_lanes!(lanes, x86::backward_avx2, instrs, coefs, act, grad, acc, w)
        },
        _ => on_lanes!(lanes, backward_portable, instrs, coefs, act, grad, acc, w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums of mixed magnitude, so that any other order of additions rounds differently.
    fn mixed_sums(count: usize) -> Vec<[[f32; LANES]; 4]> {
        let mut x = 0x2545_f491_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x as f32 / u32::MAX as f32 - 0.5) * 10f32.powi((x % 9) as i32 - 4)
        };
        (0..count)
            .map(|_| std::array::from_fn(|_| std::array::from_fn(|_| next())))
            .collect()
    }

    /// `add` gives `EachTree`'s bits on every one of the mixed sums.
    fn adds_in_tree_order(add: impl Fn([[f32; LANES]; 4], &mut [f64])) {
        for sums in mixed_sums(100) {
            let start = [1.0, -2.5, 1e-3, 7.0];
            let (mut want, mut got) = (start, start);
            EachTree::add_sums(sums, &mut want);
            add(sums, &mut got);
            assert_eq!(want.map(f64::to_bits), got.map(f64::to_bits));
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn avx512_sums_add_in_tree_order() {
        if SimdLevel::best_supported() != SimdLevel::Avx512 {
            return;
        }
        // SAFETY: the CPU has AVX-512 (checked above).
        adds_in_tree_order(|sums, acc| unsafe { x86::add_sums_avx512(sums, acc) });
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn avx2_sums_add_in_tree_order() {
        if !SimdLevel::Avx2.is_supported() {
            return;
        }
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        adds_in_tree_order(|sums, acc| unsafe { x86::add_sums_avx2(sums, acc) });
    }
}
