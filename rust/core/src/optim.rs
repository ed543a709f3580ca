//! Gradient clipping and AdamW, exactly as the reference (optax) applies them.

use rayon::prelude::*;

use crate::error::{value_err, Result};
use crate::memory;
use crate::threads;

pub const CLIP: f32 = 100.0;
pub const BETA1: f32 = 0.9;
pub const BETA2: f32 = 0.99;
pub const EPS: f32 = 1e-8;
/// The notebook's decoupled weight decay (`train(weight_decay=...)` sets a run's).
pub const WEIGHT_DECAY: f32 = 1e-2;

/// Checks a learning rate: the one rule for `lr` wherever it is given (a training step,
/// `train(lr=...)`, an experiment file's `[training] lr`).
pub fn check_lr(lr: f64) -> Result<()> {
    if !(lr.is_finite() && lr > 0.0 && (lr as f32).is_finite()) {
        return value_err!("lr must be a finite number > 0, got {lr}");
    }
    Ok(())
}

/// Checks a decoupled weight decay: the one rule for `weight_decay` wherever it is given.
pub fn check_weight_decay(weight_decay: f64) -> Result<()> {
    if !(weight_decay.is_finite() && weight_decay >= 0.0 && (weight_decay as f32).is_finite()) {
        return value_err!("weight_decay must be a finite number >= 0, got {weight_decay}");
    }
    Ok(())
}

/// Checks AdamW's first-moment decay: a finite number in [0, 1) (0: no momentum, each
/// step follows the latest gradient, scaled by the second moment).
pub fn check_beta1(beta1: f64) -> Result<()> {
    if !(beta1.is_finite() && (0.0..1.0).contains(&beta1)) {
        return value_err!("beta1 must be a number in [0, 1), got {beta1}");
    }
    Ok(())
}

/// One optimizer step's settings: the training's, not the architecture's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepSettings {
    pub lr: f32,
    pub weight_decay: f32,
    /// The first moment's decay (the notebook's [`BETA1`] unless a run sets another).
    pub beta1: f32,
}

impl StepSettings {
    /// `lr` and `weight_decay` with the notebook's β1.
    pub fn new(lr: f32, weight_decay: f32) -> StepSettings {
        StepSettings {
            lr,
            weight_decay,
            beta1: BETA1,
        }
    }

    pub fn check(&self) -> Result<()> {
        check_lr(self.lr.into())?;
        check_weight_decay(self.weight_decay.into())?;
        check_beta1(self.beta1.into())
    }
}

/// AdamW state: first and second moments and the number of steps taken.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamW {
    pub m: Vec<f32>,
    pub v: Vec<f32>,
    pub t: u64,
}

impl AdamW {
    /// Zero moments for `n` parameters, or `Error::Memory` when the system refuses them.
    pub fn try_new(n: usize) -> Result<AdamW> {
        Ok(AdamW {
            m: memory::try_vec(n, 0.0, "the optimizer's moments")?,
            v: memory::try_vec(n, 0.0, "the optimizer's moments")?,
            t: 0,
        })
    }

    /// Clips every gradient element to ±100, then one decoupled AdamW step:
    /// `p -= lr·(m̂/(√v̂ + eps) + wd·p)`.
    pub fn step(&mut self, params: &mut [f32], grads: &[f32], settings: StepSettings) {
        let StepSettings {
            lr,
            weight_decay: wd,
            beta1,
        } = settings;
        self.t += 1;
        let bc1 = 1.0 - (beta1 as f64).powi(self.t as i32);
        let bc2 = 1.0 - (BETA2 as f64).powi(self.t as i32);
        let (bc1, bc2) = (bc1 as f32, bc2 as f32);
        // Element-wise, so splitting it over the pool gives the same bits.
        let update = |(((p, &g), m), v): (((&mut f32, &f32), &mut f32), &mut f32)| {
            let g = g.clamp(-CLIP, CLIP);
            *m = beta1 * *m + (1.0 - beta1) * g;
            *v = BETA2 * *v + (1.0 - BETA2) * g * g;
            let step = (*m / bc1) / ((*v / bc2).sqrt() + EPS) + wd * *p;
            *p -= lr * step;
        };
        threads::pool().install(|| {
            params
                .par_iter_mut()
                .zip(grads)
                .zip(&mut self.m)
                .zip(&mut self.v)
                .with_min_len(4096)
                .for_each(update)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beta1_is_checked_in_zero_to_one() {
        assert!(check_beta1(0.0).is_ok() && check_beta1(0.9).is_ok());
        for bad in [1.0, -0.1, f64::NAN, f64::INFINITY] {
            assert!(check_beta1(bad).is_err(), "{bad}");
        }
        assert!(StepSettings::new(0.05, 0.0).check().is_ok());
    }

    #[test]
    fn beta1_zero_steps_along_the_latest_gradient() {
        // Two steps from p = 0 without weight decay, gradients +1 then -1: with β1 = 0
        // the second is a full step of lr back, m̂ = -1; the notebook's β1 still
        // remembers the first gradient and moves back only a twentieth of that.
        let second_step = |beta1: f32| {
            let settings = StepSettings {
                beta1,
                ..StepSettings::new(0.1, 0.0)
            };
            let (mut opt, mut p) = (AdamW::try_new(1).unwrap(), [0.0f32]);
            opt.step(&mut p, &[1.0], settings);
            let before = p[0];
            opt.step(&mut p, &[-1.0], settings);
            p[0] - before
        };
        assert!((second_step(0.0) - 0.1).abs() < 1e-6);
        assert!((second_step(BETA1) - 0.1 / 19.0).abs() < 1e-6);
    }
}
