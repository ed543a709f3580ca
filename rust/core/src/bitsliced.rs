//! The bit-sliced hard engine: a learned circuit run as real logic on packed bits.
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
//!
//! **Layout.** One bit per cell. The state is `B·H` grid rows, each `C` channel rows
//! of `nw = ⌈W/64⌉` words: channel `c` of word `i` of grid row `row = b·H + r` is
//! `state[(row·C + c)·nw + i]`; bit `k` of word `i` is column `64·i + k`, bits past `W`
//! are kept 0. Cells are numbered by word `n = row·nw + i` (masks use this order).
//! Vertical neighbours are the rows above and below; horizontal neighbours are one-bit
//! shifts of whole row segments with the carry taken from the adjacent word (or the
//! wrapped / zero column at the grid edge). No per-bit gathers.
//!
//! **Step.** Words are processed in blocks of `L` consecutive words (1 to 64; see
//! [`auto_words`]: the widest whose arena stays in L1, 64 words = 4096 cells for a
//! trained GoL circuit); a slot of the arena is `[u64; L]`, so every gate is one
//! branch-free bitwise operation on `64·L` bits: explicit AVX-512 instructions where the
//! CPU has them, else what LLVM vectorises. Per block: shift the patch words in, run the
//! gates kernel by kernel, write the outputs (blended with the old state under the
//! update mask, damaged cells cleared). Tasks of whole grid rows run in parallel on the
//! crate's rayon pool with one arena per thread, allocated once per [`Simulator`]; the
//! step loop allocates nothing. The result never depends on the thread count: blocks
//! are independent and async masks come from one random stream per grid row and step.

use std::ops::Range;
use std::sync::Mutex;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use crate::aligned::AlignedVec;
use crate::engine::GridShape;
use crate::error::{shape_err, value_err, Error, Result};
use crate::gates::{self, N_OPS};
use crate::kernels::{self, SimdLevel};
use crate::model::Model;
use crate::program::Program;
use crate::threads;

/// Arena bytes per thread the automatic block width aims for: well inside a 48 KiB L1
/// data cache, next to the state rows a block reads.
const ARENA_BUDGET: usize = 40 << 10;

/// Block widths (in 64-bit words) the engine is compiled for.
pub const SUPPORTED_WORDS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Checks a block width asked for (0: automatic).
pub fn check_words(words: usize) -> Result<()> {
    if words != 0 && !SUPPORTED_WORDS.contains(&words) {
        return value_err!("words must be one of {SUPPORTED_WORDS:?} (or 0), got {words}");
    }
    Ok(())
}

/// The block width used when none is asked for: the widest whose arena fits in 40 KiB
/// (64 words = 4096 cells for circuits of up to 80 slots, 16 words up to 320 slots).
/// Wider blocks spread each gate's fixed cost (reading the instruction, the loop) over
/// more cells; an arena that leaves L1 costs more than that saves (`benches/hard.rs`,
/// `LOGICARS_BENCH_WORDS`).
pub fn auto_words(circuit: &Circuit) -> usize {
    let slot_bytes = circuit.n_slots.max(1) * 8;
    SUPPORTED_WORDS
        .iter()
        .rev()
        .copied()
        .find(|&w| w * slot_bytes <= ARENA_BUDGET)
        .unwrap_or(1)
}

// ---------------------------------------------------------------------------------
// Truth tables: bit `a + 2·b` of a 4-bit table is the gate's output on (a, b).

fn op_table(op: usize) -> u8 {
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

/// The four bitwise kernels every remaining gate is one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// `x & y`
    And = 0,
    /// `x & !y`
    AndNot = 1,
    /// `x | y`
    Or = 2,
    /// `x ^ y`
    Xor = 3,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::And, Kind::AndNot, Kind::Or, Kind::Xor];

    pub fn name(self) -> &'static str {
        match self {
            Kind::And => "and",
            Kind::AndNot => "and_not",
            Kind::Or => "or",
            Kind::Xor => "xor",
        }
    }

    fn commutative(self) -> bool {
        self != Kind::AndNot
    }
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

/// A gate of the compiled circuit: `out = kind(x, y)` on arena slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Op {
    pub(crate) x: u32,
    pub(crate) y: u32,
    pub(crate) out: u32,
}

/// Consecutive ops of one kind.
#[derive(Debug, Clone, Copy)]
struct Run {
    kind: Kind,
    start: usize,
    end: usize,
}

/// How one patch word is built: channel, row offset index (0..3 for dr = -1, 0, 1),
/// column offset index (0..3 for dc = -1, 0, 1), arena slot.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fill {
    pub(crate) channel: usize,
    pub(crate) dr: usize,
    pub(crate) dc: usize,
    pub(crate) slot: u32,
}

/// Where one channel of the next state comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    Const(bool),
    Slot { slot: u32, neg: bool },
}

/// Gate counts of a compiled circuit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CircuitStats {
    /// Gate evaluations per cell in the float program (dead gates already removed;
    /// perception gates count once per channel).
    pub program_gates: usize,
    /// Program gates left after folding constants, pass-throughs and NOTs (each still
    /// a genuine two-input gate), before duplicates are merged and dead gates dropped.
    pub folded_gates: usize,
    /// Distinct gates after merging duplicates, before dead gates are dropped.
    pub merged_gates: usize,
    /// Gates left after folding constants, pass-throughs and negations, merging
    /// duplicates and dropping dead gates: the bitwise operations per cell and step.
    pub active_gates: usize,
    /// `active_gates` by kernel, in [`Kind::ALL`] order.
    pub by_kind: [usize; 4],
    /// Arena slots (each a block of `L` words) a block needs.
    pub slots: usize,
    /// Patch words (channel × neighbour) the circuit reads.
    pub patch_inputs: usize,
    /// Longest gate path.
    pub depth: usize,
}

/// A hard circuit compiled to bitwise operations on arena slots.
#[derive(Debug, Clone)]
pub struct Circuit {
    channels: usize,
    pub(crate) n_slots: usize,
    pub(crate) fills: Vec<Fill>,
    ops: Vec<Op>,
    runs: Vec<Run>,
    pub(crate) outputs: Vec<Output>,
    stats: CircuitStats,
}

impl Circuit {
    /// The hard circuit of `model` with its current parameters.
    pub fn from_model(model: &Model) -> Circuit {
        let program = Program::compile(model.spec(), model.perceive_wires(), model.update_wires());
        Circuit::compile(&program, &model.hard_ops())
    }

    /// Compiles `program` with hard gate `ops[coef]` for each parameter gate.
    ///
    /// Panics if `ops` has fewer than `program.n_params` values or an op is not < 16.
    pub fn compile(program: &Program, ops: &[u8]) -> Circuit {
        assert!(
            ops.len() >= program.n_params,
            "compile: {} ops for {} parameter gates",
            ops.len(),
            program.n_params
        );
        let c_n = program.channels;
        let n_patch = 9 * c_n;
        let tables: Vec<u8> = (0..N_OPS).map(op_table).collect();

        // 1. Symbolic rewrite in program order (which is topological).
        let mut sym: Vec<Sym> = (0..program.gates.n_rows)
            .map(|r| Sym::Lit {
                node: r as u32,
                neg: false,
            })
            .collect();
        // Gate nodes: (kind, x node, y node); node id = n_patch + index.
        let mut nodes: Vec<(Kind, u32, u32)> = Vec::new();
        let mut seen = std::collections::HashMap::new();
        let mut folded_gates = 0;
        for ins in &program.gates.instrs {
            let op = ops[ins.coef as usize] as usize;
            let (sa, sb) = (sym[ins.a as usize], sym[ins.b as usize]);
            let t = tables[op];
            let result = match (sa, sb) {
                (Sym::Const(va), _) => {
                    let (i0, i1) = (va as u8, va as u8 + 2);
                    apply1(bit(t, i0), bit(t, i1), sb)
                }
                (_, Sym::Const(vb)) => {
                    let (i0, i1) = (2 * vb as u8, 2 * vb as u8 + 1);
                    apply1(bit(t, i0), bit(t, i1), sa)
                }
                (Sym::Lit { node: na, neg: ga }, Sym::Lit { node: nb, neg: gb }) => {
                    let mut t = t;
                    if ga {
                        t = negate_a(t);
                    }
                    if gb {
                        t = negate_b(t);
                    }
                    let lit = |node| Sym::Lit { node, neg: false };
                    if na == nb {
                        apply1(bit(t, 0), bit(t, 3), lit(na))
                    } else if bit(t, 0) == bit(t, 2) && bit(t, 1) == bit(t, 3) {
                        apply1(bit(t, 0), bit(t, 1), lit(na)) // b is irrelevant
                    } else if bit(t, 0) == bit(t, 1) && bit(t, 2) == bit(t, 3) {
                        apply1(bit(t, 0), bit(t, 2), lit(nb)) // a is irrelevant
                    } else {
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
                        folded_gates += 1;
                        let node = *seen.entry((kind, x, y)).or_insert_with(|| {
                            nodes.push((kind, x, y));
                            (n_patch + nodes.len() - 1) as u32
                        });
                        Sym::Lit { node, neg }
                    }
                }
            };
            sym[ins.out as usize] = result;
        }
        let out_syms: Vec<Sym> = program
            .gates
            .out_rows
            .iter()
            .map(|&r| sym[r as usize])
            .collect();

        // 2. Liveness from the outputs.
        let n_nodes = n_patch + nodes.len();
        let mut live = vec![false; n_nodes];
        for s in &out_syms {
            if let Sym::Lit { node, .. } = *s {
                live[node as usize] = true;
            }
        }
        for g in (0..nodes.len()).rev() {
            if live[n_patch + g] {
                let (_, x, y) = nodes[g];
                live[x as usize] = true;
                live[y as usize] = true;
            }
        }

        // 3. Schedule live gates by channel group, depth, kernel, inputs. A gate whose
        //    inputs all come from one channel's patch (perception) belongs to that
        //    channel, any other gate to group C, last. Every gate's inputs are in its own
        //    group at a lower depth, or earlier groups, so the order is topological; it
        //    runs channel by channel (few live values with many channels) and groups
        //    each depth's gates by kernel (long branch-free runs).
        let mut depth = vec![0usize; n_nodes];
        let mut group: Vec<usize> = (0..n_nodes).map(|v| (v / 9).min(c_n)).collect();
        for (g, &(_, x, y)) in nodes.iter().enumerate() {
            let (x, y) = (x as usize, y as usize);
            depth[n_patch + g] = 1 + depth[x].max(depth[y]);
            group[n_patch + g] = if group[x] == group[y] { group[x] } else { c_n };
        }
        let mut order: Vec<usize> = (0..nodes.len()).filter(|&g| live[n_patch + g]).collect();
        order.sort_by_key(|&g| {
            let v = n_patch + g;
            (group[v], depth[v], nodes[g].0, nodes[g].1, nodes[g].2)
        });

        // 4. Slots by linear scan: a value's slot is freed after its last reader, and
        //    an op may write the slot one of its own inputs just freed (a gate reads
        //    both inputs before it writes).
        const FOREVER: usize = usize::MAX;
        let mut last_use = vec![0usize; n_nodes];
        for (pos, &g) in order.iter().enumerate() {
            let (_, x, y) = nodes[g];
            last_use[x as usize] = pos;
            last_use[y as usize] = pos;
        }
        for s in &out_syms {
            if let Sym::Lit { node, .. } = *s {
                last_use[node as usize] = FOREVER;
            }
        }
        let mut slot_of = vec![u32::MAX; n_nodes];
        let mut free: Vec<u32> = Vec::new();
        let mut n_slots = 0u32;
        let mut alloc = |free: &mut Vec<u32>| {
            free.pop().unwrap_or_else(|| {
                n_slots += 1;
                n_slots - 1
            })
        };
        let mut fills = Vec::new();
        for (p, slot) in slot_of.iter_mut().enumerate().take(n_patch) {
            if live[p] {
                *slot = alloc(&mut free);
                let e = p % 9;
                fills.push(Fill {
                    channel: p / 9,
                    dr: e / 3,
                    dc: e % 3,
                    slot: *slot,
                });
            }
        }
        // Rows in order of dr so that neighbouring fills read the same state rows.
        fills.sort_by_key(|f| (f.dr, f.channel, f.dc));
        let mut ops = Vec::with_capacity(order.len());
        let mut runs: Vec<Run> = Vec::new();
        let mut by_kind = [0usize; 4];
        for (pos, &g) in order.iter().enumerate() {
            let (kind, x, y) = nodes[g];
            let (sx, sy) = (slot_of[x as usize], slot_of[y as usize]);
            for v in [x, y] {
                if last_use[v as usize] == pos && slot_of[v as usize] != u32::MAX {
                    free.push(slot_of[v as usize]);
                    slot_of[v as usize] = u32::MAX; // free once even when x == y
                }
            }
            let out = alloc(&mut free);
            slot_of[n_patch + g] = out;
            ops.push(Op { x: sx, y: sy, out });
            by_kind[kind as usize] += 1;
            match runs.last_mut() {
                Some(r) if r.kind == kind => r.end += 1,
                _ => runs.push(Run {
                    kind,
                    start: pos,
                    end: pos + 1,
                }),
            }
        }
        let outputs = out_syms
            .iter()
            .map(|s| match *s {
                Sym::Const(v) => Output::Const(v),
                Sym::Lit { node, neg } => Output::Slot {
                    slot: slot_of[node as usize],
                    neg,
                },
            })
            .collect();
        let stats = CircuitStats {
            program_gates: program.gates.instrs.len(),
            folded_gates,
            merged_gates: nodes.len(),
            active_gates: ops.len(),
            by_kind,
            slots: n_slots as usize,
            patch_inputs: fills.len(),
            depth: order.iter().map(|&g| depth[n_patch + g]).max().unwrap_or(0),
        };
        Circuit {
            channels: c_n,
            n_slots: n_slots as usize,
            fills,
            ops,
            runs,
            outputs,
            stats,
        }
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn stats(&self) -> &CircuitStats {
        &self.stats
    }

    /// The ops in schedule order with their kernels (for `crate::netlist`).
    pub(crate) fn scheduled_ops(&self) -> impl Iterator<Item = (Kind, &Op)> {
        self.runs
            .iter()
            .flat_map(move |r| self.ops[r.start..r.end].iter().map(move |op| (r.kind, op)))
    }

    /// Evaluates the circuit on one cell's 3×3 neighbourhood, `patch[c·9 + e]`
    /// (entry `e` as in the fixtures, 4 = the cell). Returns the cell's next state.
    /// A reference for tests and exporters; the engine never runs per cell.
    pub fn eval_cell(&self, patch: &[bool]) -> Vec<bool> {
        assert_eq!(
            patch.len(),
            9 * self.channels,
            "eval_cell: patch of 9*C bits"
        );
        let mut arena = vec![[0u64; 1]; self.n_slots];
        for f in &self.fills {
            arena[f.slot as usize][0] = patch[f.channel * 9 + f.dr * 3 + f.dc] as u64;
        }
        eval::<1>(self, &mut arena, SimdLevel::Portable);
        self.outputs
            .iter()
            .map(|o| match *o {
                Output::Const(v) => v,
                Output::Slot { slot, neg } => (arena[slot as usize][0] & 1 == 1) != neg,
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------
// The gate kernels.

#[inline(always)]
fn run_ops<const L: usize>(ops: &[Op], arena: &mut [[u64; L]], f: impl Fn(u64, u64) -> u64) {
    let n = arena.len();
    let p = arena.as_mut_ptr();
    for op in ops {
        debug_assert!((op.x as usize) < n && (op.y as usize) < n && (op.out as usize) < n);
        // SAFETY: `Circuit::compile` numbers slots below `n_slots` and `eval`, the only
        // caller, checks the arena holds that many. Both inputs are read before the write.
        unsafe {
            let x = *p.add(op.x as usize);
            let y = *p.add(op.y as usize);
            let mut o = [0u64; L];
            for k in 0..L {
                o[k] = f(x[k], y[k]);
            }
            *p.add(op.out as usize) = o;
        }
    }
}

#[inline(always)]
fn eval_impl<const L: usize>(ops: &[Op], runs: &[Run], arena: &mut [[u64; L]]) {
    for r in runs {
        let ops = &ops[r.start..r.end];
        match r.kind {
            Kind::And => run_ops(ops, arena, |x, y| x & y),
            Kind::AndNot => run_ops(ops, arena, |x, y| x & !y),
            Kind::Or => run_ops(ops, arena, |x, y| x | y),
            Kind::Xor => run_ops(ops, arena, |x, y| x ^ y),
        }
    }
}

/// AVX-512 kernels: one 512-bit register per 8 words, explicit because LLVM prefers
/// 256-bit vectors on many AVX-512 CPUs, and the 512-bit loads and stores are what
/// bound this loop (about 1.5x the throughput of the 256-bit code here).
#[cfg(target_arch = "x86_64")]
mod zmm {
    use super::{Kind, Op, Run};
    use std::arch::x86_64::*;

    macro_rules! run {
        ($ops:expr, $p:expr, $L:expr, |$x:ident, $y:ident| $e:expr) => {
            for op in $ops {
                let (xp, yp) = ($p.add(op.x as usize * $L), $p.add(op.y as usize * $L));
                let out = $p.add(op.out as usize * $L);
                for k in 0..$L / 8 {
                    let $x = _mm512_loadu_si512(xp.add(8 * k).cast());
                    let $y = _mm512_loadu_si512(yp.add(8 * k).cast());
                    _mm512_storeu_si512(out.add(8 * k).cast(), $e);
                }
            }
        };
    }

    /// # Safety
    /// The CPU has AVX-512F, `L` is a multiple of 8 and every slot of `ops` is below
    /// `arena.len()`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn eval<const L: usize>(ops: &[Op], runs: &[Run], arena: &mut [[u64; L]]) {
        let p = arena.as_mut_ptr().cast::<u64>();
        for r in runs {
            let ops = &ops[r.start..r.end];
            // SAFETY: the caller's contract; both inputs are loaded before the store.
            unsafe {
                match r.kind {
                    Kind::And => run!(ops, p, L, |x, y| _mm512_and_si512(x, y)),
                    Kind::AndNot => run!(ops, p, L, |x, y| _mm512_andnot_si512(y, x)),
                    Kind::Or => run!(ops, p, L, |x, y| _mm512_or_si512(x, y)),
                    Kind::Xor => run!(ops, p, L, |x, y| _mm512_xor_si512(x, y)),
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn eval_avx2<const L: usize>(ops: &[Op], runs: &[Run], arena: &mut [[u64; L]]) {
    eval_impl::<L>(ops, runs, arena)
}

fn eval<const L: usize>(circuit: &Circuit, arena: &mut [[u64; L]], level: SimdLevel) {
    assert!(
        arena.len() >= circuit.n_slots,
        "arena smaller than the circuit"
    );
    let (ops, runs) = (&circuit.ops[..], &circuit.runs[..]);
    match level {
        // SAFETY: `simd_level` only reports levels the CPU supports; `Circuit::compile`
        // numbers slots below `n_slots`, checked against the arena above.
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 if L.is_multiple_of(8) => unsafe { zmm::eval::<L>(ops, runs, arena) },
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 | SimdLevel::Avx2 => unsafe { eval_avx2::<L>(ops, runs, arena) },
        _ => eval_impl::<L>(ops, runs, arena),
    }
}

/// The scratch slots of one thread, 64-byte aligned (a cache line, one AVX-512 register).
struct Arena {
    words: AlignedVec<u64>,
}

impl Arena {
    fn new(n_slots: usize, words: usize) -> Arena {
        Arena {
            words: AlignedVec::zeros(n_slots.max(1) * words),
        }
    }

    /// The arena as slots of `L` words.
    fn slots<const L: usize>(&mut self) -> &mut [[u64; L]] {
        let n = self.words.len() / L;
        // SAFETY: `n` slots of `L` words fit in the buffer's initialised, 64-byte aligned
        // `u64`s; the borrow of `self` keeps them exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<[u64; L]>(), n) }
    }
}

// ---------------------------------------------------------------------------------
// Grid geometry and the packed layout.

/// Sizes of one packed grid and how its edges behave.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Geo {
    height: usize,
    width: usize,
    channels: usize,
    periodic: bool,
    /// Words per grid row, `⌈W/64⌉`.
    nw: usize,
    /// Words of one channel of the state, `B·H·nw` (the buffer holds `C` times that).
    n_words: usize,
    /// Valid bits of a row's last word.
    last_mask: u64,
    /// Bit of column `W - 1` in a row's last word.
    wrap_bit: u32,
}

impl Geo {
    pub(crate) fn new(shape: GridShape, channels: usize, periodic: bool) -> Geo {
        let nw = shape.width.div_ceil(64);
        let tail = shape.width % 64;
        Geo {
            height: shape.height,
            width: shape.width,
            channels,
            periodic,
            nw,
            n_words: shape.batch * shape.height * nw,
            last_mask: if tail == 0 { !0 } else { (1u64 << tail) - 1 },
            wrap_bit: ((shape.width - 1) % 64) as u32,
        }
    }

    /// Grid rows (`b·H + r`) above, at and below `row` (row `r` of its board); `None`
    /// outside a zero grid.
    #[inline(always)]
    fn neighbour_rows(&self, row: usize, r: usize) -> [Option<usize>; 3] {
        let h = self.height;
        let up = if r > 0 {
            Some(row - 1)
        } else if self.periodic {
            Some(row + h - 1)
        } else {
            None
        };
        let down = if r + 1 < h {
            Some(row + 1)
        } else if self.periodic {
            Some(row + 1 - h)
        } else {
            None
        };
        [up, Some(row), down]
    }

    /// Words `i0 .. i0 + dst.len()` (all in grid row `row`) of channel `c`, seen from
    /// column offset `dc - 1`: bit `k` of word `i` holds the cell at column
    /// `64·i + k + dc - 1`, wrapped or 0 past the edges.
    #[inline(always)]
    fn shifted_segment(
        &self,
        state: &[u64],
        row: usize,
        i0: usize,
        c: usize,
        dc: usize,
        dst: &mut [u64],
    ) {
        let (nw, len) = (self.nw, dst.len());
        let words = &state[(row * self.channels + c) * nw..][..nw];
        let src = &words[i0..i0 + len];
        match dc {
            1 => dst.copy_from_slice(src),
            0 => {
                // Bit k takes bit k - 1: the carry comes from the word before.
                let carry = if i0 > 0 {
                    words[i0 - 1] >> 63
                } else if self.periodic {
                    (words[nw - 1] >> self.wrap_bit) & 1
                } else {
                    0
                };
                dst[0] = (src[0] << 1) | carry;
                for (d, w) in dst[1..].iter_mut().zip(src.windows(2)) {
                    *d = (w[1] << 1) | (w[0] >> 63);
                }
            }
            _ => {
                // Bit k takes bit k + 1: the carry comes from the word after.
                let end = i0 + len;
                let carry = if end < nw {
                    words[end] << 63
                } else if self.periodic {
                    (words[0] & 1) << self.wrap_bit
                } else {
                    0
                };
                for (d, w) in dst.iter_mut().zip(src.windows(2)) {
                    *d = (w[0] >> 1) | (w[1] << 63);
                }
                dst[len - 1] = (src[len - 1] >> 1) | carry;
            }
        }
    }
}

/// Writes the patch words of words `base .. end` (at most `L`) into their arena slots;
/// lanes past `end` get 0.
#[inline(always)]
fn fill_block<const L: usize>(
    circuit: &Circuit,
    geo: &Geo,
    state: &[u64],
    base: usize,
    end: usize,
    arena: &mut [[u64; L]],
) {
    let nw = geo.nw;
    let (mut row, mut i) = (base / nw, base % nw);
    let mut r = row % geo.height;
    let mut n = base;
    // One segment per grid row the block touches: shift whole runs of words.
    while n < end {
        let len = (nw - i).min(end - n);
        let lanes = n - base..n - base + len;
        let rows = geo.neighbour_rows(row, r);
        for f in &circuit.fills {
            let dst = &mut arena[f.slot as usize][lanes.clone()];
            match rows[f.dr] {
                Some(src) => geo.shifted_segment(state, src, i, f.channel, f.dc, dst),
                None => dst.fill(0),
            }
        }
        n += len;
        row += 1;
        r = if r + 1 == geo.height { 0 } else { r + 1 };
        i = 0;
    }
    if end - base < L {
        for f in &circuit.fills {
            arena[f.slot as usize][end - base..].fill(0);
        }
    }
}

/// Writes the next state of words `base .. end` into `out`, the rows from `row0` on of
/// the next state, blending with the old state under the update mask and clearing
/// damaged cells and the padding columns (`damage` holds whole grid rows: `H` or
/// `B·H` of them).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn write_block<const L: usize>(
    circuit: &Circuit,
    geo: &Geo,
    state: &[u64],
    (base, end): (usize, usize),
    arena: &[[u64; L]],
    mask: Option<&[u64]>,
    damage: Option<&[u64]>,
    out: &mut [u64],
    row0: usize,
) {
    let (nw, c_n) = (geo.nw, geo.channels);
    let (mut row, mut i) = (base / nw, base % nw);
    let mut n = base;
    // One segment per grid row, as in `fill_block`.
    while n < end {
        let len = (nw - i).min(end - n);
        let lanes = n - base..n - base + len;
        let (at, local) = (row * c_n * nw + i, (row - row0) * c_n * nw + i);
        let m = mask.map(|m| &m[n..n + len]);
        let dead = damage.map(|d| {
            let k = n % d.len(); // d holds whole rows, so the segment is contiguous
            &d[k..k + len]
        });
        for (c, src) in circuit.outputs.iter().enumerate() {
            let dst = &mut out[local + c * nw..][..len];
            match *src {
                Output::Const(b) => dst.fill(0u64.wrapping_sub(b as u64)),
                Output::Slot { slot, neg } => {
                    let flip = 0u64.wrapping_sub(neg as u64);
                    for (d, &v) in dst.iter_mut().zip(&arena[slot as usize][lanes.clone()]) {
                        *d = v ^ flip;
                    }
                }
            }
            if let Some(m) = m {
                let old = &state[at + c * nw..][..len];
                for ((d, &m), &o) in dst.iter_mut().zip(m).zip(old) {
                    *d = (o & !m) | (*d & m);
                }
            }
            if let Some(dead) = dead {
                for (d, &k) in dst.iter_mut().zip(dead) {
                    *d &= !k;
                }
            }
            if i + len == nw {
                dst[len - 1] &= geo.last_mask;
            }
        }
        n += len;
        row += 1;
        i = 0;
    }
}

/// `B × H × W` cells (0/1 bytes, any nonzero counts as 1), one plane, packed into rows
/// of `nw` words (`dst`: `B·H·nw` words).
fn pack_plane(geo: &Geo, src: &[u8], dst: &mut [u64]) {
    let w = geo.width;
    dst.par_chunks_mut(geo.nw)
        .zip(src.par_chunks(w))
        .for_each(|(words, cells)| pack_row(cells, 1, words));
}

/// Packs `cells[k·stride]` for k < W into `words`.
#[inline]
fn pack_row(cells: &[u8], stride: usize, words: &mut [u64]) {
    for (i, word) in words.iter_mut().enumerate() {
        let mut v = 0u64;
        for (k, cell) in cells[i * 64 * stride..]
            .iter()
            .step_by(stride)
            .take(64)
            .enumerate()
        {
            v |= ((*cell != 0) as u64) << k;
        }
        *word = v;
    }
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
    if crate::engine::over_memory_cap(bytes) {
        return Err(Error::Memory(format!(
            "draw_masks: {steps} steps of {}x{}x{} masks need about {} MB, more than the \
             limit of {} MB (set LOGICARS_MAX_MEMORY_MB to raise it)",
            shape.batch,
            shape.height,
            shape.width,
            bytes >> 20,
            crate::engine::memory_cap_mb()
        )));
    }
    let geo = Geo::new(shape, 1, false);
    let hw = shape.height * shape.width;
    let mut out = vec![0u8; bytes];
    let mut mask = vec![0u64; geo.n_words];
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

/// Every buffer a simulation needs, allocated once: two packed states, a packed mask,
/// a packed damage plane and one arena per thread (and a copy of the circuit).
pub struct Simulator {
    circuit: Circuit,
    geo: Geo,
    batch: usize,
    words: usize,
    level: SimdLevel,
    cur: Vec<u64>,
    next: Vec<u64>,
    mask: Vec<u64>,
    damage: Vec<u64>,
    arenas: Vec<Mutex<Arena>>,
}

impl Simulator {
    /// Buffers for `shape` grids; `words` = 64-bit words per block (one of
    /// [`SUPPORTED_WORDS`], 0 for [`auto_words`]). The state starts all 0.
    pub fn new(
        circuit: &Circuit,
        shape: GridShape,
        periodic: bool,
        words: usize,
    ) -> Result<Simulator> {
        let words = if words == 0 {
            auto_words(circuit)
        } else {
            words
        };
        check_words(words)?;
        if shape.batch == 0 || shape.height == 0 || shape.width == 0 {
            return shape_err!("batch, height and width must be >= 1, got {shape:?}");
        }
        let geo = Geo::new(shape, circuit.channels, periodic);
        let threads = threads::num_threads().max(1);
        Ok(Simulator {
            circuit: circuit.clone(),
            geo,
            batch: shape.batch,
            words,
            level: kernels::simd_level(),
            cur: vec![0; geo.n_words * geo.channels],
            next: vec![0; geo.n_words * geo.channels],
            mask: vec![0; geo.n_words],
            damage: Vec::new(),
            arenas: (0..threads)
                .map(|_| Mutex::new(Arena::new(circuit.n_slots, words)))
                .collect(),
        })
    }

    /// Bytes of the buffers a simulator of this size holds.
    pub fn estimate_bytes(circuit: &Circuit, shape: GridShape, words: usize) -> usize {
        let n_words = shape
            .batch
            .saturating_mul(shape.height)
            .saturating_mul(shape.width.div_ceil(64));
        let threads = threads::num_threads().max(1);
        n_words
            .saturating_mul(2 * circuit.channels + 2)
            .saturating_add(threads * circuit.n_slots * words.max(64))
            .saturating_mul(8)
    }

    fn cells(&self) -> usize {
        self.batch * self.geo.height * self.geo.width
    }

    /// 64-bit words per block.
    pub fn words(&self) -> usize {
        self.words
    }

    /// Sets the state from a `B × H × W × C` grid of 0/1 bytes.
    pub fn load(&mut self, x: &[u8]) -> Result<()> {
        let c_n = self.geo.channels;
        if x.len() != self.cells() * c_n {
            return shape_err!(
                "x: expected B*H*W*C = {} values, got {}",
                self.cells() * c_n,
                x.len()
            );
        }
        if let Some(i) = x.iter().position(|&v| v > 1) {
            return value_err!("x: values must be 0 or 1, found {} at flat index {i}", x[i]);
        }
        let (nw, w) = (self.geo.nw, self.geo.width);
        let cur = &mut self.cur;
        threads::pool().install(|| {
            cur.par_chunks_mut(nw * c_n)
                .zip(x.par_chunks(w * c_n))
                .for_each(|(words, cells)| {
                    for c in 0..c_n {
                        for i in 0..nw {
                            let mut v = 0u64;
                            let end = (64 * (i + 1)).min(w);
                            for (k, col) in (64 * i..end).enumerate() {
                                v |= ((cells[col * c_n + c] != 0) as u64) << k;
                            }
                            words[c * nw + i] = v;
                        }
                    }
                })
        });
        Ok(())
    }

    /// Sets the damage plane: `H × W` (every board) or `B × H × W` bytes, 1 = the cell
    /// is forced to 0 after the steps that apply damage. `None` removes it.
    pub fn set_damage(&mut self, cells: Option<&[u8]>) -> Result<()> {
        let Some(d) = cells else {
            self.damage = Vec::new();
            return Ok(());
        };
        let hw = self.geo.height * self.geo.width;
        let boards = if d.len() == hw {
            1
        } else if d.len() == hw * self.batch {
            self.batch
        } else {
            return shape_err!(
                "damage: expected H*W = {hw} or B*H*W = {} values, got {}",
                hw * self.batch,
                d.len()
            );
        };
        if let Some(i) = d.iter().position(|&v| v > 1) {
            return value_err!(
                "damage: values must be 0 or 1, found {} at flat index {i}",
                d[i]
            );
        }
        let mut plane = vec![0u64; boards * self.geo.height * self.geo.nw];
        threads::pool().install(|| pack_plane(&self.geo, d, &mut plane));
        self.damage = plane;
        Ok(())
    }

    /// Writes the current state into `out` as a `B × H × W × C` grid of 0/1 bytes.
    pub fn read_into(&self, out: &mut [u8]) {
        let (c_n, nw, w) = (self.geo.channels, self.geo.nw, self.geo.width);
        assert_eq!(out.len(), self.cells() * c_n, "read_into: B*H*W*C bytes");
        threads::pool().install(|| {
            out.par_chunks_mut(w * c_n)
                .zip(self.cur.par_chunks(nw * c_n))
                .for_each(|(cells, words)| {
                    for (col, cell) in cells.chunks_exact_mut(c_n).enumerate() {
                        let (i, k) = (col / 64, col % 64);
                        for (c, v) in cell.iter_mut().enumerate() {
                            *v = ((words[c * nw + i] >> k) & 1) as u8;
                        }
                    }
                })
        });
    }

    /// The current state as a `B × H × W × C` grid of 0/1 bytes.
    pub fn read(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.cells() * self.geo.channels];
        self.read_into(&mut out);
        out
    }

    /// Packs this step's update mask; false when every cell updates.
    fn prepare_mask(&mut self, mask: StepMask<'_>) -> Result<bool> {
        let geo = self.geo;
        let hw = geo.height * geo.width;
        match mask {
            StepMask::All => Ok(false),
            StepMask::Given { masks, steps, t } => {
                if masks.len() != self.batch * steps * hw || t >= steps {
                    return shape_err!(
                        "masks: expected B*steps*H*W = {} values and t < steps = {steps}, got {} values and t = {t}",
                        self.batch * steps * hw,
                        masks.len()
                    );
                }
                let rows_per_board = geo.height;
                self.mask
                    .par_chunks_mut(geo.nw)
                    .enumerate()
                    .for_each(|(row, words)| {
                        let (b, r) = (row / rows_per_board, row % rows_per_board);
                        let at = ((b * steps + t) * geo.height + r) * geo.width;
                        pack_row(&masks[at..at + geo.width], 1, words);
                    });
                Ok(true)
            }
            StepMask::Random { fire_rate, seed, t } => {
                if !(fire_rate > 0.0 && fire_rate <= 1.0) {
                    return value_err!("fire_rate must be in (0, 1], got {fire_rate}");
                }
                random_mask(&geo, &mut self.mask, fire_rate, seed, t);
                Ok(true)
            }
        }
    }

    /// Runs one step: every cell (or the masked ones) takes its new state, then, with
    /// `damaged`, the cells of the damage plane are set to 0 in every channel.
    pub fn step(&mut self, mask: StepMask<'_>, damaged: bool) -> Result<()> {
        let masked = threads::pool().install(|| self.prepare_mask(mask))?;
        match self.words {
            1 => self.step_blocks::<1>(masked, damaged),
            2 => self.step_blocks::<2>(masked, damaged),
            4 => self.step_blocks::<4>(masked, damaged),
            8 => self.step_blocks::<8>(masked, damaged),
            16 => self.step_blocks::<16>(masked, damaged),
            32 => self.step_blocks::<32>(masked, damaged),
            64 => self.step_blocks::<64>(masked, damaged),
            w => unreachable!("words = {w} was validated"),
        }
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(())
    }

    fn step_blocks<const L: usize>(&mut self, masked: bool, damaged: bool) {
        let pool = threads::pool();
        let Simulator {
            circuit,
            geo,
            level,
            cur,
            next,
            mask,
            damage,
            arenas,
            ..
        } = self;
        let (circuit, geo, level) = (&*circuit, *geo, *level);
        let (nw, c_n) = (geo.nw, geo.channels);
        let total_rows = geo.n_words / nw;
        // Tasks of whole grid rows, a few per thread for balance, each at least a block;
        // results do not depend on the split.
        let tasks = 4 * pool.current_num_threads().max(1);
        let rows_per_task = L.div_ceil(nw).max(total_rows.div_ceil(tasks));
        let mask = masked.then_some(&mask[..]);
        let damage = (damaged && !damage.is_empty()).then_some(&damage[..]);
        let cur: &[u64] = cur;
        pool.install(|| {
            next.par_chunks_mut(rows_per_task * nw * c_n)
                .enumerate()
                .for_each(|(task, out)| {
                    let i = rayon::current_thread_index().unwrap_or(0) % arenas.len();
                    let mut guard = arenas[i].lock().unwrap_or_else(|e| e.into_inner());
                    let arena = guard.slots::<L>();
                    let row0 = task * rows_per_task;
                    let stop = (row0 + out.len() / (nw * c_n)) * nw;
                    let mut base = row0 * nw;
                    while base < stop {
                        let end = (base + L).min(stop);
                        fill_block::<L>(circuit, &geo, cur, base, end, arena);
                        eval::<L>(circuit, arena, level);
                        write_block::<L>(
                            circuit,
                            &geo,
                            cur,
                            (base, end),
                            arena,
                            mask,
                            damage,
                            out,
                            row0,
                        );
                        base = end;
                    }
                });
        });
    }
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

/// Options of [`simulate`].
#[derive(Debug, Clone)]
pub struct SimOptions<'a> {
    pub steps: usize,
    /// Wrap around the edges (else cells outside the grid are 0).
    pub periodic: bool,
    pub masks: Masks<'a>,
    /// `H × W` (all boards) or `B × H × W` bytes, 1 = a dead cell: forced to 0 in every
    /// channel after each step `t` (0-based) in `damage_steps`.
    pub damage: Option<&'a [u8]>,
    pub damage_steps: Range<usize>,
    /// 0: return only the final grid; `k`: return the grids after steps 0, k, 2k, …
    /// and always the final one (see [`frame_steps`]).
    pub record_every: usize,
    /// 64-bit words per block, 0 for [`auto_words`].
    pub words: usize,
    /// Asked whether to stop, about every `Interrupt::every` of running, on the calling
    /// thread outside the pool; `true` stops the run with
    /// [`crate::error::Error::Interrupted`] (the Python bindings check for Ctrl-C here).
    /// Results do not depend on it.
    pub interrupt: Option<Interrupt<'a>>,
}

/// How often the Python bindings ask whether a long run should stop.
pub const INTERRUPT_CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(50);

/// A check whether to stop a run (see [`SimOptions::interrupt`]).
#[derive(Clone, Copy)]
pub struct Interrupt<'a> {
    pub check: &'a (dyn Fn() -> bool + Sync),
    /// Running time between checks (zero: after every step).
    pub every: std::time::Duration,
}

impl std::fmt::Debug for Interrupt<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Interrupt")
    }
}

impl SimOptions<'_> {
    /// `steps` synchronous steps, no damage, final grid only.
    pub fn new(steps: usize, periodic: bool) -> SimOptions<'static> {
        SimOptions {
            steps,
            periodic,
            masks: Masks::Sync,
            damage: None,
            damage_steps: 0..0,
            record_every: 0,
            words: 0,
            interrupt: None,
        }
    }
}

/// Whether a simulation of `steps` steps returns the grid after step `t`: only the
/// final one when `record_every` is 0, else `0, k, 2k, …` and the final one.
pub fn is_frame(t: usize, steps: usize, record_every: usize) -> bool {
    t == steps || (record_every > 0 && t.is_multiple_of(record_every))
}

/// How many grids a simulation returns (see [`is_frame`]).
pub fn n_frames(steps: usize, record_every: usize) -> usize {
    match record_every {
        0 => 1,
        k => steps / k + 1 + usize::from(!steps.is_multiple_of(k)),
    }
}

/// The steps whose grids a simulation returns, in order (see [`is_frame`]).
pub fn frame_steps(steps: usize, record_every: usize) -> Vec<usize> {
    (0..=steps)
        .filter(|&t| is_frame(t, steps, record_every))
        .collect()
}

/// Runs `circuit` on `x` (`B × H × W × C` bytes, 0/1) for `opts.steps` steps with the
/// slot engine (the portable engine, and the oracle of the JIT's tests). Returns the
/// grids of [`frame_steps`] concatenated, each `B × H × W × C` bytes.
/// [`crate::hard::simulate`] picks the fastest engine.
pub fn simulate(
    circuit: &Circuit,
    x: &[u8],
    shape: GridShape,
    opts: &SimOptions<'_>,
) -> Result<Vec<u8>> {
    crate::hard::simulate_on(crate::hard::HardEngine::Slots, circuit, x, shape, opts)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::Decoding;
    use crate::spec::{PerceiveSpec, Spec, UpdateSpec, Wiring};
    use rand::RngExt;

    /// A spec with `first_kernel`, then `unique` wiring where the widths allow it (as in
    /// the presets: every input is used), else `random`.
    pub(crate) fn spec(
        c: usize,
        k: usize,
        perceive: &[usize],
        hidden: &[usize],
        periodic: bool,
    ) -> Spec {
        let s = *perceive.last().unwrap();
        let mut update = vec![c + c * s * k];
        update.extend_from_slice(hidden);
        update.push(c);
        let wiring = |w: &[usize]| {
            if crate::wiring::check(Wiring::Unique, w[0], w[1]).is_ok() {
                Wiring::Unique
            } else {
                Wiring::Random
            }
        };
        let mut p_conn = vec![Wiring::FirstKernel];
        p_conn.extend(perceive[1..].windows(2).map(wiring));
        Spec {
            channels: c,
            periodic,
            num_steps: 1,
            is_async: false,
            fire_rate: None,
            loss_channels: vec![0],
            perceive: PerceiveSpec {
                n_kernels: k,
                layers: perceive.to_vec(),
                connections: p_conn,
            },
            update: UpdateSpec {
                connections: update.windows(2).map(wiring).collect(),
                layers: update,
            },
            lr: 0.05,
            relax: Default::default(),
        }
    }

    /// A model with random logits. With `pass` = 0 every hard gate is uniform over all
    /// 16; otherwise a gate is a pass-through of A with probability `pass` (like a
    /// trained, sparse circuit), else a genuine two-input gate (so that the circuit does
    /// not fold to constants), and now and then a NOT, a pass-through of B or (rarely) a
    /// constant.
    pub(crate) fn random_model(spec: Spec, seed: u64, pass: f32) -> Model {
        const TWO_INPUT: [usize; 10] = [1, 2, 4, 6, 7, 8, 9, 11, 13, 14];
        let mut m = Model::new(spec, seed).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
        let mut logits: Vec<f32> = (0..m.logits().len()).map(|_| rng.random::<f32>()).collect();
        if pass > 0.0 {
            for g in logits.chunks_mut(N_OPS) {
                let u = rng.random::<f32>();
                let op = if u < pass {
                    gates::PASS_A
                } else if u < pass + 0.002 {
                    [0, 15][rng.random_range(0..2)]
                } else if u < pass + 0.05 {
                    [10, 12, 5][rng.random_range(0..3)]
                } else {
                    TWO_INPUT[rng.random_range(0..TWO_INPUT.len())]
                };
                g[op] = 2.0;
            }
        }
        m.set_logits(&logits).unwrap();
        m
    }

    pub(crate) fn random_bits(n: usize, p: f32, seed: u64) -> Vec<u8> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| (rng.random::<f32>() < p) as u8).collect()
    }

    pub(crate) fn to_f32(v: &[u8]) -> Vec<f32> {
        v.iter().map(|&b| b as f32).collect()
    }

    /// simulate (every step recorded, several block widths) == the float hard rollout.
    fn check_against_float(
        model: &mut Model,
        shape: GridShape,
        steps: usize,
        masked: bool,
        seed: u64,
    ) {
        let c = model.spec().channels;
        let x = random_bits(shape.cells() * c, 0.5, seed);
        let masks = masked.then(|| random_bits(shape.cells() * steps, 0.6, seed + 1));
        let want = model
            .rollout(
                &to_f32(&x),
                shape,
                steps,
                Decoding::Hard,
                masks.as_deref().map(to_f32).as_deref(),
                true,
            )
            .unwrap();
        let circuit = Circuit::from_model(model);
        eprintln!("{shape:?} C={c} masked={masked}: {:?}", circuit.stats());
        for words in [1, 2, 4, 8, 16, 32, 64] {
            let mut opts = SimOptions::new(steps, model.spec().periodic);
            opts.record_every = 1;
            opts.words = words;
            if let Some(m) = &masks {
                opts.masks = Masks::Given(m);
            }
            let got = simulate(&circuit, &x, shape, &opts).unwrap();
            assert_eq!(got.len(), want.len());
            if let Some(i) = got.iter().zip(&want).position(|(&g, &w)| g as f32 != w) {
                let frame = shape.cells() * c;
                panic!(
                    "shape {shape:?} C={c} periodic={} masked={masked} words={words}: first \
                     difference at step {}, flat index {} ({} vs {}); stats {:?}",
                    model.spec().periodic,
                    i / frame,
                    i % frame,
                    got[i],
                    want[i],
                    circuit.stats()
                );
            }
        }
    }

    pub(crate) fn shape(batch: usize, height: usize, width: usize) -> GridShape {
        GridShape {
            batch,
            height,
            width,
        }
    }

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

    #[test]
    fn every_op_on_every_input_pair_matches_the_float_gate() {
        // One gate per op in the update network's last layer would need C = 16; use
        // instead a C = 1 model whose final gate takes each op in turn, on 3x3 boards.
        let spec = spec(1, 1, &[9, 8, 4, 2, 1], &[4], true);
        for op in 0..N_OPS {
            let mut m = random_model(spec.clone(), 3, 0.0);
            let mut logits = m.logits().to_vec();
            let n = logits.len();
            logits[n - N_OPS..].iter_mut().for_each(|v| *v = 0.0);
            logits[n - N_OPS + op] = 5.0;
            m.set_logits(&logits).unwrap();
            check_against_float(&mut m, shape(4, 3, 3), 2, false, op as u64);
        }
    }

    #[test]
    fn matches_float_hard_rollout_on_random_models() {
        let cases: &[(usize, bool, GridShape, usize)] = &[
            (1, true, shape(2, 5, 7), 4),
            (1, false, shape(2, 5, 7), 4),
            (1, true, shape(1, 64, 64), 3),
            (1, false, shape(1, 70, 130), 3),
            (3, true, shape(1, 70, 130), 2),
            (3, false, shape(2, 9, 65), 3),
            (4, true, shape(1, 1, 1), 3),
            (5, false, shape(3, 1, 6), 3),
            (6, true, shape(1, 2, 129), 3),
            (8, false, shape(1, 64, 64), 2),
            (8, true, shape(2, 11, 13), 3),
            (7, true, shape(2, 5, 128), 3),
            (7, false, shape(1, 3, 192), 3),
        ];
        for (i, &(c, periodic, sh, steps)) in cases.iter().enumerate() {
            let sp = spec(c, 2, &[9, 8, 4, 2], &[24, 16], periodic);
            for (j, pass) in [0.0, 0.3, 0.7].into_iter().enumerate() {
                let mut m = random_model(sp.clone(), (10 * i + j) as u64, pass);
                check_against_float(&mut m, sh, steps, false, i as u64);
            }
        }
    }

    #[test]
    fn matches_float_hard_rollout_with_masks() {
        let cases: &[(usize, bool, GridShape)] = &[
            (1, true, shape(2, 5, 7)),
            (1, false, shape(1, 64, 64)),
            (3, true, shape(1, 70, 130)),
            (4, false, shape(2, 6, 6)),
            (8, true, shape(1, 3, 67)),
        ];
        for (i, &(c, periodic, sh)) in cases.iter().enumerate() {
            let sp = spec(c, 3, &[9, 8, 4, 2, 1], &[20, 12], periodic);
            let mut m = random_model(sp, 100 + i as u64, 0.5);
            check_against_float(&mut m, sh, 4, true, 7 + i as u64);
        }
    }

    #[test]
    fn gol_sized_circuit_matches_float() {
        let mut hidden = vec![128; 17];
        hidden.extend([64, 32, 16, 8, 4, 2]);
        let sp = spec(1, 16, &[9, 8, 4, 2, 1], &hidden, true);
        let mut m = random_model(sp, 42, 0.6);
        let active = Circuit::from_model(&m).stats().active_gates;
        assert!(active > 100, "only {active} active gates");
        check_against_float(&mut m, shape(1, 20, 70), 3, false, 5);
    }

    #[test]
    fn results_are_non_trivial() {
        // Guards the comparisons above against circuits that fold to constants.
        let sp = spec(3, 2, &[9, 8, 4, 2], &[24, 16], true);
        let m = random_model(sp, 1, 0.3);
        let circuit = Circuit::from_model(&m);
        assert!(circuit.stats().active_gates > 10, "{:?}", circuit.stats());
        let sh = shape(1, 16, 16);
        let x = random_bits(sh.cells() * 3, 0.5, 1);
        let y = simulate(&circuit, &x, sh, &SimOptions::new(1, true)).unwrap();
        let ones = y.iter().filter(|&&v| v == 1).count();
        assert!(ones > 0 && ones < y.len() && y != x);
    }

    #[test]
    fn eval_cell_matches_the_grid_engine_on_all_512_neighbourhoods() {
        let sp = spec(1, 4, &[9, 8, 4, 2, 1], &[16, 8], false);
        let m = random_model(sp, 9, 0.3);
        let circuit = Circuit::from_model(&m);
        // Board i of 512: the 3x3 neighbourhood with bits of i; zero boundary, so the
        // centre cell sees exactly that patch.
        let x: Vec<u8> = (0..512)
            .flat_map(|i: u32| (0..9).map(move |e| ((i >> e) & 1) as u8))
            .collect();
        let y = simulate(&circuit, &x, shape(512, 3, 3), &SimOptions::new(1, false)).unwrap();
        for i in 0..512 {
            let patch: Vec<bool> = x[i * 9..][..9].iter().map(|&v| v == 1).collect();
            assert_eq!(
                circuit.eval_cell(&patch),
                vec![y[i * 9 + 4] == 1],
                "board {i}"
            );
        }
    }

    #[test]
    fn damage_zeroes_cells_during_its_steps_only() {
        let c = 3;
        let sp = spec(c, 2, &[9, 8, 4, 2], &[24, 16], true);
        let mut m = random_model(sp, 77, 0.6);
        let circuit = Circuit::from_model(&m);
        let sh = shape(2, 12, 70);
        let hw = sh.height * sh.width;
        let x = random_bits(sh.cells() * c, 0.5, 3);
        let dead: Vec<u8> = (0..hw)
            .map(|n| {
                let (r, col) = (n / sh.width, n % sh.width);
                (3..8).contains(&r) && (60..68).contains(&col)
            } as u8)
            .collect();
        let steps = 6;
        let mut opts = SimOptions::new(steps, true);
        opts.damage = Some(&dead);
        opts.damage_steps = 1..4;
        opts.record_every = 1;
        let got = simulate(&circuit, &x, sh, &opts).unwrap();
        // The same thing with the float engine, one step at a time.
        let mut state = to_f32(&x);
        let frame = sh.cells() * c;
        assert_eq!(&got[..frame], &x[..]);
        for t in 0..steps {
            state = m
                .rollout(&state, sh, 1, Decoding::Hard, None, false)
                .unwrap();
            if (1..4).contains(&t) {
                for n in 0..sh.cells() {
                    if dead[n % hw] == 1 {
                        state[n * c..(n + 1) * c].iter_mut().for_each(|v| *v = 0.0);
                    }
                }
            }
            let g = &got[(t + 1) * frame..][..frame];
            assert!(
                g.iter().zip(&state).all(|(&a, &b)| a as f32 == b),
                "step {t}"
            );
        }
        // Damage per board: only board 1 is hit.
        let mut per_board = vec![0u8; hw];
        per_board.extend_from_slice(&dead);
        opts.damage = Some(&per_board);
        opts.damage_steps = 0..steps;
        opts.record_every = 0;
        let got = simulate(&circuit, &x, sh, &opts).unwrap();
        for n in 0..sh.cells() {
            if per_board[n] == 1 {
                assert!(got[n * c..(n + 1) * c].iter().all(|&v| v == 0));
            }
        }
        let plain = simulate(&circuit, &x, sh, &SimOptions::new(steps, true)).unwrap();
        assert_eq!(&got[..hw * c], &plain[..hw * c], "board 0 is untouched");
    }

    #[test]
    fn seeded_masks_are_deterministic_replayable_and_thread_independent() {
        let c = 2;
        let sp = spec(c, 2, &[9, 8, 4, 2], &[16, 8], false);
        let mut m = random_model(sp, 5, 0.5);
        let circuit = Circuit::from_model(&m);
        let sh = shape(2, 33, 100);
        let x = random_bits(sh.cells() * c, 0.5, 8);
        let mut opts = SimOptions::new(5, false);
        opts.masks = Masks::Random {
            fire_rate: 0.6,
            seed: 1234,
        };
        let a = simulate(&circuit, &x, sh, &opts).unwrap();
        for n in [1, 3, 0] {
            // The crate's pool; other tests running meanwhile are thread-independent too.
            threads::set_num_threads(n).unwrap();
            assert_eq!(a, simulate(&circuit, &x, sh, &opts).unwrap(), "{n} threads");
        }
        for words in [1, 4, 16] {
            opts.words = words;
            assert_eq!(
                a,
                simulate(&circuit, &x, sh, &opts).unwrap(),
                "words {words}"
            );
        }
        // The same masks, drawn separately, replayed in the float engine.
        let masks = draw_masks(sh, 5, 0.6, 1234).unwrap();
        let rate = masks.iter().map(|&v| v as f64).sum::<f64>() / masks.len() as f64;
        assert!((rate - 0.6).abs() < 0.01, "fire rate {rate}");
        let want = m
            .rollout(
                &to_f32(&x),
                sh,
                5,
                Decoding::Hard,
                Some(&to_f32(&masks)),
                false,
            )
            .unwrap();
        assert!(a.iter().zip(&want).all(|(&g, &w)| g as f32 == w));
        // Another seed, other masks.
        opts.masks = Masks::Random {
            fire_rate: 0.6,
            seed: 1235,
        };
        assert_ne!(a, simulate(&circuit, &x, sh, &opts).unwrap());
    }

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

    #[test]
    fn frames_and_recording() {
        assert_eq!(frame_steps(5, 0), vec![5]);
        assert_eq!(frame_steps(5, 1), vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(frame_steps(5, 2), vec![0, 2, 4, 5]);
        assert_eq!(frame_steps(6, 3), vec![0, 3, 6]);
        assert_eq!(frame_steps(0, 0), vec![0]);
        for steps in 0..20 {
            for k in 0..7 {
                assert_eq!(frame_steps(steps, k).len(), n_frames(steps, k));
            }
        }
        let sp = spec(2, 1, &[9, 8, 4, 2], &[8], true);
        let m = random_model(sp, 2, 0.5);
        let circuit = Circuit::from_model(&m);
        let sh = shape(1, 7, 9);
        let x = random_bits(sh.cells() * 2, 0.5, 1);
        let mut opts = SimOptions::new(5, true);
        opts.record_every = 1;
        let all = simulate(&circuit, &x, sh, &opts).unwrap();
        opts.record_every = 2;
        let some = simulate(&circuit, &x, sh, &opts).unwrap();
        let f = sh.cells() * 2;
        for (k, t) in [0, 2, 4, 5].into_iter().enumerate() {
            assert_eq!(&some[k * f..][..f], &all[t * f..][..f]);
        }
        opts.steps = 0;
        opts.record_every = 0;
        assert_eq!(simulate(&circuit, &x, sh, &opts).unwrap(), x);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let sp = spec(2, 1, &[9, 8, 4, 2], &[8], true);
        let m = random_model(sp, 2, 0.5);
        let circuit = Circuit::from_model(&m);
        let sh = shape(1, 4, 4);
        let x = vec![0u8; 32];
        let opts = SimOptions::new(2, true);
        assert!(matches!(
            simulate(&circuit, &x[..31], sh, &opts),
            Err(Error::Shape(_))
        ));
        let mut bad = x.clone();
        bad[3] = 2;
        assert!(matches!(
            simulate(&circuit, &bad, sh, &opts),
            Err(Error::Value(_))
        ));
        let mut o = opts.clone();
        o.masks = Masks::Given(&x[..5]);
        assert!(matches!(
            simulate(&circuit, &x, sh, &o),
            Err(Error::Shape(_))
        ));
        o.masks = Masks::Random {
            fire_rate: 1.5,
            seed: 0,
        };
        assert!(matches!(
            simulate(&circuit, &x, sh, &o),
            Err(Error::Value(_))
        ));
        let mut o = opts.clone();
        o.damage = Some(&x[..5]);
        assert!(matches!(
            simulate(&circuit, &x, sh, &o),
            Err(Error::Shape(_))
        ));
        let mut o = opts.clone();
        o.words = 3;
        assert!(matches!(
            simulate(&circuit, &x, sh, &o),
            Err(Error::Value(_))
        ));
        let mut o = opts.clone();
        o.steps = 1 << 40;
        o.record_every = 1;
        assert!(matches!(
            simulate(&circuit, &x, sh, &o),
            Err(Error::Memory(_))
        ));
        assert!(matches!(
            simulate(&circuit, &x, shape(0, 4, 4), &opts),
            Err(Error::Shape(_))
        ));
    }

    #[test]
    fn folding_removes_constants_and_pass_throughs() {
        // A fresh model is all pass-throughs: the circuit is empty and the next state
        // is one patch entry per channel.
        let sp = spec(2, 2, &[9, 8, 4, 2], &[16, 8], true);
        let m = Model::new(sp, 0).unwrap();
        let circuit = Circuit::from_model(&m);
        assert_eq!(circuit.stats().active_gates, 0);
        assert!(circuit.stats().program_gates > 0);
        assert!(circuit.stats().patch_inputs <= 2);
    }
}
