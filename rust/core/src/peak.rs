//! The machine's measured peak of fused multiply-adds, the yardstick for "fraction of
//! peak" in `python -m logicars bench`. Computing it from the clock and a guessed number
//! of FMA units got Zen 4 wrong (a 512-bit FMA issues once per cycle there, as two
//! 256-bit halves), so it is measured: independent FMA chains, enough of them to hide
//! the FMA latency, with the instruction set the kernels run with, on every thread of
//! the engine's pool at once.

use std::hint::black_box;
use std::time::Instant;

use crate::simd::SimdLevel;
use crate::threads;

/// Independent accumulators: latency (4 cycles) × FMA issue per cycle (2) plus margin,
/// and few enough that they and the two factors stay in registers with AVX2 (16 of
/// them): 24 spilled to the stack and measured a third of Zen 3's peak.
const CHAINS: usize = 12;
// The AVX2 loop's accumulators and its two factors fit the 16 YMM registers.
const _: () = assert!(CHAINS + 2 <= 16);
/// f32 lanes per accumulator of the portable and AVX-512 loops (one 512-bit register);
/// AVX2's accumulators hold half as many.
const LANES: usize = 16;
/// Iterations of one measurement: 12 × 16 × 2^18 ≈ 50 M lane-operations per thread,
/// about a millisecond on one core: short, so that some rounds run undisturbed on a busy
/// machine.
const ITERATIONS: usize = 1 << 18;
/// Measurements per call; each thread's best counts (other processes only ever slow
/// it down).
const ROUNDS: usize = 30;
/// Pause between rounds, so the rounds span ~0.2 s: on a VM the host sometimes takes
/// one vCPU for tens of milliseconds, and 30 back-to-back rounds could all fit inside
/// such a spell, halving the peak measured (docs/performance.md).
const PAUSE: std::time::Duration = std::time::Duration::from_millis(5);

/// FMA lane-operations (`x·y + z` on one f32) per second summed over every thread of
/// the engine's pool, with the instructions of `level` (the kernels' is
/// `simd::simd_level()`; a level this CPU lacks runs portable code). `Portable`
/// counts a separate multiply and add as one operation. All threads run at once; each
/// times its own chains, and the sum of each thread's best round is the peak, so a
/// round in which another process took one core spoils only that thread's figure.
pub fn fma_lane_ops_per_s(level: SimdLevel) -> f64 {
    let pool = threads::pool();
    let mut best = vec![f64::INFINITY; pool.current_num_threads()];
    for _ in 0..ROUNDS {
        let seconds = pool.broadcast(|_| {
            let start = Instant::now();
            black_box(chains(level, ITERATIONS));
            start.elapsed().as_secs_f64()
        });
        for (b, s) in best.iter_mut().zip(seconds) {
            *b = b.min(s);
        }
        std::thread::sleep(PAUSE);
    }
    let ops = (CHAINS * lanes(level) * ITERATIONS) as f64;
    best.iter().map(|s| ops / s).sum()
}

/// f32 lanes of one accumulator of `chains` at `level`.
fn lanes(level: SimdLevel) -> usize {
    if level == SimdLevel::Avx2 && level.is_supported() {
        LANES / 2
    } else {
        LANES
    }
}

/// Runs `iterations` multiply-adds on each of `CHAINS` × `lanes(level)` independent lanes
/// and returns a sum of the lanes (so that the work cannot be dropped).
fn chains(level: SimdLevel, iterations: usize) -> f32 {
    // Factors near 1 keep the values finite and normal for any iteration count.
    let (mul, add) = (black_box(0.999_999_9f32), black_box(1e-7f32));
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has the level's features (checked in the guard).
        SimdLevel::Avx512 if level.is_supported() => unsafe {
            x86::chains_avx512(mul, add, iterations)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        SimdLevel::Avx2 if level.is_supported() => unsafe {
            x86::chains_avx2(mul, add, iterations)
        },
        _ => chains_portable(mul, add, iterations),
    }
}

/// What the build's baseline vectorises: multiply and add kept separate, as in the
/// portable kernels.
fn chains_portable(mul: f32, add: f32, iterations: usize) -> f32 {
    let mut acc = [[1f32; LANES]; CHAINS];
    for _ in 0..iterations {
        for chain in acc.iter_mut() {
            for v in chain.iter_mut() {
                *v = *v * mul + add;
            }
        }
    }
    acc.iter().flatten().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{CHAINS, LANES};
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub unsafe fn chains_avx512(mul: f32, add: f32, iterations: usize) -> f32 {
        let (m, a) = (_mm512_set1_ps(mul), _mm512_set1_ps(add));
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        for _ in 0..iterations {
            for v in acc.iter_mut() {
                *v = _mm512_fmadd_ps(*v, m, a);
            }
        }
        let mut total = _mm512_setzero_ps();
        for v in acc {
            total = _mm512_add_ps(total, v);
        }
        _mm512_reduce_add_ps(total)
    }

    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn chains_avx2(mul: f32, add: f32, iterations: usize) -> f32 {
        let (m, a) = (_mm256_set1_ps(mul), _mm256_set1_ps(add));
        let mut acc = [_mm256_set1_ps(1.0); CHAINS];
        for _ in 0..iterations {
            for v in acc.iter_mut() {
                *v = _mm256_fmadd_ps(*v, m, a);
            }
        }
        let mut total = _mm256_setzero_ps();
        for v in acc {
            total = _mm256_add_ps(total, v);
        }
        let mut lanes = [0f32; LANES / 2];
        _mm256_storeu_ps(lanes.as_mut_ptr(), total);
        lanes.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::simd::simd_level;

    /// One dependent scalar multiply-add after another: the slowest honest loop.
    fn scalar_per_s() -> f64 {
        let n = 4 * ITERATIONS;
        let (mul, add) = (black_box(0.999_999_9f32), black_box(1e-7f32));
        let start = Instant::now();
        let mut v = black_box(1f32);
        for _ in 0..n {
            v = v * mul + add;
        }
        black_box(v);
        n as f64 / start.elapsed().as_secs_f64()
    }

    #[test]
    fn chains_compute_the_same_values_at_every_level() {
        // Each lane's mean, as the levels run different numbers of lanes.
        let mean = |level| chains(level, 10) / (CHAINS * lanes(level)) as f32;
        let want = mean(SimdLevel::Portable);
        assert!(want.is_finite() && want > 0.5, "{want}");
        let level = simd_level();
        let got = mean(level);
        // The fused rounding can differ in the last bits only.
        assert!(
            (got - want).abs() <= 1e-4 * want,
            "{got} vs {want} ({level:?})"
        );
    }

    /// Best lane-operations per second of `run(iterations)` doing `lanes` lanes each
    /// iteration, on this thread.
    fn best_rate(lanes: usize, run: impl Fn(usize) -> f32) -> f64 {
        let iterations = ITERATIONS / 4;
        let best = (0..ROUNDS)
            .map(|_| {
                let start = Instant::now();
                black_box(run(iterations));
                start.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min);
        (lanes * iterations) as f64 / best
    }

    /// The AVX2 loop runs as fast as 8 chains (enough to hide Zen 3's and Intel's FMA
    /// latency), which fit in registers on any CPU: 24 of them spilled to the stack and
    /// read a third of the peak. A timing of optimised code: ignored in debug builds,
    /// where neither loop keeps its values in registers (`cargo test -r` runs it).
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[cfg_attr(debug_assertions, ignore = "times optimised code")]
    fn the_avx2_loop_is_not_slowed_by_its_chain_count() {
        use std::arch::x86_64::*;
        #[target_feature(enable = "avx2,fma")]
        unsafe fn eight_chains(iterations: usize) -> f32 {
            let m = _mm256_set1_ps(black_box(0.999_999_9));
            let a = _mm256_set1_ps(black_box(1e-7));
            let mut acc = [_mm256_set1_ps(1.0); 8];
            for _ in 0..iterations {
                for v in acc.iter_mut() {
                    *v = _mm256_fmadd_ps(*v, m, a);
                }
            }
            let mut lanes = [0f32; 8];
            for v in acc {
                _mm256_storeu_ps(lanes.as_mut_ptr(), v);
                black_box(lanes);
            }
            lanes[0]
        }
        if !SimdLevel::Avx2.is_supported() {
            return;
        }
        // SAFETY: the CPU has AVX2 and FMA (checked above).
        let eight = best_rate(8 * 8, |n| unsafe { eight_chains(n) });
        let ours = best_rate(CHAINS * lanes(SimdLevel::Avx2), |n| {
            chains(SimdLevel::Avx2, n)
        });
        assert!(
            ours >= 0.7 * eight,
            "AVX2 chains {ours:.3e} lane-ops/s against {eight:.3e} with 8"
        );
    }

    #[test]
    fn measured_peak_is_positive_and_beats_a_scalar_loop() {
        let level = simd_level();
        let peak = fma_lane_ops_per_s(level);
        assert!(peak.is_finite() && peak > 0.0, "{peak}");
        // With 16-lane FMAs and 12 chains the margin is ~100x; allow for a loaded machine.
        if level == SimdLevel::Avx512 {
            let scalar = scalar_per_s();
            assert!(
                peak >= scalar,
                "AVX-512 peak {peak:.3e} below scalar {scalar:.3e}"
            );
        }
    }
}
