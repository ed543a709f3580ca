//! The pruned hard circuit as a slot-free netlist, and its exporters.
//!
//! [`Netlist::from_circuit`] replays a compiled [`Circuit`]'s schedule (which is
//! sequential: every op reads slots written before it) and names every value once
//! (static single assignment): node `i < inputs.len()` is a patch input, node
//! `inputs.len() + g` is gate `g`. Gates read plain nodes; negations live only on the
//! outputs, exactly as the bit-sliced engine computes them. Exporters work on this view
//! and never see arena slots.
//!
//! Formats (in [`super::export`]): C ([`Netlist::to_c`]: one cell and a whole-grid step, 64 cells per word),
//! Verilog ([`Netlist::to_verilog`]: one cell's combinational update), DigitalJS JSON
//! ([`Netlist::to_digitaljs`]) and Graphviz DOT ([`Netlist::to_dot`]).

use super::circuit::{Circuit, Output};
use super::kernels::Kind;

/// One bit of a cell's 3×3×C neighbourhood: channel `channel` of the cell at row offset
/// `dr` and column offset `dc` (each -1, 0 or 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchInput {
    pub channel: usize,
    pub dr: i8,
    pub dc: i8,
}

impl PatchInput {
    /// Index of this bit in a patch laid out `patch[c·9 + (dr+1)·3 + (dc+1)]`.
    pub fn patch_index(&self) -> usize {
        self.channel * 9 + ((self.dr + 1) * 3 + (self.dc + 1)) as usize
    }
}

pub(super) enum Node {
    Input(usize),
    Gate(usize),
}

/// `kind(a, b)` on two nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub kind: Kind,
    pub a: u32,
    pub b: u32,
}

/// Where one channel of the next state comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetOutput {
    Const(bool),
    Node { node: u32, negated: bool },
}

/// A hard circuit as inputs, gates in topological order and one output per channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Netlist {
    pub channels: usize,
    /// The patch bits the circuit reads (the others cannot change the result).
    pub inputs: Vec<PatchInput>,
    pub gates: Vec<Gate>,
    pub outputs: Vec<NetOutput>,
}

impl Netlist {
    /// The netlist of a compiled circuit.
    pub fn from_circuit(circuit: &Circuit) -> Netlist {
        // node_in[slot]: the node the slot holds at this point of the schedule.
        let mut node_in = vec![u32::MAX; circuit.n_slots];
        let inputs: Vec<PatchInput> = circuit
            .fills
            .iter()
            .enumerate()
            .map(|(i, f)| {
                node_in[f.slot as usize] = i as u32;
                PatchInput {
                    channel: f.channel,
                    dr: f.dr as i8 - 1,
                    dc: f.dc as i8 - 1,
                }
            })
            .collect();
        let n_inputs = inputs.len() as u32;
        let gates = circuit
            .scheduled_ops()
            .enumerate()
            .map(|(g, (kind, op))| {
                let gate = Gate {
                    kind,
                    a: node_in[op.x as usize],
                    b: node_in[op.y as usize],
                };
                node_in[op.out as usize] = n_inputs + g as u32;
                gate
            })
            .collect();
        let outputs = circuit
            .outputs
            .iter()
            .map(|o| match *o {
                Output::Const(v) => NetOutput::Const(v),
                Output::Slot { slot, neg } => NetOutput::Node {
                    node: node_in[slot as usize],
                    negated: neg,
                },
            })
            .collect();
        Netlist {
            channels: circuit.channels(),
            inputs,
            gates,
            outputs,
        }
    }

    /// The input or gate behind node `n`.
    pub(super) fn node(&self, n: u32) -> Node {
        let n = n as usize;
        match n.checked_sub(self.inputs.len()) {
            None => Node::Input(n),
            Some(g) => Node::Gate(g),
        }
    }

    pub(super) fn n_nodes(&self) -> usize {
        self.inputs.len() + self.gates.len()
    }

    /// Evaluates one cell from its patch `patch[c·9 + e]` (entry 4 = the cell).
    pub fn eval_cell(&self, patch: &[bool]) -> Vec<bool> {
        assert_eq!(
            patch.len(),
            9 * self.channels,
            "eval_cell: patch of 9*C bits"
        );
        let mut v: Vec<bool> = self.inputs.iter().map(|i| patch[i.patch_index()]).collect();
        v.reserve(self.gates.len());
        for g in &self.gates {
            let (a, b) = (v[g.a as usize], v[g.b as usize]);
            v.push(match g.kind {
                Kind::And => a & b,
                Kind::AndNot => a & !b,
                Kind::Or => a | b,
                Kind::Xor => a ^ b,
            });
        }
        self.outputs
            .iter()
            .map(|o| match *o {
                NetOutput::Const(c) => c,
                NetOutput::Node { node, negated } => v[node as usize] != negated,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::spec::Spec;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn random_model(channels: usize, seed: u64) -> Model {
        let hidden = 2 * channels + 6;
        let json = format!(
            r#"{{"channels": {channels}, "num_steps": 2, "periodic": true, "async": false,
               "fire_rate": null, "loss_channels": [0],
               "perceive": {{"n_kernels": 2, "layers": [9, 8, 4, 2],
                            "connections": ["first_kernel", "unique", "unique"]}},
               "update": {{"layers": [{}, {hidden}, {channels}],
                          "connections": ["random", "random"]}}}}"#,
            channels * 5
        );
        let spec = Spec::from_json(&json).unwrap();
        let mut model = Model::new(spec, seed).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let logits: Vec<f32> = (0..model.logits().len())
            .map(|_| rng.random_range(-2.0f32..2.0))
            .collect();
        model.set_logits(&logits).unwrap();
        model
    }

    #[test]
    fn netlist_matches_the_compiled_circuit() {
        for (channels, seed) in [(1, 1), (1, 2), (2, 3), (3, 4)] {
            let circuit = random_model(channels, seed).compile_circuit();
            let net = Netlist::from_circuit(&circuit);
            assert!(!net.gates.is_empty());
            let s = circuit.stats();
            assert!(s.program_gates >= s.folded_gates && s.folded_gates >= s.merged_gates);
            assert!(s.merged_gates >= s.active_gates);
            assert_eq!(net.gates.len(), circuit.stats().active_gates);
            assert_eq!(net.inputs.len(), circuit.stats().patch_inputs);
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for _ in 0..300 {
                let patch: Vec<bool> = (0..9 * channels).map(|_| rng.random()).collect();
                assert_eq!(net.eval_cell(&patch), circuit.eval_cell(&patch));
            }
        }
    }

    #[test]
    fn gates_read_only_earlier_nodes() {
        let net = Netlist::from_circuit(&random_model(2, 9).compile_circuit());
        let n_in = net.inputs.len() as u32;
        for (g, gate) in net.gates.iter().enumerate() {
            assert!(gate.a < n_in + g as u32 && gate.b < n_in + g as u32);
        }
    }

    #[test]
    fn exports_name_every_gate() {
        let net = Netlist::from_circuit(&random_model(2, 5).compile_circuit());
        let last = format!("g{}", net.gates.len() - 1);
        for text in [
            net.to_c(true),
            net.to_verilog(),
            net.to_digitaljs(),
            net.to_dot(),
        ] {
            assert!(text.contains(&last), "missing {last}");
        }
        assert!(net.to_verilog().contains("module logicars_cell"));
        assert!(net.to_dot().starts_with("digraph"));
    }
}
