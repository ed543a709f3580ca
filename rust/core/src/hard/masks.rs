//! Update masks: which cells update in a step, and the seeded random masks shared by
//! both engines (and replayable in the float engine through [`draw_masks`]).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::packing::{pack_row, Geo};
use crate::error::{shape_err, value_err, Error, Result};
use crate::grid::GridShape;
use crate::memory;
use crate::threads;

/// Which cells update in one step.
#[derive(Debug, Clone, Copy)]
pub enum StepMask<'a> {
    /// Every cell updates (synchronous).
    All,
    /// Step `t` of `masks`, `B × steps × H × W` bytes, 1 = the cell updates.
    Given {
        masks: &'a [u8],
        steps: usize,
        t: usize,
    },
    /// Each cell updates with probability `fire_rate`, drawn for step `t` from `seed`.
    Random { fire_rate: f64, seed: u64, t: usize },
}

/// What drives the update masks of a simulation.
#[derive(Debug, Clone, Copy)]
pub enum Masks<'a> {
    /// Every cell updates every step.
    Sync,
    /// Given masks, `B × steps × H × W` bytes, 1 = the cell updates in that step.
    Given(&'a [u8]),
    /// Each cell updates with probability `fire_rate` per step, from a seeded stream
    /// (ChaCha8, one stream per step and a fixed range per grid row: the masks do not
    /// depend on the thread count).
    Random { fire_rate: f64, seed: u64 },
}

/// A cell of probability `threshold / 2³²` of being 1, for the 64 cells of a word.
/// Reads the random number of each cell from the most significant bit down and stops
/// as soon as every cell is decided (about 7 draws instead of 32).
#[inline]
fn bernoulli_word(rng: &mut ChaCha8Rng, threshold: u64) -> u64 {
    if threshold >= 1 << 32 {
        return !0;
    }
    let (mut undecided, mut ones) = (!0u64, 0u64);
    for k in (0..32).rev() {
        let r = rng.next_u64();
        if (threshold >> k) & 1 == 1 {
            ones |= undecided & !r;
            undecided &= r;
        } else {
            undecided &= !r;
        }
        if undecided == 0 {
            break;
        }
    }
    ones
}

/// Packs step `t` of given masks (`B × steps × H × W` bytes, checked by the caller) into
/// `mask` (`B·H·nw` words, the slot engine's layout).
pub(crate) fn given_mask(geo: &Geo, masks: &[u8], steps: usize, t: usize, mask: &mut [u64]) {
    mask.par_chunks_mut(geo.nw)
        .enumerate()
        .for_each(|(row, words)| {
            let (b, r) = (row / geo.height, row % geo.height);
            let at = ((b * steps + t) * geo.height + r) * geo.width;
            pack_row(&masks[at..at + geo.width], 1, words);
        });
}

/// Draws the update mask of step `t` into `mask` (`B·H·nw` words): every cell is 1
/// with probability `fire_rate`. Row `row` reads ChaCha8 stream `t` of `seed` from
/// word `row·nw·64` on; a mask word takes at most 32 draws of 64 bits, so rows never
/// share random numbers and the result does not depend on how rows are split.
pub(crate) fn random_mask(geo: &Geo, mask: &mut [u64], fire_rate: f64, seed: u64, t: usize) {
    let threshold = (fire_rate * (1u64 << 32) as f64).round() as u64;
    let base = ChaCha8Rng::seed_from_u64(seed);
    mask.par_chunks_mut(geo.nw)
        .enumerate()
        .for_each(|(row, words)| {
            let mut rng = base.clone();
            rng.set_stream(t as u64);
            rng.set_word_pos(row as u128 * geo.nw as u128 * 64);
            for (i, w) in words.iter_mut().enumerate() {
                let m = bernoulli_word(&mut rng, threshold);
                *w = if i + 1 == geo.nw {
                    m & geo.last_mask
                } else {
                    m
                };
            }
        });
}

/// The masks a simulation with `Masks::Random { fire_rate, seed }` uses, as
/// `B × steps × H × W` bytes (1 = the cell updates): to replay them elsewhere, e.g.
/// in the float engine.
pub fn draw_masks(shape: GridShape, steps: usize, fire_rate: f64, seed: u64) -> Result<Vec<u8>> {
    if !(fire_rate > 0.0 && fire_rate <= 1.0) {
        return value_err!("fire_rate must be in (0, 1], got {fire_rate}");
    }
    if shape.batch == 0 || shape.height == 0 || shape.width == 0 {
        return shape_err!("batch, height and width must be >= 1, got {shape:?}");
    }
    let bytes = shape.cells().saturating_mul(steps);
    if memory::over_cap(bytes) {
        return Err(Error::Memory(format!(
            "draw_masks: {steps} steps of {}x{}x{} masks need about {} MB, more than the \
             limit of {} MB (set LOGICARS_MAX_MEMORY_MB to raise it)",
            shape.batch,
            shape.height,
            shape.width,
            bytes >> 20,
            memory::cap_mb()
        )));
    }
    let geo = Geo::new(shape, 1, false);
    let hw = shape.height * shape.width;
    let mut out = memory::try_vec(bytes, 0u8, "the masks")?;
    let mut mask = memory::try_vec(geo.n_words, 0u64, "the masks")?;
    threads::pool().install(|| {
        for t in 0..steps {
            random_mask(&geo, &mut mask, fire_rate, seed, t);
            for b in 0..shape.batch {
                let dst = &mut out[(b * steps + t) * hw..][..hw];
                let words = &mask[b * shape.height * geo.nw..][..shape.height * geo.nw];
                dst.par_chunks_mut(shape.width)
                    .zip(words.par_chunks(geo.nw))
                    .for_each(|(cells, words)| {
                        for (col, v) in cells.iter_mut().enumerate() {
                            *v = ((words[col / 64] >> (col % 64)) & 1) as u8;
                        }
                    });
            }
        }
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bernoulli_words_have_the_fire_rate() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for p in [0.05, 0.5, 0.6, 0.999] {
            let threshold = (p * (1u64 << 32) as f64).round() as u64;
            let n = 20_000;
            let ones: u32 = (0..n)
                .map(|_| bernoulli_word(&mut rng, threshold).count_ones())
                .sum();
            let rate = ones as f64 / (64.0 * n as f64);
            assert!((rate - p).abs() < 0.003, "p {p}: {rate}");
        }
        assert_eq!(bernoulli_word(&mut rng, 1 << 32), !0);
    }
}
