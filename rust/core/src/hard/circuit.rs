//! A learned circuit compiled to bitwise operations on arena slots ([`Circuit`]); see
//! [`super::compile`] for how a float program becomes one.

use super::kernels::{self, Kind, Op, OpSpan};
use crate::simd::SimdLevel;

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
    pub(super) channels: usize,
    pub(crate) n_slots: usize,
    pub(crate) fills: Vec<Fill>,
    pub(crate) ops: Vec<Op>,
    pub(crate) spans: Vec<OpSpan>,
    pub(crate) outputs: Vec<Output>,
    pub(super) stats: CircuitStats,
}

impl Circuit {
    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn stats(&self) -> &CircuitStats {
        &self.stats
    }

    /// The ops in schedule order with their kernels (for [`super::netlist`]).
    pub(crate) fn scheduled_ops(&self) -> impl Iterator<Item = (Kind, &Op)> {
        self.spans
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
        self.eval::<1>(&mut arena, SimdLevel::Portable);
        self.outputs
            .iter()
            .map(|o| match *o {
                Output::Const(v) => v,
                Output::Slot { slot, neg } => (arena[slot as usize][0] & 1 == 1) != neg,
            })
            .collect()
    }

    /// Runs the gates on one block of `L` words per slot, the patch words filled in.
    #[inline(always)]
    pub(crate) fn eval<const L: usize>(&self, arena: &mut [[u64; L]], level: SimdLevel) {
        kernels::eval((&self.ops, &self.spans, self.n_slots), arena, level);
    }
}
