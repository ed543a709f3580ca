//! The scheduler and the AVX-512 fusion on small netlists (the kernels themselves are
//! tested against the slot engine in `hard::tests`).

use super::fuse::{nodes, NodeOp};
use super::isa::{Isa, TERN_A, TERN_B, TERN_C};
use super::schedule::{schedule, Order, Step};
use crate::hard::kernels::Kind;
use crate::hard::netlist::{Gate, NetOutput, Netlist, PatchInput};

#[test]
fn schedule_computes_every_value_after_its_operands() {
    // in0 (centre), in1 (west); g0 = in0 & in1, g1 = g0 ^ in1, out = g1, out = !g0.
    let net = Netlist {
        channels: 2,
        inputs: vec![
            PatchInput {
                channel: 0,
                dr: 0,
                dc: 0,
            },
            PatchInput {
                channel: 0,
                dr: 0,
                dc: -1,
            },
        ],
        gates: vec![
            Gate {
                kind: Kind::And,
                a: 0,
                b: 1,
            },
            Gate {
                kind: Kind::Xor,
                a: 2,
                b: 1,
            },
        ],
        outputs: vec![
            NetOutput::Node {
                node: 3,
                negated: false,
            },
            NetOutput::Node {
                node: 2,
                negated: true,
            },
        ],
    };
    let steps = schedule(
        &net,
        &nodes(&net, Isa::Avx2),
        &[false, true],
        Order::Needier,
    );
    let order: Vec<i64> = steps
        .iter()
        .map(|s| match *s {
            Step::Value(v) => v as i64,
            Step::Output(c) => -(c as i64) - 1,
        })
        .collect();
    assert_eq!(order, vec![1, 2, 3, -1, -2]);
}

#[test]
fn a_single_use_gate_is_fused_into_its_reader_on_avx512_only() {
    let centre = |channel| PatchInput {
        channel,
        dr: 0,
        dc: 0,
    };
    // g0 = in0 & in1 (read once), g1 = g0 ^ in2 (the output).
    let net = Netlist {
        channels: 3,
        inputs: vec![centre(0), centre(1), centre(2)],
        gates: vec![
            Gate {
                kind: Kind::And,
                a: 0,
                b: 1,
            },
            Gate {
                kind: Kind::Xor,
                a: 3,
                b: 2,
            },
        ],
        outputs: vec![NetOutput::Node {
            node: 4,
            negated: false,
        }],
    };
    let plain = nodes(&net, Isa::Avx2);
    assert_eq!(plain[1].op, NodeOp::Gate(Kind::Xor));
    assert_eq!(plain[1].operands(), &[3, 2]);
    let fused = nodes(&net, Isa::Avx512 { vbmi2: false });
    assert_eq!(fused[1].operands(), &[0, 1, 2]);
    assert_eq!(fused[1].op, NodeOp::Tern((TERN_A & TERN_B) ^ TERN_C));
    // Only the output's node is scheduled: g0 is never computed.
    let steps = schedule(&net, &fused, &[false; 3], Order::Needier);
    assert_eq!(steps.len(), 2);
}
