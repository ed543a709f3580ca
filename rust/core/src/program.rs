//! A whole CA step as one flat list of gate instructions over a row arena.
//!
//! Every activation of one cell chunk lives in a row of `CHUNK` floats: first the 9
//! patch rows of every channel, then the hidden perception rows, then the perception
//! outputs already in the update network's input order, then the update layers. A gate
//! is `out = c0 + c1·a + c2·b + c3·a·b` over three rows, so perception (every kernel on
//! every channel) and update run through the same two kernels with no gathers and no
//! copies. Gates that cannot reach the next state are dropped.

use crate::spec::Spec;
use crate::wiring::Wires;

/// One gate evaluation: rows `a`, `b` in, row `out` out, coefficients `coef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instr {
    pub a: u32,
    pub b: u32,
    pub out: u32,
    pub coef: u32,
    /// Backward: the first gradient written to row `a` (resp. `b`) stores instead of
    /// adding, which saves zeroing the gradient arena every step.
    pub store_a: bool,
    pub store_b: bool,
}

/// The compiled step of a model.
#[derive(Debug, Clone)]
pub struct Program {
    pub channels: usize,
    /// Rows in the arena of one chunk.
    pub n_rows: usize,
    /// Live gates in forward order.
    pub instrs: Vec<Instr>,
    /// Parameter gates (perception gates count once per kernel, not per channel).
    pub n_params: usize,
    /// Rows that hold the next state, one per channel.
    pub out_rows: Vec<u32>,
}

/// Row of channel `c`'s patch entry `e` (entry 4 = the cell itself).
pub fn patch_row(c: usize, e: usize) -> usize {
    c * 9 + e
}

/// Offset of each layer's parameter gates in the flat logits, perception layers then
/// update layers, matching the fixture arrays `(K, out, 16)` and `(out, 16)`.
pub fn param_offsets(spec: &Spec) -> (Vec<usize>, Vec<usize>, usize) {
    let k = spec.perceive.n_kernels;
    let mut next = 0;
    let perceive = spec.perceive.layers[1..]
        .iter()
        .map(|&out| {
            let at = next;
            next += k * out;
            at
        })
        .collect();
    let update = spec.update.layers[1..]
        .iter()
        .map(|&out| {
            let at = next;
            next += out;
            at
        })
        .collect();
    (perceive, update, next)
}

impl Program {
    /// Lays out the rows and emits every gate of one step. `spec` and the wires must
    /// have been validated (widths chain, wires in range).
    pub fn compile(spec: &Spec, perceive: &[Wires], update: &[Wires]) -> Program {
        let c_n = spec.channels;
        let k_n = spec.perceive.n_kernels;
        let p_layers = &spec.perceive.layers;
        let u_layers = &spec.update.layers;
        let s_n = spec.perceive_out();
        let (p_off, u_off, n_params) = param_offsets(spec);

        let hidden: usize = p_layers[1..p_layers.len() - 1].iter().sum();
        let hidden_base = 9 * c_n;
        let perception_base = hidden_base + c_n * k_n * hidden;
        let update_base = perception_base + c_n * s_n * k_n;
        let n_rows = update_base + u_layers[1..].iter().sum::<usize>();

        let mut instrs = Vec::new();
        let gate = |a: usize, b: usize, out: usize, coef: usize| Instr {
            a: a as u32,
            b: b as u32,
            out: out as u32,
            coef: coef as u32,
            store_a: false,
            store_b: false,
        };

        let n_p = perceive.len();
        for c in 0..c_n {
            for k in 0..k_n {
                let net_base = hidden_base + (c * k_n + k) * hidden;
                let mut in_base = None; // None: the patch of channel c
                let mut hidden_at = net_base;
                for (l, w) in perceive.iter().enumerate() {
                    let out_w = w.len();
                    let row_in = |i: u32| match in_base {
                        None => patch_row(c, i as usize),
                        Some(base) => base + i as usize,
                    };
                    for j in 0..out_w {
                        let out = if l + 1 == n_p {
                            perception_base + c * s_n * k_n + j * k_n + k
                        } else {
                            hidden_at + j
                        };
                        let coef = p_off[l] + k * out_w + j;
                        instrs.push(gate(row_in(w.a[j]), row_in(w.b[j]), out, coef));
                    }
                    in_base = Some(hidden_at);
                    hidden_at += out_w;
                }
            }
        }

        let mut in_base = None; // None: centre cell ++ perception
        let mut layer_base = update_base;
        for (l, w) in update.iter().enumerate() {
            let row_in = |i: u32| {
                let i = i as usize;
                match in_base {
                    None if i < c_n => patch_row(i, 4),
                    None => perception_base + (i - c_n),
                    Some(base) => base + i,
                }
            };
            let first = instrs.len();
            for j in 0..w.len() {
                instrs.push(gate(
                    row_in(w.a[j]),
                    row_in(w.b[j]),
                    layer_base + j,
                    u_off[l] + j,
                ));
            }
            // Gates of a layer are independent: visit them in input-row order, so reads
            // stream through the previous layer instead of jumping around (randomly
            // permuted wires would miss L1 on wide layers).
            instrs[first..].sort_by_key(|i| (i.a.min(i.b), i.a.max(i.b)));
            in_base = Some(layer_base);
            layer_base += w.len();
        }
        let out_rows: Vec<u32> = (layer_base - c_n..layer_base).map(|r| r as u32).collect();

        let mut program = Program {
            channels: c_n,
            n_rows,
            instrs,
            n_params,
            out_rows,
        };
        program.drop_dead_gates_and_mark_stores();
        program
    }

    /// Removes gates whose output never reaches the next state, and marks, walking
    /// backwards, the first gradient write of every non-patch row as a store.
    fn drop_dead_gates_and_mark_stores(&mut self) {
        let mut live = vec![false; self.n_rows];
        for &r in &self.out_rows {
            live[r as usize] = true;
        }
        for ins in self.instrs.iter().rev() {
            if live[ins.out as usize] {
                live[ins.a as usize] = true;
                live[ins.b as usize] = true;
            }
        }
        self.instrs.retain(|ins| live[ins.out as usize]);

        // Patch rows are zeroed once per chunk step and always accumulate.
        let n_patch = 9 * self.channels;
        let mut written = vec![false; self.n_rows];
        for ins in self.instrs.iter_mut().rev() {
            for (row, store) in [(ins.a, &mut ins.store_a), (ins.b, &mut ins.store_b)] {
                let row = row as usize;
                *store = row >= n_patch && !written[row];
                written[row] = true;
            }
        }
    }

    /// Coefficient count: four per parameter gate.
    pub fn n_coefs(&self) -> usize {
        4 * self.n_params
    }
}
