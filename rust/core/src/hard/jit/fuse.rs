//! The netlist's gates as the nodes the code computes; on AVX-512, single-use gates
//! fused into their reader as one `vpternlogq`.

use super::isa::{Isa, TERN_A, TERN_B, TERN_C};
use crate::hard::kernels::Kind;
use crate::hard::netlist::{NetOutput, Netlist};

/// What a gate node computes from its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NodeOp {
    /// One of the four kernels on `ops[0], ops[1]`.
    Gate(Kind),
    /// `vpternlogq` with this immediate over `ops` as `A, B, C` (AVX-512 only); operands
    /// past `n` do not affect the result.
    Tern(u8),
}

/// A gate node of the code: a netlist gate, or (AVX-512) a gate with the single-use
/// gates it reads fused in.
#[derive(Clone, Copy, Debug)]
pub(super) struct Node {
    pub(super) op: NodeOp,
    pub(super) ops: [u32; 3],
    pub(super) n: usize,
}

impl Node {
    pub(super) fn operands(&self) -> &[u32] {
        &self.ops[..self.n]
    }
}

pub(super) fn apply(kind: Kind, x: u8, y: u8) -> u8 {
    match kind {
        Kind::And => x & y,
        Kind::AndNot => x & !y,
        Kind::Or => x | y,
        Kind::Xor => x ^ y,
    }
}

/// The truth table `table` (bit `4a + 2b + c` = the result for operands `a, b, c`)
/// evaluated bitwise on the operand patterns `x`.
fn eval_table(table: u8, x: [u8; 3]) -> u8 {
    (0..8).fold(0u8, |acc, j| {
        let i = ((x[0] >> j) & 1) << 2 | ((x[1] >> j) & 1) << 1 | ((x[2] >> j) & 1);
        acc | (((table >> i) & 1) << j)
    })
}

/// How many gates read each value (inputs, then gates); an output counts twice, so
/// that a stored gate never looks read once.
fn reader_counts(net: &Netlist) -> Vec<u32> {
    let mut readers = vec![0u32; net.inputs.len() + net.gates.len()];
    for g in &net.gates {
        readers[g.a as usize] += 1;
        readers[g.b as usize] += 1;
    }
    for o in &net.outputs {
        if let NetOutput::Node { node, .. } = *o {
            readers[node as usize] += 2; // stored: always computed
        }
    }
    readers
}

/// The netlist's gates as nodes. For AVX-512, a gate that reads a gate used nowhere
/// else (no other gate, no output) absorbs it when the two depend on at most three
/// distinct values, repeatedly: `(a & b) ^ c` becomes one ternary node over `a, b, c`.
/// The absorbed gate is then never computed (nothing reads it any more).
pub(super) fn nodes(net: &Netlist, isa: Isa) -> Vec<Node> {
    let n_in = net.inputs.len();
    let mut out: Vec<Node> = net
        .gates
        .iter()
        .map(|g| Node {
            op: NodeOp::Gate(g.kind),
            ops: [g.a, g.b, 0],
            n: 2,
        })
        .collect();
    if !isa.zmm() {
        return out;
    }
    let readers = reader_counts(net);
    // Each node as (its operands, its table over them).
    let table_of = |node: &Node| match node.op {
        NodeOp::Gate(kind) => apply(kind, TERN_A, TERN_B),
        NodeOp::Tern(imm) => imm,
    };
    for g in 0..net.gates.len() {
        let gate = net.gates[g];
        let fusible = |x: u32| (x as usize) >= n_in && readers[x as usize] == 1;
        let expand = |x: u32, on: bool| -> Vec<u32> {
            if on {
                out[x as usize - n_in].operands().to_vec()
            } else {
                vec![x]
            }
        };
        let choice = [(true, true), (true, false), (false, true)]
            .into_iter()
            .filter(|&(ea, eb)| (!ea || fusible(gate.a)) && (!eb || fusible(gate.b)))
            .map(|(ea, eb)| {
                let mut leaves = expand(gate.a, ea);
                for x in expand(gate.b, eb) {
                    if !leaves.contains(&x) {
                        leaves.push(x);
                    }
                }
                (ea, eb, leaves)
            })
            .find(|(_, _, leaves)| leaves.len() <= 3);
        let Some((ea, eb, leaves)) = choice else {
            continue;
        };
        let pattern = |x: u32| {
            let i = leaves.iter().position(|&l| l == x).expect("a leaf");
            [TERN_A, TERN_B, TERN_C][i]
        };
        let value = |x: u32, expanded: bool| {
            if expanded {
                let node = out[x as usize - n_in];
                let mut xs = [0u8; 3];
                for (k, &o) in node.operands().iter().enumerate() {
                    xs[k] = pattern(o);
                }
                eval_table(table_of(&node), xs)
            } else {
                pattern(x)
            }
        };
        let imm = apply(gate.kind, value(gate.a, ea), value(gate.b, eb));
        let mut ops = [0u32; 3];
        ops[..leaves.len()].copy_from_slice(&leaves);
        out[g] = Node {
            op: NodeOp::Tern(imm),
            ops,
            n: leaves.len(),
        };
    }
    out
}
