//! The pruned hard circuit as a slot-free netlist, and its exporters.
//!
//! [`Netlist::from_circuit`] replays a compiled [`Circuit`]'s schedule (which is
//! sequential: every op reads slots written before it) and names every value once
//! (static single assignment): node `i < inputs.len()` is a patch input, node
//! `inputs.len() + g` is gate `g`. Gates read plain nodes; negations live only on the
//! outputs, exactly as the bit-sliced engine computes them. Exporters work on this view
//! and never see arena slots.
//!
//! Formats: C ([`Netlist::to_c`]: one cell and a whole-grid step, 64 cells per word),
//! Verilog ([`Netlist::to_verilog`]: one cell's combinational update), DigitalJS JSON
//! ([`Netlist::to_digitaljs`]) and Graphviz DOT ([`Netlist::to_dot`]).

use std::fmt::Write;

use crate::bitsliced::{Circuit, Kind, Output};

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

enum Node {
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
    fn node(&self, n: u32) -> Node {
        let n = n as usize;
        match n.checked_sub(self.inputs.len()) {
            None => Node::Input(n),
            Some(g) => Node::Gate(g),
        }
    }

    /// A node as a C or Verilog operand: `{patch}[index]` for inputs, `g{i}` for gates.
    fn operand(&self, n: u32, patch: &str) -> String {
        match self.node(n) {
            Node::Input(i) => format!("{patch}[{}]", self.inputs[i].patch_index()),
            Node::Gate(g) => format!("g{g}"),
        }
    }

    /// A node, negated with `~` when `negated` (C and Verilog).
    fn literal(&self, n: u32, negated: bool, patch: &str) -> String {
        let not = if negated { "~" } else { "" };
        format!("{not}{}", self.operand(n, patch))
    }

    /// A node as a device id: `in{i}` or `g{i}` (DigitalJS, DOT).
    fn device_id(&self, n: u32) -> String {
        match self.node(n) {
            Node::Input(i) => format!("in{i}"),
            Node::Gate(g) => format!("g{g}"),
        }
    }

    /// Gate `gate` as a C/Verilog bitwise expression (both spell NOT `~`).
    fn bitwise_expr(&self, gate: &Gate, patch: &str) -> String {
        let (a, b) = (self.operand(gate.a, patch), self.operand(gate.b, patch));
        match gate.kind {
            Kind::And => format!("{a} & {b}"),
            Kind::AndNot => format!("{a} & ~{b}"),
            Kind::Or => format!("{a} | {b}"),
            Kind::Xor => format!("{a} ^ {b}"),
        }
    }

    fn n_nodes(&self) -> usize {
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

    // ---- C --------------------------------------------------------------------------

    /// A self-contained C99 file: `logicars_cell` (one cell from its patch bytes),
    /// `logicars_step` (a whole `H×W×C` grid of bytes, 64 cells per `uint64_t`, with the
    /// given boundary) and, when compiled with `-DLOGICARS_MAIN`, a `main` that reads
    /// `H W STEPS` and the grid as `0`/`1` characters from stdin and prints the result.
    pub fn to_c(&self, periodic: bool) -> String {
        let c_n = self.channels;
        let mut s = String::new();
        let boundary = if periodic { "periodic" } else { "zero" };
        let _ = write!(
            s,
            "/* A learned DiffLogic CA circuit, exported by logicars.\n\
             * {c_n} channel(s), {} patch inputs, {} gates, {boundary} boundary.\n\
             * Grids are H*W*C bytes of 0/1, cell (r, col) channel ch at (r*W + col)*C + ch.\n\
             * Patch bit (ch, dr, dc) (dr, dc in -1..1) is patch[ch*9 + (dr+1)*3 + (dc+1)]. */\n\
             #include <stddef.h>\n#include <stdint.h>\n#include <stdlib.h>\n\n\
             #define LOGICARS_CHANNELS {c_n}\n#define LOGICARS_PERIODIC {}\n\n",
            self.inputs.len(),
            self.gates.len(),
            periodic as u8
        );
        // The circuit on 64 cells at once: in[i] is patch bit i of every cell.
        s.push_str(
            "/* Next state of 64 cells: in[ch*9 + e] holds patch bit e of channel ch of\n \
             * every cell, one cell per bit; out[ch] receives channel ch. */\n\
             static void logicars_eval64(const uint64_t *in, uint64_t *out) {\n",
        );
        if self.inputs.is_empty() {
            s.push_str("    (void)in;\n");
        }
        for (g, gate) in self.gates.iter().enumerate() {
            let _ = writeln!(
                s,
                "    const uint64_t g{g} = {};",
                self.bitwise_expr(gate, "in")
            );
        }
        for (ch, o) in self.outputs.iter().enumerate() {
            let expr = match *o {
                NetOutput::Const(v) => (if v { "~(uint64_t)0" } else { "0" }).to_string(),
                NetOutput::Node { node, negated } => self.literal(node, negated, "in"),
            };
            let _ = writeln!(s, "    out[{ch}] = {expr};");
        }
        s.push_str("}\n\n");
        s.push_str(C_DRIVER);
        s
    }

    // ---- Verilog ----------------------------------------------------------------------

    /// A combinational module `logicars_cell(patch, next)`: `patch[c·9 + e]` in, the
    /// cell's next state `next[c]` out.
    pub fn to_verilog(&self) -> String {
        let c_n = self.channels;
        let mut s = String::new();
        let _ = write!(
            s,
            "// A learned DiffLogic CA circuit, exported by logicars: one cell's update.\n\
             // patch[ch*9 + (dr+1)*3 + (dc+1)] is channel ch of the neighbour at (dr, dc);\n\
             // next[ch] is the cell's next state. {} gates.\n\
             module logicars_cell (\n    input  wire [{}:0] patch,\n    output wire [{}:0] next\n);\n",
            self.gates.len(),
            9 * c_n - 1,
            c_n - 1
        );
        for (g, gate) in self.gates.iter().enumerate() {
            let _ = writeln!(s, "    wire g{g} = {};", self.bitwise_expr(gate, "patch"));
        }
        for (ch, o) in self.outputs.iter().enumerate() {
            let expr = match *o {
                NetOutput::Const(v) => format!("1'b{}", v as u8),
                NetOutput::Node { node, negated } => self.literal(node, negated, "patch"),
            };
            let _ = writeln!(s, "    assign next[{ch}] = {expr};");
        }
        s.push_str("endmodule\n");
        s
    }

    // ---- DigitalJS ----------------------------------------------------------------------

    /// DigitalJS circuit JSON: one `Input` device per patch input, `And`/`Or`/`Xor`
    /// devices (`and_not` as `And` after a `Not`), `Not` for negated outputs, `Constant`
    /// for constant outputs and one `Output` per channel.
    pub fn to_digitaljs(&self) -> String {
        let mut devices: Vec<String> = Vec::new();
        let mut connectors: Vec<String> = Vec::new();
        let connect = |conns: &mut Vec<String>, from: &str, to: &str, port: &str| {
            conns.push(format!(
                "{{\"from\": {{\"id\": \"{from}\", \"port\": \"out\"}}, \
                 \"to\": {{\"id\": \"{to}\", \"port\": \"{port}\"}}}}"
            ));
        };
        for (i, inp) in self.inputs.iter().enumerate() {
            let label = input_label(inp);
            devices.push(format!(
                "\"in{i}\": {{\"type\": \"Input\", \"label\": \"{label}\", \"net\": \"{label}\", \
                 \"bits\": 1}}"
            ));
        }
        // One shared inverter per node that some and_not gate negates.
        let mut inverted = vec![false; self.n_nodes()];
        for (g, gate) in self.gates.iter().enumerate() {
            let (a, b) = (self.device_id(gate.a), self.device_id(gate.b));
            let id = format!("g{g}");
            let kind = match gate.kind {
                Kind::And | Kind::AndNot => "And",
                Kind::Or => "Or",
                Kind::Xor => "Xor",
            };
            devices.push(format!("\"{id}\": {{\"type\": \"{kind}\", \"bits\": 1}}"));
            connect(&mut connectors, &a, &id, "in1");
            if gate.kind == Kind::AndNot {
                let not_id = format!("not_{b}");
                if !inverted[gate.b as usize] {
                    inverted[gate.b as usize] = true;
                    devices.push(format!("\"{not_id}\": {{\"type\": \"Not\", \"bits\": 1}}"));
                    connect(&mut connectors, &b, &not_id, "in");
                }
                connect(&mut connectors, &not_id, &id, "in2");
            } else {
                connect(&mut connectors, &b, &id, "in2");
            }
        }
        for (ch, o) in self.outputs.iter().enumerate() {
            let out_id = format!("out{ch}");
            let label = format!("next_c{ch}");
            devices.push(format!(
                "\"{out_id}\": {{\"type\": \"Output\", \"label\": \"{label}\", \"net\": \"{label}\", \
                 \"bits\": 1}}"
            ));
            match *o {
                NetOutput::Const(v) => {
                    let id = format!("const{ch}");
                    devices.push(format!(
                        "\"{id}\": {{\"type\": \"Constant\", \"constant\": \"{}\"}}",
                        v as u8
                    ));
                    connect(&mut connectors, &id, &out_id, "in");
                }
                NetOutput::Node {
                    node,
                    negated: false,
                } => connect(&mut connectors, &self.device_id(node), &out_id, "in"),
                NetOutput::Node {
                    node,
                    negated: true,
                } => {
                    let id = format!("not_out{ch}");
                    devices.push(format!("\"{id}\": {{\"type\": \"Not\", \"bits\": 1}}"));
                    connect(&mut connectors, &self.device_id(node), &id, "in");
                    connect(&mut connectors, &id, &out_id, "in");
                }
            }
        }
        format!(
            "{{\n\"devices\": {{\n  {}\n}},\n\"connectors\": [\n  {}\n],\n\"subcircuits\": {{}}\n}}\n",
            devices.join(",\n  "),
            connectors.join(",\n  ")
        )
    }

    // ---- DOT ----------------------------------------------------------------------------

    /// A Graphviz digraph: inputs, gates and outputs as nodes, wires as edges (a dashed
    /// edge into an `and_not` gate is its negated input; `¬` marks negated outputs).
    pub fn to_dot(&self) -> String {
        let mut s = String::from(
            "digraph logicars {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=10];\n",
        );
        for (i, inp) in self.inputs.iter().enumerate() {
            let _ = writeln!(s, "  in{i} [shape=box, label=\"{}\"];", input_label(inp));
        }
        for (g, gate) in self.gates.iter().enumerate() {
            let _ = writeln!(s, "  g{g} [shape=ellipse, label=\"{}\"];", gate.kind.name());
            let _ = writeln!(s, "  {} -> g{g};", self.device_id(gate.a));
            let style = if gate.kind == Kind::AndNot {
                " [style=dashed]"
            } else {
                ""
            };
            let _ = writeln!(s, "  {} -> g{g}{style};", self.device_id(gate.b));
        }
        for (ch, o) in self.outputs.iter().enumerate() {
            let _ = writeln!(s, "  out{ch} [shape=doublecircle, label=\"next c{ch}\"];");
            match *o {
                NetOutput::Const(v) => {
                    let _ = writeln!(s, "  const{ch} [shape=plaintext, label=\"{}\"];", v as u8);
                    let _ = writeln!(s, "  const{ch} -> out{ch};");
                }
                NetOutput::Node { node, negated } => {
                    let label = if negated { " [label=\"¬\"]" } else { "" };
                    let _ = writeln!(s, "  {} -> out{ch}{label};", self.device_id(node));
                }
            }
        }
        s.push_str("}\n");
        s
    }
}

/// `c{channel}_{dr}_{dc}` with `m` for minus, e.g. `c0_m1_p0` is channel 0, the row
/// above, same column.
fn input_label(p: &PatchInput) -> String {
    let off = |d: i8| match d {
        -1 => "m1",
        0 => "p0",
        _ => "p1",
    };
    format!("c{}_{}_{}", p.channel, off(p.dr), off(p.dc))
}

/// The grid stepper and optional `main` of the C export (independent of the circuit).
const C_DRIVER: &str = r#"/* Next state of one cell: patch[ch*9 + e] (0/1 bytes), next[ch] (0/1 bytes). */
void logicars_cell(const uint8_t *patch, uint8_t *next) {
    uint64_t in[9 * LOGICARS_CHANNELS], out[LOGICARS_CHANNELS];
    for (int i = 0; i < 9 * LOGICARS_CHANNELS; i++) in[i] = patch[i] & 1;
    logicars_eval64(in, out);
    for (int ch = 0; ch < LOGICARS_CHANNELS; ch++) next[ch] = (uint8_t)(out[ch] & 1);
}

/* Channel ch of cell (r, col), or 0 outside a zero-boundary grid. */
static uint64_t logicars_at(const uint8_t *grid, long h, long w, long r, long col, int ch) {
    if (LOGICARS_PERIODIC) {
        r = ((r % h) + h) % h;
        col = ((col % w) + w) % w;
    } else if (r < 0 || r >= h || col < 0 || col >= w) {
        return 0;
    }
    return grid[(r * w + col) * LOGICARS_CHANNELS + ch] & 1;
}

/* One synchronous step of an h x w grid: src and dst are h*w*C bytes (distinct).
 * Cells are taken 64 at a time in row-major order, one per bit of a word. */
void logicars_step(const uint8_t *src, uint8_t *dst, long h, long w) {
    const long cells = h * w;
    for (long base = 0; base < cells; base += 64) {
        const int n = cells - base < 64 ? (int)(cells - base) : 64;
        uint64_t in[9 * LOGICARS_CHANNELS] = {0}, out[LOGICARS_CHANNELS];
        for (int k = 0; k < n; k++) {
            const long r = (base + k) / w, col = (base + k) % w;
            for (int ch = 0; ch < LOGICARS_CHANNELS; ch++)
                for (int e = 0; e < 9; e++)
                    in[ch * 9 + e] |= logicars_at(src, h, w, r + e / 3 - 1, col + e % 3 - 1, ch) << k;
        }
        logicars_eval64(in, out);
        for (int k = 0; k < n; k++)
            for (int ch = 0; ch < LOGICARS_CHANNELS; ch++)
                dst[(base + k) * LOGICARS_CHANNELS + ch] = (uint8_t)((out[ch] >> k) & 1);
    }
}

#ifdef LOGICARS_MAIN
#include <stdio.h>
#include <string.h>

/* stdin: "H W STEPS" then H*W*C characters 0/1 (whitespace ignored), in grid order.
 * stdout: the grid after STEPS steps, one line of W*C characters per row. */
int main(void) {
    long h, w, steps;
    if (scanf("%ld %ld %ld", &h, &w, &steps) != 3 || h < 1 || w < 1 || steps < 0) {
        fprintf(stderr, "expected: H W STEPS, then the grid\n");
        return 2;
    }
    const size_t n = (size_t)h * (size_t)w * LOGICARS_CHANNELS;
    uint8_t *a = malloc(n), *b = malloc(n);
    if (!a || !b) return 1;
    for (size_t i = 0; i < n; i++) {
        int ch;
        do ch = getchar(); while (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t');
        if (ch != '0' && ch != '1') {
            fprintf(stderr, "grid: expected %zu characters 0/1\n", n);
            return 2;
        }
        a[i] = (uint8_t)(ch - '0');
    }
    for (long t = 0; t < steps; t++) {
        logicars_step(a, b, h, w);
        uint8_t *tmp = a; a = b; b = tmp;
    }
    for (long r = 0; r < h; r++) {
        for (long i = 0; i < w * LOGICARS_CHANNELS; i++) putchar('0' + a[r * w * LOGICARS_CHANNELS + i]);
        putchar('\n');
    }
    free(a);
    free(b);
    return 0;
}
#endif
"#;

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
               "fire_rate": null, "loss_channels": [0], "lr": 0.05,
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
            let circuit = Circuit::from_model(&random_model(channels, seed));
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
        let net = Netlist::from_circuit(&Circuit::from_model(&random_model(2, 9)));
        let n_in = net.inputs.len() as u32;
        for (g, gate) in net.gates.iter().enumerate() {
            assert!(gate.a < n_in + g as u32 && gate.b < n_in + g as u32);
        }
    }

    #[test]
    fn exports_name_every_gate() {
        let net = Netlist::from_circuit(&Circuit::from_model(&random_model(2, 5)));
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
