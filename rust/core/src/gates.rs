//! The 16 two-input gates and their 4-coefficient form.
//!
//! Every relaxed gate is `α + β·a + γ·b + δ·ab`, so a softmax mix of all 16 gates is
//! too: its coefficients are `c = M·p`. Folding once per optimizer step replaces the
//! 16-way sum per cell with 3 multiply-adds.

/// Number of gate types.
pub const N_OPS: usize = 16;

/// Index of the pass-through-A gate (the initialisation favourite).
pub const PASS_A: usize = 3;

/// Gate names in index order (the notebook's order).
pub const OP_NAMES: [&str; N_OPS] = [
    "FALSE",
    "AND",
    "A_AND_NOT_B",
    "A",
    "NOT_A_AND_B",
    "B",
    "XOR",
    "OR",
    "NOR",
    "XNOR",
    "NOT_B",
    "A_OR_NOT_B",
    "NOT_A",
    "NOT_A_OR_B",
    "NAND",
    "TRUE",
];

/// `M[i] = (α, β, γ, δ)` of gate `i`: output `α + β·a + γ·b + δ·ab`.
pub const M: [[f32; 4]; N_OPS] = [
    [0., 0., 0., 0.],   // FALSE
    [0., 0., 0., 1.],   // AND
    [0., 1., 0., -1.],  // A AND NOT B
    [0., 1., 0., 0.],   // A
    [0., 0., 1., -1.],  // NOT A AND B
    [0., 0., 1., 0.],   // B
    [0., 1., 1., -2.],  // XOR
    [0., 1., 1., -1.],  // OR
    [1., -1., -1., 1.], // NOR
    [1., -1., -1., 2.], // XNOR
    [1., 0., -1., 0.],  // NOT B
    [1., 0., -1., 1.],  // A OR NOT B
    [1., -1., 0., 0.],  // NOT A
    [1., -1., 0., 1.],  // NOT A OR B
    [1., 0., 0., -1.],  // NAND
    [1., 0., 0., 0.],   // TRUE
];

/// Index of the first maximum (the hard gate), as `argmax` in the notebook.
pub fn argmax(logits: &[f32]) -> usize {
    let mut best = 0;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best
}

/// Softmax in f64 (the inputs are f32; f64 keeps the fold's cancellation harmless).
pub fn softmax(logits: &[f32]) -> [f64; N_OPS] {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)) as f64;
    let mut p = [0f64; N_OPS];
    let mut sum = 0.0;
    for (pi, &w) in p.iter_mut().zip(logits) {
        *pi = (w as f64 - max).exp();
        sum += *pi;
    }
    p.iter_mut().for_each(|pi| *pi /= sum);
    p
}

/// Soft coefficients `M·softmax(w)` of one gate.
pub fn soft_coefficients(logits: &[f32]) -> [f32; 4] {
    fold(&softmax(logits))
}

/// Coefficients `M·p` of a gate with probabilities `p`.
pub fn fold(p: &[f64; N_OPS]) -> [f32; 4] {
    let mut c = [0f64; 4];
    for (pi, row) in p.iter().zip(M.iter()) {
        for r in 0..4 {
            c[r] += pi * row[r] as f64;
        }
    }
    c.map(|v| v as f32)
}

/// Hard coefficients: the row of `M` of the most likely gate.
pub fn hard_coefficients(logits: &[f32]) -> [f32; 4] {
    M[argmax(logits)]
}

/// Chain rule from the coefficient gradient `gc = dL/dc` to the logits of a gate with
/// probabilities `p`: `gp = Mᵀ·gc`, then through the softmax `gw = p ⊙ (gp − p·gp)`.
pub fn logits_grad(p: &[f64; N_OPS], gc: &[f64; 4], out: &mut [f32]) {
    let mut gp = [0f64; N_OPS];
    for (g, row) in gp.iter_mut().zip(M.iter()) {
        *g = (0..4).map(|r| row[r] as f64 * gc[r]).sum();
    }
    let dot: f64 = p.iter().zip(&gp).map(|(a, b)| a * b).sum();
    for ((o, pi), g) in out.iter_mut().zip(p).zip(&gp) {
        *o = (pi * (g - dot)) as f32;
    }
}

/// Evaluates gate `op` on bits (used by tests and the exporters).
pub fn eval_op(op: usize, a: bool, b: bool) -> bool {
    let [al, be, ga, de] = M[op];
    let (a, b) = (a as u8 as f32, b as u8 as f32);
    al + be * a + ga * b + de * a * b > 0.5
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_reproduce_the_truth_tables() {
        let logic: [fn(bool, bool) -> bool; N_OPS] = [
            |_, _| false,
            |a, b| a && b,
            |a, b| a && !b,
            |a, _| a,
            |a, b| !a && b,
            |_, b| b,
            |a, b| a ^ b,
            |a, b| a || b,
            |a, b| !(a || b),
            |a, b| a == b,
            |_, b| !b,
            |a, b| a || !b,
            |a, _| !a,
            |a, b| !a || b,
            |a, b| !(a && b),
            |_, _| true,
        ];
        for (op, f) in logic.iter().enumerate() {
            for (a, b) in [(false, false), (false, true), (true, false), (true, true)] {
                assert_eq!(eval_op(op, a, b), f(a, b), "{} on ({a}, {b})", OP_NAMES[op]);
            }
        }
    }

    #[test]
    fn soft_coefficients_of_a_peaked_gate_are_hard() {
        let mut w = [0f32; N_OPS];
        w[6] = 200.0; // the other probabilities underflow f32 entirely
        let c = soft_coefficients(&w);
        assert_eq!(c, M[6]);
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        let mut w = [0f32; N_OPS];
        w[4] = 1.0;
        w[9] = 1.0;
        assert_eq!(argmax(&w), 4);
    }
}
