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
    pub fn step(&mut self, params: &mut [f32], grads: &[f32], lr: f32, wd: f32) {
        self.t += 1;
        let bc1 = 1.0 - (BETA1 as f64).powi(self.t as i32);
        let bc2 = 1.0 - (BETA2 as f64).powi(self.t as i32);
        let (bc1, bc2) = (bc1 as f32, bc2 as f32);
        // Element-wise, so splitting it over the pool gives the same bits.
        let update = |(((p, &g), m), v): (((&mut f32, &f32), &mut f32), &mut f32)| {
            let g = g.clamp(-CLIP, CLIP);
            *m = BETA1 * *m + (1.0 - BETA1) * g;
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
