//! A whole CA step as one flat list of gate instructions over a row arena.
//!
//! Every activation of one cell chunk lives in a row of `Program::row_len` floats: first
//! the 9 patch rows of every channel, then the hidden perception rows, then the perception
//! outputs already in the update network's input order, then the update layers. A gate
//! is `out = c0 + c1·a + c2·b + c3·a·b` over three rows, so perception (every kernel on
//! every channel) and update run through the same two kernels with no gathers and no
//! copies. Gates that cannot reach the next state are dropped.
//!
//! Two more views of the same gates reuse rows once their value is dead, so that the
//! hot data stays in cache: the rollout's forward-only list (a row lives from its gate
//! to its last reader) and the backward list's gradient rows (a gradient lives from its
//! first write, walking backwards, to the gate that produced the value). For a wide
//! model, the forward pass that back-propagation keeps shares one channel's hidden
//! perception rows among all channels and replays them per channel (`Kept`).

use crate::spec::Spec;
use crate::wiring::Wires;

/// One gate evaluation: rows `a`, `b` in, row `out` out, coefficients `coef`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instr {
    pub a: u32,
    pub b: u32,
    pub out: u32,
    pub coef: u32,
}

/// Gates in forward order over an arena of `n_rows` rows, whose `out_rows` hold the
/// next state, one per channel. Rows below `9 · channels` are the patch rows.
#[derive(Debug, Clone)]
pub struct Gates {
    pub instrs: Vec<Instr>,
    pub n_rows: usize,
    pub out_rows: Vec<u32>,
}

/// One gate of the backward pass: activation rows `a`, `b` (of the full program) and
/// gradient rows `gy` (the output's), `ga`, `gb` (the inputs').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackInstr {
    pub a: u32,
    pub b: u32,
    pub gy: u32,
    pub ga: u32,
    pub gb: u32,
    pub coef: u32,
    /// The first gradient written to row `ga` (resp. `gb`) stores instead of adding,
    /// which saves zeroing the gradient rows every step.
    pub store_a: bool,
    pub store_b: bool,
}

/// The backward pass: gates in backward order over a gradient arena of `n_rows` rows.
/// Gradient rows below `9 · channels` are the patch rows: the first gate to write one
/// stores, the others add, and the `unwritten` ones must be zeroed by the caller;
/// `out_rows` receive the gradient of the next state.
#[derive(Debug, Clone)]
pub struct Backward {
    pub instrs: Vec<BackInstr>,
    pub n_rows: usize,
    pub out_rows: Vec<u32>,
    pub unwritten: Vec<u32>,
}

/// The compiled step of a model.
#[derive(Debug, Clone)]
pub struct Program {
    pub channels: usize,
    /// Cells per chunk, the floats of an arena row (`Spec::chunk_cells`).
    pub row_len: usize,
    /// Live gates in forward order, one row per activation (the layout above).
    pub gates: Gates,
    /// Parameter gates (perception gates count once per kernel, not per channel).
    pub n_params: usize,
    /// The same gates for a rollout that keeps only the next state: rows reused.
    pub rollout: Gates,
    /// The backward pass over the activations of `instrs`, gradient rows reused.
    pub backward: Backward,
    /// What back-propagation runs: the forward pass it keeps and the backward in parts.
    pub kept: Kept,
}

/// The forward pass kept for back-propagation, and the backward pass as segments that
/// each first replay some forward gates. For a wide model every channel's hidden
/// perception rows do not fit in cache next to the update network's (with 128 channels,
/// megabytes per chunk), so the kept pass stores one channel's hidden rows
/// at a time, and the backward recomputes a channel's hidden rows just before its
/// perception gates. Every value and every sum is computed in the same order as with the
/// whole arena kept, so the results are bit for bit the same.
#[derive(Debug, Clone)]
pub struct Kept {
    /// The forward gates over the kept arena (`gates.n_rows` rows).
    pub gates: Gates,
    /// `backward.instrs` with activation rows in the kept arena's numbering.
    pub backward: Vec<BackInstr>,
    /// Forward gates replayed by the segments, over the kept arena.
    pub replay: Vec<Instr>,
    /// In order: run `replay[r]` forward, then `backward[b]`.
    pub segments: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)>,
    /// With the perception replayed: how the kept pass can take the perception's
    /// outputs from the rollout of the same step instead of computing them again.
    pub reuse: Option<Reuse>,
}

/// The perception outputs of a step, copied out of the rollout when its perception
/// gates are done (`rollout.instrs[..update_from]`; every output is still live then),
/// and into the kept arena, where they are rows `first..first + outputs` in order,
/// before its update gates (`gates.instrs[update_from..]`). Same values, same sums: the
/// kept pass then skips the perception, which the backward replays per channel anyway.
#[derive(Debug, Clone)]
pub struct Reuse {
    /// The first update gate, in the rollout's and the kept pass's gate lists.
    pub update_from: usize,
    /// The rollout row of each live output, and its place among the outputs.
    pub rows: Vec<(u32, u32)>,
    /// The kept arena's first output row, and the number of outputs (live or not).
    pub first: u32,
    pub outputs: usize,
}

/// Replay the perception when the whole forward arena of one chunk would take more than
/// this many bytes (about an L2 cache; docs/performance.md).
const REPLAY_ABOVE_BYTES: usize = 1536 << 10;

/// Row numbers handed out above a fixed base, recycling the freed ones most recent
/// first (they are the likeliest still in cache).
struct RowPool {
    free: Vec<u32>,
    n_rows: u32,
}

impl RowPool {
    fn new(base: usize) -> RowPool {
        RowPool {
            free: Vec::new(),
            n_rows: base as u32,
        }
    }

    fn take(&mut self) -> u32 {
        self.free.pop().unwrap_or_else(|| {
            self.n_rows += 1;
            self.n_rows - 1
        })
    }

    fn give(&mut self, row: u32) {
        self.free.push(row);
    }
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

/// A gate instruction.
fn instr(a: usize, b: usize, out: usize, coef: usize) -> Instr {
    Instr {
        a: a as u32,
        b: b as u32,
        out: out as u32,
        coef: coef as u32,
    }
}

/// Emits the perception gates: for every channel `c` and kernel `k`, a network that
/// reads channel `c`'s patch rows, writes its hidden rows, and writes its last layer's
/// gate `j` to perception output `j · n_kernels + k` of channel `c`.
fn emit_perception(
    instrs: &mut Vec<Instr>,
    perceive: &[Wires],
    rows: &PerceptionRows,
    n_kernels: usize,
    p_off: &[usize],
) {
    let hidden = rows.per_channel / n_kernels.max(1);
    let n_p = perceive.len();
    for c in 0..rows.channels {
        for k in 0..n_kernels {
            let net_base = rows.hidden_base + (c * n_kernels + k) * hidden;
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
                        rows.perception_base + c * rows.outputs_per_channel + j * n_kernels + k
                    } else {
                        hidden_at + j
                    };
                    let coef = p_off[l] + k * out_w + j;
                    instrs.push(instr(row_in(w.a[j]), row_in(w.b[j]), out, coef));
                }
                in_base = Some(hidden_at);
                hidden_at += out_w;
            }
        }
    }
}

/// Emits the update network's gates (inputs: the centre cell's `c_n` channels, then the
/// perception outputs from `perception_base`; layers from `update_base` on). Returns the
/// row after the last layer.
fn emit_update(
    instrs: &mut Vec<Instr>,
    update: &[Wires],
    c_n: usize,
    (perception_base, update_base): (usize, usize),
    u_off: &[usize],
) -> usize {
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
            instrs.push(instr(
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
    layer_base
}

impl Program {
    /// Lays out the rows and emits every gate of one step. `spec` and the wires must
    /// have been validated (widths chain, wires in range).
    pub fn compile(spec: &Spec, perceive: &[Wires], update: &[Wires]) -> Program {
        Self::compile_with(spec, perceive, update, None)
    }

    /// `compile`, replaying the perception in the backward (`Kept`) when `replay` says
    /// so, or else when the whole forward arena would be larger than about an L2 cache.
    pub(crate) fn compile_with(
        spec: &Spec,
        perceive: &[Wires],
        update: &[Wires],
        replay: Option<bool>,
    ) -> Program {
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

        let rows = PerceptionRows {
            hidden_base,
            per_channel: k_n * hidden,
            perception_base,
            outputs_per_channel: s_n * k_n,
            update_base,
            channels: c_n,
        };

        let mut instrs = Vec::new();
        emit_perception(&mut instrs, perceive, &rows, k_n, &p_off);
        let layer_base = emit_update(
            &mut instrs,
            update,
            c_n,
            (perception_base, update_base),
            &u_off,
        );
        let out_rows: Vec<u32> = (layer_base - c_n..layer_base).map(|r| r as u32).collect();

        let instrs = drop_dead_gates(instrs, n_rows, &out_rows);
        let rollout = reuse_rows(&instrs, n_rows, &out_rows, 9 * c_n);
        let backward = backward_gates(&instrs, n_rows, &out_rows, 9 * c_n);
        let row_len = spec.chunk_cells;
        let replay = replay.unwrap_or(n_rows * row_len * 4 > REPLAY_ABOVE_BYTES);
        let kept = if replay && rows.per_channel > 0 && c_n > 1 {
            kept_with_replay(&instrs, (n_rows, &out_rows), (&rollout, &backward), &rows)
        } else {
            Kept {
                gates: Gates {
                    instrs: instrs.clone(),
                    n_rows,
                    out_rows: out_rows.clone(),
                },
                backward: backward.instrs.clone(),
                replay: Vec::new(),
                segments: vec![(0..0, 0..backward.instrs.len())],
                reuse: None,
            }
        };
        Program {
            channels: c_n,
            row_len,
            gates: Gates {
                instrs,
                n_rows,
                out_rows,
            },
            n_params,
            rollout,
            backward,
            kept,
        }
    }

    /// Coefficient count: four per parameter gate.
    pub fn n_coefs(&self) -> usize {
        4 * self.n_params
    }
}

/// Where the perception's rows lie in the whole program's arena (`Program::compile`).
struct PerceptionRows {
    hidden_base: usize,
    /// Hidden rows of one channel (all kernels).
    per_channel: usize,
    perception_base: usize,
    outputs_per_channel: usize,
    update_base: usize,
    channels: usize,
}

impl PerceptionRows {
    /// The row in the kept arena: every channel's hidden rows share one channel's.
    fn kept(&self, r: u32) -> u32 {
        let r = r as usize;
        let kept = if r < self.hidden_base {
            r
        } else if r < self.perception_base {
            self.hidden_base + (r - self.hidden_base) % self.per_channel
        } else {
            r - (self.channels - 1) * self.per_channel
        };
        kept as u32
    }

    fn is_hidden(&self, r: u32) -> bool {
        (self.hidden_base..self.perception_base).contains(&(r as usize))
    }

    /// The perception channel a gate writing row `r` belongs to (None: the update).
    fn channel(&self, r: u32) -> Option<usize> {
        let r = r as usize;
        if r < self.hidden_base {
            None
        } else if r < self.perception_base {
            Some((r - self.hidden_base) / self.per_channel)
        } else if r < self.update_base {
            Some((r - self.perception_base) / self.outputs_per_channel)
        } else {
            None
        }
    }
}

/// The kept pass and segmented backward of `Kept`, for the gates `instrs` (forward
/// order: perception channel by channel, then the update), their `rollout` and their
/// `backward`.
fn kept_with_replay(
    instrs: &[Instr],
    (n_rows, out_rows): (usize, &[u32]),
    (rollout, backward): (&Gates, &Backward),
    rows: &PerceptionRows,
) -> Kept {
    let map = |ins: &Instr| Instr {
        a: rows.kept(ins.a),
        b: rows.kept(ins.b),
        out: rows.kept(ins.out),
        coef: ins.coef,
    };
    let gates = Gates {
        instrs: instrs.iter().map(map).collect(),
        n_rows: n_rows - (rows.channels - 1) * rows.per_channel,
        out_rows: out_rows.iter().map(|&r| rows.kept(r)).collect(),
    };
    let back: Vec<BackInstr> = backward
        .instrs
        .iter()
        .map(|b| BackInstr {
            a: rows.kept(b.a),
            b: rows.kept(b.b),
            ..*b
        })
        .collect();
    // Backward gate `i` is forward gate `n - 1 - i`; cut it where the channel changes.
    let n = instrs.len();
    let channel_of = |i: usize| rows.channel(instrs[n - 1 - i].out);
    let mut replay = Vec::new();
    let mut segments = Vec::new();
    let mut start = 0;
    while start < n {
        let channel = channel_of(start);
        let end = (start..n).find(|&i| channel_of(i) != channel).unwrap_or(n);
        let from = replay.len();
        if let Some(c) = channel {
            replay.extend(
                instrs
                    .iter()
                    .filter(|ins| rows.is_hidden(ins.out) && rows.channel(ins.out) == Some(c))
                    .map(map),
            );
        }
        segments.push((from..replay.len(), start..end));
        start = end;
    }
    Kept {
        gates,
        backward: back,
        replay,
        segments,
        reuse: Some(reuse_perception(instrs, rollout, rows)),
    }
}

/// The `Reuse` plan for the gates `instrs` (the perception's, channel by channel, then
/// the update's) and their `rollout`.
fn reuse_perception(instrs: &[Instr], rollout: &Gates, rows: &PerceptionRows) -> Reuse {
    let is_output = |r: u32| (rows.perception_base..rows.update_base).contains(&(r as usize));
    let update_from = instrs
        .iter()
        .position(|i| rows.channel(i.out).is_none())
        .unwrap_or(instrs.len());
    let outputs = instrs[..update_from]
        .iter()
        .zip(&rollout.instrs)
        .filter(|(ins, _)| is_output(ins.out))
        .map(|(ins, out)| (out.out, (ins.out as usize - rows.perception_base) as u32))
        .collect();
    Reuse {
        update_from,
        rows: outputs,
        first: rows.kept(rows.perception_base as u32),
        outputs: rows.update_base - rows.perception_base,
    }
}

/// Keeps the gates whose output reaches the next state.
fn drop_dead_gates(mut instrs: Vec<Instr>, n_rows: usize, out_rows: &[u32]) -> Vec<Instr> {
    let mut live = vec![false; n_rows];
    for &r in out_rows {
        live[r as usize] = true;
    }
    for ins in instrs.iter().rev() {
        if live[ins.out as usize] {
            live[ins.a as usize] = true;
            live[ins.b as usize] = true;
        }
    }
    instrs.retain(|ins| live[ins.out as usize]);
    instrs
}

/// The same gates with every non-patch row freed after its last reader and reused.
/// A gate's output row is taken before its inputs are freed, so it never aliases them.
fn reuse_rows(instrs: &[Instr], n_rows: usize, out_rows: &[u32], n_patch: usize) -> Gates {
    const NEVER: usize = usize::MAX;
    let mut last_read = vec![NEVER; n_rows];
    for (i, ins) in instrs.iter().enumerate() {
        last_read[ins.a as usize] = i;
        last_read[ins.b as usize] = i;
    }
    for &r in out_rows {
        last_read[r as usize] = NEVER; // the next state outlives every gate
    }
    let mut row: Vec<u32> = (0..n_rows as u32).collect();
    let mut pool = RowPool::new(n_patch);
    let mut out = Vec::with_capacity(instrs.len());
    for (i, ins) in instrs.iter().enumerate() {
        let target = pool.take();
        row[ins.out as usize] = target;
        out.push(Instr {
            a: row[ins.a as usize],
            b: row[ins.b as usize],
            out: target,
            coef: ins.coef,
        });
        for r in dedup(ins.a, ins.b) {
            if r as usize >= n_patch && last_read[r as usize] == i {
                pool.give(row[r as usize]);
            }
        }
    }
    Gates {
        instrs: out,
        n_rows: pool.n_rows as usize,
        out_rows: out_rows.iter().map(|&r| row[r as usize]).collect(),
    }
}

/// The backward pass of `instrs`: walking backwards, a non-patch row's gradient gets a
/// row at its first write (a store) and gives it back once the gate that produced the
/// row has read it (each row has one producer). Patch rows keep their numbers, and
/// their first write stores too; the ones no gate writes are listed (`unwritten`).
fn backward_gates(instrs: &[Instr], n_rows: usize, out_rows: &[u32], n_patch: usize) -> Backward {
    const NONE: u32 = u32::MAX;
    let mut grad_row = vec![NONE; n_rows];
    let mut pool = RowPool::new(n_patch);
    for &r in out_rows {
        grad_row[r as usize] = pool.take();
    }
    let mut back = Vec::with_capacity(instrs.len());
    for ins in instrs.iter().rev() {
        let gy = grad_row[ins.out as usize];
        assert_ne!(gy, NONE, "a live gate's output has a gradient");
        let mut first_write = |r: u32| {
            let store = grad_row[r as usize] == NONE;
            if store {
                grad_row[r as usize] = if (r as usize) < n_patch {
                    r
                } else {
                    pool.take()
                };
            }
            store
        };
        let store_a = first_write(ins.a);
        let store_b = first_write(ins.b);
        back.push(BackInstr {
            a: ins.a,
            b: ins.b,
            gy,
            ga: grad_row[ins.a as usize],
            gb: grad_row[ins.b as usize],
            coef: ins.coef,
            store_a,
            store_b,
        });
        pool.give(gy);
    }
    Backward {
        instrs: back,
        n_rows: pool.n_rows as usize,
        out_rows: out_rows.iter().map(|&r| grad_row[r as usize]).collect(),
        unwritten: (0..n_patch as u32)
            .filter(|&r| grad_row[r as usize] == NONE)
            .collect(),
    }
}

/// `a`, then `b` unless it is the same row.
fn dedup(a: u32, b: u32) -> impl Iterator<Item = u32> {
    std::iter::once(a).chain((b != a).then_some(b))
}

#[cfg(test)]
mod tests;
