//! Compiling a float [`Program`] with one hard gate per parameter into a [`Circuit`].
//!
//! **Circuit.** [`Circuit::compile`] takes the float engine's [`Program`] (one CA step,
//! perception on every channel then update, dead gates already removed) and the hard
//! gate of every parameter (`argmax` of its logits), and rewrites it symbolically:
//!
//! - every value is a constant or a *literal* (a node, possibly negated);
//! - a gate on literals is reduced to its truth table over the underlying nodes:
//!   constants and pass-throughs (`FALSE`, `TRUE`, `A`, `B`, and any gate whose input is
//!   constant or whose two inputs are the same node) become constants or literals and
//!   cost nothing; `NOT` is absorbed into the consumers' truth tables;
//! - what remains is one of four bitwise kernels, `x & y`, `x & !y`, `x | y`, `x ^ y`,
//!   with an optional negation carried by the literal; identical gates are merged;
//! - gates that no longer reach the next state are dropped, the rest are scheduled by
//!   depth and grouped by kernel, and their outputs are assigned to a small set of
//!   reusable slots (linear scan), so a block's whole working set stays in L1.

use rustc_hash::FxHashMap;

use super::circuit::{Circuit, CircuitStats, Fill, Output};
use super::kernels::{Kind, Op, OpSpan};
use crate::float::program::Program;
use crate::gates::{self, N_OPS};

// ---------------------------------------------------------------------------------
// Truth tables: bit `a + 2·b` of a 4-bit table is the gate's output on (a, b).

pub(crate) fn op_table(op: usize) -> u8 {
    (0..4).fold(0, |t, i| {
        t | ((gates::eval_op(op, i & 1 == 1, i & 2 == 2) as u8) << i)
    })
}

/// The table of `f(¬a, b)`.
fn negate_a(t: u8) -> u8 {
    ((t & 0b0101) << 1) | ((t & 0b1010) >> 1)
}

/// The table of `f(a, ¬b)`.
fn negate_b(t: u8) -> u8 {
    ((t & 0b0011) << 2) | ((t & 0b1100) >> 2)
}

fn bit(t: u8, i: u8) -> bool {
    (t >> i) & 1 == 1
}

/// A value of the symbolic circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sym {
    Const(bool),
    /// Node `node` (a patch input below `9·C`, else a gate), negated when `neg`.
    Lit {
        node: u32,
        neg: bool,
    },
}

/// A one-input function `(g(0), g(1))` applied to `s`.
fn apply1(g0: bool, g1: bool, s: Sym) -> Sym {
    match (g0, g1) {
        (false, false) => Sym::Const(false),
        (true, true) => Sym::Const(true),
        (false, true) => s,
        (true, false) => match s {
            Sym::Const(v) => Sym::Const(!v),
            Sym::Lit { node, neg } => Sym::Lit { node, neg: !neg },
        },
    }
}

/// The gates left after folding: `nodes[g] = (kind, x, y)` is node `n_patch + g`; the
/// outputs are constants or literals of these nodes.
struct Folded {
    n_patch: usize,
    nodes: Vec<(Kind, u32, u32)>,
    out_syms: Vec<Sym>,
    /// Program gates that stayed genuine two-input gates (before merging).
    folded_gates: usize,
}

/// Live gates in execution order, with each node's depth.
struct Schedule {
    order: Vec<usize>,
    depth: Vec<usize>,
}

/// The ops on arena slots, the patch words to fill, and where each node ended up.
struct SlotPlan {
    n_slots: u32,
    fills: Vec<Fill>,
    ops: Vec<Op>,
    spans: Vec<OpSpan>,
    by_kind: [usize; 4],
    slot_of: Vec<u32>,
}

impl Circuit {
    /// Compiles `program` with hard gate `ops[coef]` for each parameter gate, in four
    /// phases: fold, liveness, schedule, slot allocation.
    ///
    /// Panics if `ops` has fewer than `program.n_params` values or an op is not < 16.
    pub fn compile(program: &Program, ops: &[u8]) -> Circuit {
        assert!(
            ops.len() >= program.n_params,
            "compile: {} ops for {} parameter gates",
            ops.len(),
            program.n_params
        );
        let folded = fold(program, ops);
        let live = liveness(&folded);
        let schedule = schedule(&folded, &live, program.channels);
        let slots = allocate_slots(&folded, &live, &schedule.order);
        let outputs = folded
            .out_syms
            .iter()
            .map(|s| match *s {
                Sym::Const(v) => Output::Const(v),
                Sym::Lit { node, neg } => Output::Slot {
                    slot: slots.slot_of[node as usize],
                    neg,
                },
            })
            .collect();
        let n_patch = folded.n_patch;
        let stats = CircuitStats {
            program_gates: program.gates.instrs.len(),
            folded_gates: folded.folded_gates,
            merged_gates: folded.nodes.len(),
            active_gates: slots.ops.len(),
            by_kind: slots.by_kind,
            slots: slots.n_slots as usize,
            patch_inputs: slots.fills.len(),
            depth: schedule
                .order
                .iter()
                .map(|&g| schedule.depth[n_patch + g])
                .max()
                .unwrap_or(0),
        };
        Circuit {
            channels: program.channels,
            n_slots: slots.n_slots as usize,
            fills: slots.fills,
            ops: slots.ops,
            spans: slots.spans,
            outputs,
            stats,
        }
    }
}

/// Phase 1: the symbolic rewrite in program order (which is topological). Constants,
/// pass-throughs and negations fold away; identical gates are merged.
fn fold(program: &Program, ops: &[u8]) -> Folded {
    let n_patch = 9 * program.channels;
    let tables: Vec<u8> = (0..N_OPS).map(op_table).collect();
    let mut sym: Vec<Sym> = (0..program.gates.n_rows)
        .map(|r| Sym::Lit {
            node: r as u32,
            neg: false,
        })
        .collect();
    let mut nodes: Vec<(Kind, u32, u32)> = Vec::new();
    // Fx: the default SipHash was a visible share of a compile (docs/performance.md),
    // and the drift search compiles once per candidate.
    let mut seen = FxHashMap::default();
    let mut folded_gates = 0;
    for ins in &program.gates.instrs {
        let t = tables[ops[ins.coef as usize] as usize];
        let (sa, sb) = (sym[ins.a as usize], sym[ins.b as usize]);
        sym[ins.out as usize] = match fold_gate(t, sa, sb) {
            Folding::Sym(s) => s,
            Folding::Gate { kind, x, y, neg } => {
                folded_gates += 1;
                let node = *seen.entry((kind, x, y)).or_insert_with(|| {
                    nodes.push((kind, x, y));
                    (n_patch + nodes.len() - 1) as u32
                });
                Sym::Lit { node, neg }
            }
        };
    }
    let out_syms = program
        .gates
        .out_rows
        .iter()
        .map(|&r| sym[r as usize])
        .collect();
    Folded {
        n_patch,
        nodes,
        out_syms,
        folded_gates,
    }
}

/// What one gate of truth table `t` on `sa`, `sb` becomes.
enum Folding {
    /// A constant or a literal of an existing node: costs nothing.
    Sym(Sym),
    /// A genuine two-input gate `kind(x, y)`, negated when `neg`.
    Gate {
        kind: Kind,
        x: u32,
        y: u32,
        neg: bool,
    },
}

fn fold_gate(t: u8, sa: Sym, sb: Sym) -> Folding {
    let (na, ga, nb, gb) = match (sa, sb) {
        (Sym::Const(va), _) => {
            let (i0, i1) = (va as u8, va as u8 + 2);
            return Folding::Sym(apply1(bit(t, i0), bit(t, i1), sb));
        }
        (_, Sym::Const(vb)) => {
            let (i0, i1) = (2 * vb as u8, 2 * vb as u8 + 1);
            return Folding::Sym(apply1(bit(t, i0), bit(t, i1), sa));
        }
        (Sym::Lit { node: na, neg: ga }, Sym::Lit { node: nb, neg: gb }) => (na, ga, nb, gb),
    };
    let mut t = t;
    if ga {
        t = negate_a(t);
    }
    if gb {
        t = negate_b(t);
    }
    let lit = |node| Sym::Lit { node, neg: false };
    if na == nb {
        return Folding::Sym(apply1(bit(t, 0), bit(t, 3), lit(na)));
    }
    if bit(t, 0) == bit(t, 2) && bit(t, 1) == bit(t, 3) {
        return Folding::Sym(apply1(bit(t, 0), bit(t, 1), lit(na))); // b is irrelevant
    }
    if bit(t, 0) == bit(t, 1) && bit(t, 2) == bit(t, 3) {
        return Folding::Sym(apply1(bit(t, 0), bit(t, 2), lit(nb))); // a is irrelevant
    }
    let (kind, x, y, neg) = match t {
        0x8 => (Kind::And, na, nb, false),
        0x7 => (Kind::And, na, nb, true),
        0x2 => (Kind::AndNot, na, nb, false),
        0xD => (Kind::AndNot, na, nb, true),
        0x4 => (Kind::AndNot, nb, na, false),
        0xB => (Kind::AndNot, nb, na, true),
        0xE => (Kind::Or, na, nb, false),
        0x1 => (Kind::Or, na, nb, true),
        0x6 => (Kind::Xor, na, nb, false),
        0x9 => (Kind::Xor, na, nb, true),
        _ => unreachable!("table {t:#x} depends on both inputs"),
    };
    let (x, y) = if kind.commutative() && y < x {
        (y, x)
    } else {
        (x, y)
    };
    Folding::Gate { kind, x, y, neg }
}

/// Phase 2: which nodes reach an output.
fn liveness(f: &Folded) -> Vec<bool> {
    let mut live = vec![false; f.n_patch + f.nodes.len()];
    for s in &f.out_syms {
        if let Sym::Lit { node, .. } = *s {
            live[node as usize] = true;
        }
    }
    for g in (0..f.nodes.len()).rev() {
        if live[f.n_patch + g] {
            let (_, x, y) = f.nodes[g];
            live[x as usize] = true;
            live[y as usize] = true;
        }
    }
    live
}

/// Phase 3: live gates ordered by channel group, depth, kernel, inputs. A gate whose
/// inputs all come from one channel's patch (perception) belongs to that channel, any
/// other gate to group C, last. Every gate's inputs are in its own group at a lower
/// depth, or earlier groups, so the order is topological; it runs channel by channel
/// (few live values with many channels) and groups each depth's gates by kernel (long
/// branch-free runs).
fn schedule(f: &Folded, live: &[bool], channels: usize) -> Schedule {
    let n_patch = f.n_patch;
    let n_nodes = n_patch + f.nodes.len();
    let mut depth = vec![0usize; n_nodes];
    let mut group: Vec<usize> = (0..n_nodes).map(|v| (v / 9).min(channels)).collect();
    for (g, &(_, x, y)) in f.nodes.iter().enumerate() {
        let (x, y) = (x as usize, y as usize);
        depth[n_patch + g] = 1 + depth[x].max(depth[y]);
        group[n_patch + g] = if group[x] == group[y] {
            group[x]
        } else {
            channels
        };
    }
    // Keys computed once; they are unique (merged nodes differ in kind or inputs), so
    // an unstable sort gives the one order.
    let mut keyed: Vec<_> = (0..f.nodes.len())
        .filter(|&g| live[n_patch + g])
        .map(|g| {
            let v = n_patch + g;
            let (kind, x, y) = f.nodes[g];
            ((group[v], depth[v], kind, x, y), g)
        })
        .collect();
    keyed.sort_unstable();
    let order = keyed.into_iter().map(|(_, g)| g).collect();
    Schedule { order, depth }
}

/// Phase 4: slots by linear scan. A value's slot is freed after its last reader, and
/// an op may write the slot one of its own inputs just freed (a gate reads both inputs
/// before it writes).
fn allocate_slots(f: &Folded, live: &[bool], order: &[usize]) -> SlotPlan {
    const FOREVER: usize = usize::MAX;
    let n_patch = f.n_patch;
    let n_nodes = n_patch + f.nodes.len();
    let mut last_use = vec![0usize; n_nodes];
    for (pos, &g) in order.iter().enumerate() {
        let (_, x, y) = f.nodes[g];
        last_use[x as usize] = pos;
        last_use[y as usize] = pos;
    }
    for s in &f.out_syms {
        if let Sym::Lit { node, .. } = *s {
            last_use[node as usize] = FOREVER;
        }
    }
    let mut slots = SlotPlan {
        n_slots: 0,
        fills: Vec::new(),
        ops: Vec::with_capacity(order.len()),
        spans: Vec::new(),
        by_kind: [0; 4],
        slot_of: vec![u32::MAX; n_nodes],
    };
    let mut free: Vec<u32> = Vec::new();
    for p in (0..n_patch).filter(|&p| live[p]) {
        let slot = slots.alloc(&mut free);
        slots.slot_of[p] = slot;
        let e = p % 9;
        slots.fills.push(Fill {
            channel: p / 9,
            dr: e / 3,
            dc: e % 3,
            slot,
        });
    }
    // Rows in order of dr so that neighbouring fills read the same state rows.
    slots
        .fills
        .sort_unstable_by_key(|f| (f.dr, f.channel, f.dc));
    for (pos, &g) in order.iter().enumerate() {
        let (kind, x, y) = f.nodes[g];
        let (sx, sy) = (slots.slot_of[x as usize], slots.slot_of[y as usize]);
        for v in [x, y] {
            let v = v as usize;
            if last_use[v] == pos && slots.slot_of[v] != u32::MAX {
                free.push(slots.slot_of[v]);
                slots.slot_of[v] = u32::MAX; // free once even when x == y
            }
        }
        let out = slots.alloc(&mut free);
        slots.slot_of[n_patch + g] = out;
        slots.push(kind, Op { x: sx, y: sy, out }, pos);
    }
    slots
}

impl SlotPlan {
    /// A free slot, or a new one.
    fn alloc(&mut self, free: &mut Vec<u32>) -> u32 {
        free.pop().unwrap_or_else(|| {
            self.n_slots += 1;
            self.n_slots - 1
        })
    }

    /// Appends `op` (at schedule position `pos`) to the run of its kind.
    fn push(&mut self, kind: Kind, op: Op, pos: usize) {
        self.ops.push(op);
        self.by_kind[kind as usize] += 1;
        match self.spans.last_mut() {
            Some(r) if r.kind == kind => r.end += 1,
            _ => self.spans.push(OpSpan {
                kind,
                start: pos,
                end: pos + 1,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_table_helpers() {
        // AND = 0b1000; f(¬a, b) = ¬a ∧ b = 0b0100; f(a, ¬b) = a ∧ ¬b = 0b0010.
        assert_eq!(op_table(1), 0b1000);
        assert_eq!(negate_a(0b1000), 0b0100);
        assert_eq!(negate_b(0b1000), 0b0010);
        for op in 0..N_OPS {
            for i in 0..4u8 {
                let (a, b) = (i & 1 == 1, i & 2 == 2);
                assert_eq!(bit(op_table(op), i), gates::eval_op(op, a, b));
                assert_eq!(bit(negate_a(op_table(op)), i), gates::eval_op(op, !a, b));
                assert_eq!(bit(negate_b(op_table(op)), i), gates::eval_op(op, a, !b));
            }
        }
    }
}
