//! Relaxations: how a gate's parameters become the 4 coefficients `(α, β, γ, δ)` that
//! the training forward runs with, and how the coefficient gradient flows back to them.
//!
//! - `softmax`: the notebook's relaxation, a softmax mix of the 16 gates. With a
//!   `hard_fraction` q, a random q of the gates forwards its most likely op in each
//!   optimizer step after `warmup` (straight-through, as `hard-st`): the relaxed circuit
//!   cannot lean on mixed gates or half-valued states that its hard circuit lacks.
//! - `gumbel-st`: forward with the gate `argmax(z + s·g)`, `g ~ Gumbel(0, 1)` drawn per
//!   gate per optimizer step; backward through `softmax((z + s·g)/τ)` (straight-through,
//!   Yousefi et al. 2025). Straight-through at the gate's output, `y_hard −
//!   stopgrad(y_soft) + y_soft`: the gradient reaches the gate's inputs through the
//!   relaxed gate too, not only its selection (through the hard gates alone it would
//!   only follow the pass-through path of a fresh model and train almost nothing).
//! - `hard-st`: the same without noise: forward `argmax(z)`, backward `softmax(z/τ)`.
//!   Both straight-through modes can train the first `warmup` optimizer steps as
//!   `softmax` and switch then (the relaxed circuit finds the task, then the hard
//!   circuit is trained directly; docs/results.md has what that measured).
//! - `gumbel-soft`: forward and backward through `softmax((z + s·g)/τ)` (no
//!   straight-through; the "soft Gumbel" control of Kim 2026).
//! - `anneal`: the softmax of `z/τ(t)`, forward and backward, with `τ(t)` 1 for the
//!   first `warmup` steps and then falling geometrically to `tau` over `steps` steps:
//!   the relaxed circuit turns into the hard one while training goes on.
//! - `truth-table`: 4 parameters per gate, one per truth-table row, `t = σ(w)`
//!   (input-wise parametrization, Rüttgers et al.); `truth-table-st` forwards the
//!   thresholded table and backpropagates through the sigmoids. `truth-table` with a
//!   `hard_fraction` q forwards a random q of its gates that way in each optimizer step
//!   after `warmup`, as `softmax` does with its argmax: the relaxed circuit learns to
//!   work beside hard gates, the others keep it learning. With `binarize_states` the
//!   hard gates run only in the rounded steps.
//!
//! Every straight-through mode trains the hard circuit itself: its forward coefficients
//! are those of one gate. Hard inference is the same in every mode: each gate keeps its
//! most likely op (`hard_op`).

use serde::{Deserialize, Serialize};

use crate::error::{value_err, Result};
use crate::gates::{self, M, N_OPS};

/// Every mode's name as the config JSON spells it (`Relax`'s serde tags), in order.
pub const MODES: [&str; 7] = [
    "softmax",
    "gumbel-st",
    "hard-st",
    "gumbel-soft",
    "anneal",
    "truth-table",
    "truth-table-st",
];

/// Logit of the pass-through gate in a fresh model (all others 0) unless the spec sets
/// its own (`Spec::init_logit`).
pub const INIT_PASS_LOGIT: f32 = 10.0;

/// A relaxation and its parameters (`relax` in the config JSON; absent = softmax).
// The modes without parameters are empty structs, not unit variants, so that serde
// refuses a parameter given to them (`{"mode": "softmax", "tau": 2}`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Relax {
    Softmax {
        // f64: the fraction is compared with f64 draws, exactly as the JSON gives it.
        #[serde(default, skip_serializing_if = "is_zero_f64")]
        hard_fraction: f64,
        #[serde(default, skip_serializing_if = "is_zero_u64")]
        warmup: u64,
    },
    GumbelSt {
        #[serde(default = "one")]
        tau: f32,
        #[serde(default = "one")]
        noise: f32,
        #[serde(default)]
        warmup: u64,
    },
    HardSt {
        #[serde(default = "one")]
        tau: f32,
        #[serde(default)]
        warmup: u64,
    },
    GumbelSoft {
        #[serde(default = "one")]
        tau: f32,
        #[serde(default = "one")]
        noise: f32,
    },
    Anneal {
        #[serde(default = "one")]
        tau: f32,
        #[serde(default)]
        warmup: u64,
        #[serde(default = "thousand")]
        steps: u64,
    },
    TruthTable {
        // f64: the fraction is compared with f64 draws, exactly as the JSON gives it.
        #[serde(default, skip_serializing_if = "is_zero_f64")]
        hard_fraction: f64,
        #[serde(default, skip_serializing_if = "is_zero_u64")]
        warmup: u64,
    },
    TruthTableSt {},
}

impl Default for Relax {
    fn default() -> Relax {
        Relax::Softmax {
            hard_fraction: 0.0,
            warmup: 0,
        }
    }
}

fn one() -> f32 {
    1.0
}

fn thousand() -> u64 {
    1000
}

fn is_zero_f64(v: &f64) -> bool {
    *v == 0.0
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// Parameters of a truth-table gate in a fresh model: pass-through A, `σ(±10)`, as the
/// softmax models start from logit 10 on pass-through A.
pub const INIT_TABLE_LOGIT: f32 = 10.0;

/// What one gate's relaxation computed for one optimizer step: the forward coefficients
/// and what the backward needs (the softmax probabilities, or the 4 sigmoids).
#[derive(Debug, Clone, Copy)]
pub struct Relaxed {
    pub coefs: [f32; 4],
    /// Coefficients of the relaxed gate, through which a straight-through mode sends
    /// the gradient to the gate's inputs: the gate's output is `y_hard − stopgrad(y_soft)
    /// + y_soft`. Equal to `coefs` in the other modes.
    pub back: [f32; 4],
    probs: [f64; N_OPS],
    /// Scale of the softmax Jacobian in the backward: 1/τ.
    scale: f64,
}

impl Relax {
    /// The notebook's relaxation: softmax without hard gates (a config leaves it out).
    pub fn is_softmax(&self) -> bool {
        *self == Relax::default()
    }

    /// Parameters per gate: 16 logits, or 4 truth-table entries.
    pub fn params_per_gate(&self) -> usize {
        match self {
            Relax::TruthTable { .. } | Relax::TruthTableSt {} => 4,
            _ => N_OPS,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if let Some((hard_fraction, _)) = self.hard_gates() {
            if !(0.0..=1.0).contains(&hard_fraction) {
                return value_err!("relax.hard_fraction must be in [0, 1], got {hard_fraction}");
            }
        }
        let (tau, noise) = match *self {
            Relax::GumbelSt { tau, noise, .. } | Relax::GumbelSoft { tau, noise } => (tau, noise),
            Relax::HardSt { tau, .. } | Relax::Anneal { tau, .. } => (tau, 0.0),
            _ => return Ok(()),
        };
        if !(tau.is_finite() && tau > 0.0) {
            return value_err!("relax.tau must be a finite number > 0, got {tau}");
        }
        if !(noise.is_finite() && noise >= 0.0) {
            return value_err!("relax.noise must be a finite number >= 0, got {noise}");
        }
        Ok(())
    }

    /// The parameters of a fresh gate: pass-through A, at logit `pass_logit` where the
    /// gate has 16 logits.
    pub fn init_gate(&self, gate: &mut [f32], pass_logit: f32) {
        match self.params_per_gate() {
            4 => {
                let a = truth_table(gates::PASS_A);
                for (w, bit) in gate.iter_mut().zip(a) {
                    *w = if bit {
                        INIT_TABLE_LOGIT
                    } else {
                        -INIT_TABLE_LOGIT
                    };
                }
            }
            _ => {
                gate.fill(0.0);
                gate[gates::PASS_A] = pass_logit;
            }
        }
    }

    /// The gate a gate's parameters stand for in the hard circuit: the most likely op
    /// (the first maximum of the logits, or the truth table of the rows with σ > ½).
    pub fn hard_op(&self, params: &[f32]) -> usize {
        match self.params_per_gate() {
            4 => params
                .iter()
                .fold(0, |op, &w| (op << 1) | usize::from(w > 0.0)),
            _ => gates::argmax(params),
        }
    }

    /// Forward coefficients and backward state of one gate for optimizer step `step`.
    /// `noise` gives the gate's 16 Gumbel draws (only the noisy modes call it).
    pub fn relax(&self, params: &[f32], step: u64, noise: impl Fn() -> [f64; N_OPS]) -> Relaxed {
        match *self {
            Relax::Softmax { .. } => {
                let probs = gates::softmax(params);
                let coefs = gates::fold(&probs);
                Relaxed {
                    coefs,
                    back: coefs,
                    probs,
                    scale: 1.0,
                }
            }
            Relax::HardSt { warmup, .. } | Relax::GumbelSt { warmup, .. } if step < warmup => {
                Relax::default().relax(params, step, noise)
            }
            Relax::Anneal { tau, warmup, steps } => {
                let progress = step.saturating_sub(warmup) as f64 / steps.max(1) as f64;
                let t = (tau as f64).powf(progress.min(1.0));
                let probs = softmax_f64(params.iter().map(|&w| w as f64 / t));
                let coefs = gates::fold(&probs);
                Relaxed {
                    coefs,
                    back: coefs,
                    probs,
                    scale: 1.0 / t,
                }
            }
            Relax::HardSt { tau, .. } => {
                let probs = softmax_f64(params.iter().map(|&w| w as f64 / tau as f64));
                Relaxed {
                    coefs: M[gates::argmax(params)],
                    back: gates::fold(&probs),
                    probs,
                    scale: 1.0 / tau as f64,
                }
            }
            Relax::GumbelSt { tau, noise: s, .. } | Relax::GumbelSoft { tau, noise: s } => {
                let g = noise();
                let perturbed: [f64; N_OPS] =
                    std::array::from_fn(|i| params[i] as f64 + s as f64 * g[i]);
                let probs = softmax_f64(perturbed.iter().map(|&v| v / tau as f64));
                let soft = gates::fold(&probs);
                let coefs = if matches!(self, Relax::GumbelSt { .. }) {
                    M[argmax_f64(&perturbed)]
                } else {
                    soft
                };
                Relaxed {
                    coefs,
                    back: soft,
                    probs,
                    scale: 1.0 / tau as f64,
                }
            }
            Relax::TruthTable { .. } | Relax::TruthTableSt {} => {
                let mut probs = [0f64; N_OPS];
                let mut t = [0f64; 4];
                for (k, &w) in params.iter().enumerate() {
                    t[k] = sigmoid(w as f64);
                    probs[k] = t[k];
                }
                let coefs = table_coefficients(t).map(|c| c as f32);
                let mut r = Relaxed {
                    coefs,
                    back: coefs,
                    probs,
                    scale: 1.0,
                };
                if matches!(self, Relax::TruthTableSt {}) {
                    r.harden_table();
                }
                r
            }
        }
    }

    /// Coefficients of the noise-free relaxed gate (a soft rollout): the training
    /// forward without noise, after any warmup.
    pub fn soft_coefficients(&self, params: &[f32]) -> [f32; 4] {
        self.relax(params, u64::MAX, || [0.0; N_OPS]).coefs
    }

    /// Whether the training forward runs hard gates with relaxed gradients (then
    /// `Relaxed::back` differs from `Relaxed::coefs`).
    pub fn straight_through(&self) -> bool {
        matches!(
            self,
            Relax::GumbelSt { .. } | Relax::HardSt { .. } | Relax::TruthTableSt {}
        )
    }

    /// The fraction of gates that run hard, straight-through, in optimizer step `step`
    /// (`softmax`'s and `truth-table`'s `hard_fraction` once its `warmup` is over; 0
    /// otherwise).
    pub fn hard_fraction(&self, step: u64) -> f64 {
        match self.hard_gates() {
            Some((hard_fraction, warmup)) if step >= warmup => hard_fraction,
            _ => 0.0,
        }
    }

    /// The hard fraction and its warmup of the modes that take one (`softmax`,
    /// `truth-table`).
    fn hard_gates(&self) -> Option<(f64, u64)> {
        match *self {
            Relax::Softmax {
                hard_fraction,
                warmup,
            }
            | Relax::TruthTable {
                hard_fraction,
                warmup,
            } => Some((hard_fraction, warmup)),
            _ => None,
        }
    }

    /// Chain rule from `gc = dL/d(α, β, γ, δ)` to the gate's parameters.
    pub fn params_grad(&self, r: &Relaxed, gc: &[f64; 4], out: &mut [f32]) {
        match *self {
            Relax::Softmax { .. }
            | Relax::HardSt { .. }
            | Relax::GumbelSt { .. }
            | Relax::GumbelSoft { .. }
            | Relax::Anneal { .. } => {
                // d softmax(v/τ)/dv = (1/τ)·J: the softmax Jacobian, scaled.
                gates::logits_grad(&r.probs, gc, out);
                if r.scale != 1.0 {
                    out.iter_mut()
                        .for_each(|g| *g = (*g as f64 * r.scale) as f32);
                }
            }
            Relax::TruthTable { .. } | Relax::TruthTableSt {} => {
                let [ga, gb, gg, gd] = *gc;
                // α = t00, β = t10 − t00, γ = t01 − t00, δ = t11 − t10 − t01 + t00.
                let gt = [ga - gb - gg + gd, gg - gd, gb - gd, gd];
                for k in 0..4 {
                    let t = r.probs[k];
                    out[k] = (gt[k] * t * (1.0 - t)) as f32;
                }
            }
        }
    }

    /// Gate `r` (of parameters `params`) forwards its hard gate in this step, its
    /// gradient still through the relaxed one (a `hard_fraction`'s gate): softmax's
    /// most likely op, as `hard-st` forwards it, or the thresholded truth table.
    pub fn harden(&self, params: &[f32], r: &mut Relaxed) {
        if self.params_per_gate() == 4 {
            r.harden_table();
        } else {
            r.back = r.coefs;
            r.coefs = gates::hard_coefficients(params);
        }
    }
}

impl Relaxed {
    /// The truth-table gate forwards its thresholded table and sends the gradient back
    /// through its sigmoids (`truth-table-st` for this gate in this step).
    fn harden_table(&mut self) {
        let t = [0, 1, 2, 3].map(|k| if self.probs[k] > 0.5 { 1.0 } else { 0.0 });
        self.back = self.coefs;
        self.coefs = table_coefficients(t).map(|c| c as f32);
    }
}

/// Truth table `(f(0,0), f(0,1), f(1,0), f(1,1))` of gate `op`: op indices are these 4
/// bits read as a binary number, most significant first (the notebook's order).
pub fn truth_table(op: usize) -> [bool; 4] {
    [op & 8 != 0, op & 4 != 0, op & 2 != 0, op & 1 != 0]
}

/// `(α, β, γ, δ)` of the gate with output `t[2a + b]` on inputs `(a, b)`.
fn table_coefficients(t: [f64; 4]) -> [f64; 4] {
    let [t00, t01, t10, t11] = t;
    [t00, t10 - t00, t01 - t00, t11 - t10 - t01 + t00]
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softmax_f64(v: impl Iterator<Item = f64> + Clone) -> [f64; N_OPS] {
    let max = v.clone().fold(f64::NEG_INFINITY, f64::max);
    let mut p = [0f64; N_OPS];
    let mut sum = 0.0;
    for (pi, x) in p.iter_mut().zip(v) {
        *pi = (x - max).exp();
        sum += *pi;
    }
    p.iter_mut().for_each(|pi| *pi /= sum);
    p
}

fn argmax_f64(v: &[f64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}

/// Gumbel(0, 1) noise from a counter-based stream: a pure function of (seed, step,
/// gate, op), so a run's noise does not depend on the thread count or on where it was
/// resumed. SplitMix64's finaliser over the key words, then `−ln(−ln u)` with `u` the
/// top 53 bits of the hash, centred in its bin (never 0 or 1).
pub fn gumbel(seed: u64, step: u64, gate: u64, op: u64) -> f64 {
    GateNoise::new(seed, step, gate).draw(op)
}

/// The noise of one gate in one step: the key's hash up to the gate, so that its 16
/// draws cost one mix each.
#[derive(Debug, Clone, Copy)]
pub struct GateNoise(u64);

impl GateNoise {
    pub fn new(seed: u64, step: u64, gate: u64) -> GateNoise {
        GateNoise(gate_key(0x6c6f_6769_6361_7273, seed, step, gate)) // "logicars"
    }

    /// The Gumbel draw for op `op`.
    pub fn draw(&self, op: u64) -> f64 {
        -ln(-ln(uniform(mix(self.0 ^ op))))
    }

    /// The gate's 16 draws at once: straight-line loops over arrays that the compiler
    /// vectorises (libm's `ln`, called 32 times per gate, made `gumbel-st` epochs on small
    /// grids much dearer than softmax's: docs/performance.md). The same values as `draw`.
    pub fn draws(&self) -> [f64; N_OPS] {
        let mut g = [0f64; N_OPS];
        for (op, g) in g.iter_mut().enumerate() {
            *g = uniform(mix(self.0 ^ op as u64));
        }
        for g in g.iter_mut() {
            *g = -ln(-ln(*g));
        }
        g
    }
}

/// Whether gate `gate` runs hard in optimizer step `step` when a fraction `q` of the
/// gates do: a uniform draw from a counter-based stream keyed by (seed, step, gate),
/// apart from the Gumbel one, below `q`.
pub fn runs_hard(seed: u64, step: u64, gate: u64, q: f64) -> bool {
    const HARD_STREAM: u64 = 0x4841_5244 ^ 0x666c_6970; // "HARD" ^ "flip"
    uniform(gate_key(HARD_STREAM, seed, step, gate)) < q
}

/// The hash of (seed, step, gate) in the counter-based stream `stream`.
#[inline(always)]
fn gate_key(stream: u64, seed: u64, step: u64, gate: u64) -> u64 {
    mix(mix(mix(seed ^ stream) ^ step) ^ gate)
}

/// The top 53 bits of a hash, centred in its bin: in (0, 1), never 0 or 1.
#[inline(always)]
fn uniform(h: u64) -> f64 {
    // Below 2^53, so the conversion through i64 is exact (and vectorises).
    ((h >> 11) as i64 as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// Natural logarithm of a positive normal `x`, branch-free so that loops over it
/// vectorise: fdlibm's `__ieee754_log` (argument reduction to `m ∈ [√½, √2)`, a degree-14
/// odd polynomial in `s = f/(2 + f)`), within 1 ulp of the correctly rounded result.
/// Plain multiplies and adds, never fused, so every target computes the same bits.
#[inline(always)]
fn ln(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const LG: [f64; 7] = [
        6.666_666_666_666_735e-1,
        3.999_999_999_940_942e-1,
        2.857_142_874_366_239e-1,
        2.222_219_843_214_978_4e-1,
        1.818_357_216_161_805e-1,
        1.531_383_769_920_937_3e-1,
        1.479_819_860_511_658_6e-1,
    ];
    let bits = x.to_bits();
    let mantissa = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    let big = mantissa > std::f64::consts::SQRT_2;
    let m = if big { mantissa * 0.5 } else { mantissa };
    let k = ((bits >> 52) as i32 - 1023 + i32::from(big)) as f64;
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG[1] + w * (LG[3] + w * LG[5]));
    let t2 = z * (LG[0] + w * (LG[2] + w * (LG[4] + w * LG[6])));
    let hfsq = 0.5 * f * f;
    k * LN2_HI - ((hfsq - (s * (hfsq + (t1 + t2)) + k * LN2_LO)) - f)
}

/// SplitMix64's output function (Steele, Lea & Flood 2014).
#[inline(always)]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_name_every_mode_once() {
        for name in MODES {
            let relax: Relax = serde_json::from_value(serde_json::json!({ "mode": name }))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(serde_json::to_value(relax).unwrap()["mode"], name);
        }
        let distinct: std::collections::HashSet<_> = MODES.iter().collect();
        assert_eq!(distinct.len(), MODES.len());
    }

    #[test]
    fn truth_tables_match_the_gate_coefficients() {
        for (op, row) in M.iter().enumerate() {
            let t = truth_table(op).map(|b| b as u8 as f64);
            let c = table_coefficients(t).map(|v| v as f32);
            assert_eq!(&c, row, "{}", gates::OP_NAMES[op]);
            let w = truth_table(op).map(|b| if b { 3.0 } else { -3.0 });
            assert_eq!(Relax::TruthTableSt {}.hard_op(&w), op);
        }
    }

    #[test]
    fn softmax_relaxation_is_the_notebooks() {
        let w: Vec<f32> = (0..16).map(|i| (i as f32 * 0.37).sin()).collect();
        let r = Relax::default().relax(&w, 0, || unreachable!());
        assert_eq!(r.coefs, gates::soft_coefficients(&w));
    }

    #[test]
    fn a_hard_fraction_hardens_that_share_of_the_gates_after_its_warmup() {
        let relax = Relax::TruthTable {
            hard_fraction: 0.3,
            warmup: 5,
        };
        assert_eq!(relax.hard_fraction(4), 0.0);
        assert_eq!(relax.hard_fraction(5), 0.3);
        let hard = (0..10_000).filter(|&g| runs_hard(7, 5, g, 0.3)).count();
        assert!((2800..3200).contains(&hard), "{hard}");
        let other_step =
            (0..10_000).filter(|&g| runs_hard(7, 6, g, 0.3) != runs_hard(7, 5, g, 0.3));
        assert!(other_step.count() > 3000); // a fresh draw per step
        let params = [2.0, -1.0, 0.5, -3.0];
        let mut r = relax.relax(&params, 5, || [0.0; N_OPS]);
        let soft = r.coefs;
        relax.harden(&params, &mut r);
        assert_eq!(r.back, soft);
        assert_eq!(
            r.coefs,
            table_coefficients([1.0, 0.0, 1.0, 0.0]).map(|c| c as f32)
        );
    }

    #[test]
    fn a_hardened_softmax_gate_forwards_its_most_likely_op() {
        let relax = Relax::Softmax {
            hard_fraction: 0.5,
            warmup: 2,
        };
        assert_eq!(relax.hard_fraction(1), 0.0);
        assert_eq!(relax.hard_fraction(2), 0.5);
        let w: Vec<f32> = (0..16).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut r = relax.relax(&w, 2, || unreachable!());
        assert_eq!(r.coefs, gates::soft_coefficients(&w));
        relax.harden(&w, &mut r);
        assert_eq!(r.back, gates::soft_coefficients(&w));
        assert_eq!(r.coefs, gates::hard_coefficients(&w));
        assert!(!relax.is_softmax(), "a config must keep its hard fraction");
        assert!(Relax::Softmax {
            hard_fraction: 1.5,
            warmup: 0
        }
        .validate()
        .is_err());
    }

    #[test]
    fn straight_through_forward_is_one_gate() {
        let w: Vec<f32> = (0..16).map(|i| (i as f32 * 0.37).sin()).collect();
        let hard = Relax::HardSt {
            tau: 2.0,
            warmup: 10,
        };
        assert_eq!(
            hard.relax(&w, 10, || [0.0; N_OPS]).coefs,
            M[gates::argmax(&w)]
        );
        // Before the switch, the softmax relaxation.
        assert_eq!(
            hard.relax(&w, 9, || [0.0; N_OPS]).coefs,
            gates::soft_coefficients(&w)
        );
        // Noise large enough to move the argmax to op 0.
        let g = Relax::GumbelSt {
            tau: 1.0,
            noise: 1.0,
            warmup: 0,
        };
        let r = g.relax(&w, 0, || {
            std::array::from_fn(|i| if i == 0 { 100.0 } else { 0.0 })
        });
        assert_eq!(r.coefs, M[0]);
    }

    #[test]
    fn gumbel_noise_has_the_gumbel_mean_and_is_keyed() {
        let n = 200_000u64;
        let mean = (0..n).map(|i| gumbel(1, 2, i, 3)).sum::<f64>() / n as f64;
        assert!((mean - 0.577_215_664_9).abs() < 0.01, "{mean}");
        assert_eq!(gumbel(1, 2, 3, 4), gumbel(1, 2, 3, 4));
        assert_ne!(gumbel(1, 2, 3, 4), gumbel(1, 3, 3, 4));
        assert_ne!(gumbel(1, 2, 3, 4), gumbel(2, 2, 3, 4));
    }

    #[test]
    fn ln_is_within_one_ulp_of_libm_and_draws_match_draw() {
        let mut z = 1u64;
        for _ in 0..200_000 {
            z = mix(z);
            // Every binade a Gumbel draw reaches: u in (2^-54, 1), -ln u in (1e-16, 38).
            let x = f64::from_bits(
                z % (0x4043_0000_0000_0000 - 0x3c90_0000_0000_0000) + 0x3c90_0000_0000_0000,
            );
            let (ours, libm) = (ln(x), x.ln());
            let ulp = f64::from_bits(libm.abs().to_bits() + 1) - libm.abs();
            assert!(
                (ours - libm).abs() <= ulp,
                "ln({x:e}) = {ours:e}, libm {libm:e}"
            );
        }
        assert_eq!(ln(1.0), 0.0);
        let noise = GateNoise::new(3, 5, 7);
        let each: [f64; N_OPS] = std::array::from_fn(|op| noise.draw(op as u64));
        assert_eq!(noise.draws(), each);
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Relax::HardSt {
            tau: 0.0,
            warmup: 0
        }
        .validate()
        .is_err());
        assert!(Relax::GumbelSt {
            tau: 1.0,
            noise: f32::NAN,
            warmup: 0,
        }
        .validate()
        .is_err());
        assert!(Relax::GumbelSoft {
            tau: 0.5,
            noise: 0.0
        }
        .validate()
        .is_ok());
    }
}
