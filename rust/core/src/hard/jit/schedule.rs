//! The order the code computes values in: depth-first from the outputs.

use super::fuse::Node;
use crate::hard::netlist::{NetOutput, Netlist};

/// The circuit as a list of steps: compute a value (a shifted input or a gate), or
/// store an output channel.
#[derive(Clone, Copy)]
pub(super) enum Step {
    Value(u32),
    Output(usize),
}

/// Which operand of a gate a depth-first order evaluates first.
#[derive(Clone, Copy, Debug)]
pub(super) enum Order {
    /// The one that needs more registers (Sethi–Ullman), else `a`.
    Needier,
    A,
    B,
}

/// Depth-first evaluation order from the outputs; each shifted input is computed just
/// before its first use.
pub(super) fn schedule(net: &Netlist, nodes: &[Node], shifted: &[bool], order: Order) -> Vec<Step> {
    let n_in = net.inputs.len();
    let n = n_in + nodes.len();
    // Registers a node's evaluation needs (Sethi–Ullman, counting shared nodes again).
    let mut need = vec![0u32; n];
    for (i, s) in shifted.iter().enumerate() {
        need[i] = *s as u32;
    }
    for (g, node) in nodes.iter().enumerate() {
        let mut needs: Vec<u32> = node.operands().iter().map(|&x| need[x as usize]).collect();
        needs.sort_unstable_by(|a, b| b.cmp(a));
        need[n_in + g] = needs
            .iter()
            .enumerate()
            .map(|(i, &k)| k + i as u32)
            .max()
            .unwrap_or(0);
    }
    let mut steps = Vec::with_capacity(n + net.outputs.len());
    let mut done = vec![false; n];
    for (c, out) in net.outputs.iter().enumerate() {
        if let NetOutput::Node { node, .. } = *out {
            // Iterative post-order: (node, children pushed).
            let mut stack = vec![(node, false)];
            while let Some((v, expanded)) = stack.pop() {
                let vi = v as usize;
                if done[vi] {
                    continue;
                }
                if vi < n_in {
                    done[vi] = true;
                    if shifted[vi] {
                        steps.push(Step::Value(v));
                    }
                } else if expanded {
                    done[vi] = true;
                    steps.push(Step::Value(v));
                } else {
                    stack.push((v, true));
                    let mut first: Vec<u32> = nodes[vi - n_in].operands().to_vec();
                    match order {
                        // Stable: ties keep the operand order.
                        Order::Needier => {
                            first.sort_by(|&a, &b| need[b as usize].cmp(&need[a as usize]))
                        }
                        Order::A => {}
                        Order::B => first.reverse(),
                    }
                    // Popped first = evaluated first.
                    for &x in first.iter().rev() {
                        stack.push((x, false));
                    }
                }
            }
        }
        steps.push(Step::Output(c));
    }
    steps
}
