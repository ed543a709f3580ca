//! Exporters of a [`Netlist`]: C (one cell and a whole-grid step, 64 cells per word),
//! Verilog (one cell's combinational update), DigitalJS JSON and Graphviz DOT.

use std::fmt::Write;

use super::kernels::Kind;
use super::netlist::{Gate, NetOutput, Netlist, Node, PatchInput};

impl Netlist {
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
