//! A pruned hard circuit compiled to x86-64 AVX2 or AVX-512 machine code at run time.
//!
//! The slot engine (`super::slots`) keeps every gate's result in memory: two loads
//! and a store per gate and vector, which bound it well below what the CPU's bitwise
//! units can do. Here the circuit becomes one straight-line loop body over 256-bit
//! `ymm` registers (256 cells of one grid row per iteration):
//!
//! - **Neighbours in registers.** The grid is stored as bit planes with a ghost word at
//!   each row end (`super::grid`). The centre of a 3×3 patch is a plain load (used as a
//!   memory operand where it can be); a west or east neighbour is the same words shifted
//!   by one bit, with the bit that crosses a 64-bit lane taken from the load one word
//!   over: `(v << 1) | (v[-1 word] >> 63)`.
//! - **Order.** Gates run in depth-first order from the outputs, the operand that needs
//!   more registers first (Sethi–Ullman), so that few values are live at once.
//! - **Registers.** A linear scan over that order with 15 allocatable registers (ymm15 is
//!   a scratch register); when none is free, the value used furthest in the future is
//!   evicted (Belady), stored once to a per-thread spill area and read back as a memory
//!   operand. Centre inputs are never spilled: their home is the grid.
//! - **Outputs.** Negation, the async blend `old & !mask | new & mask` and damage are
//!   folded into the store of each channel, in variants compiled for what a step needs.
//!
//! **AVX-512** ([`Isa::Avx512`]): the same design over 512-bit `zmm` registers (512 cells
//! per iteration, 31 allocatable registers, zmm31 scratch), with `vpternlogq`, which
//! computes any function of three registers: a gate whose only reader is another gate is
//! fused into it where the two depend on at most three values (one instruction for two
//! gates), and negation, the async blend and damage fold into the output's ternary ops.
//! With AVX-512 VBMI2 a shifted input is one `vpshldq`/`vpshrdq` of two loads.
//!
//! The code is encoded with `iced-x86` and placed in its own anonymous mapping, written
//! while read-write and then made read-execute (never both). It is only ever generated
//! for an instruction set the CPU reports and whose register state the OS keeps
//! ([`Isa::available`]; `is_x86_feature_detected!` checks XCR0 for both).

use std::io;

use iced_x86::{Code, Encoder, IcedError, Instruction, MemoryOperand, Register};

use super::kernels::Kind;
use super::netlist::{NetOutput, Netlist};

/// The instruction set a kernel is compiled for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Isa {
    /// 256-bit `ymm` registers, ymm0..ymm14 for values, ymm15 scratch.
    Avx2,
    /// 512-bit `zmm` registers (AVX-512F), zmm0..zmm30 for values, zmm31 scratch;
    /// `vbmi2`: shifted inputs with `vpshldq`/`vpshrdq`.
    Avx512 { vbmi2: bool },
}

impl Isa {
    /// The most words per vector of any instruction set.
    pub(crate) const MAX_LANES: usize = 8;

    /// Whether this CPU has the instructions (and the OS keeps their registers).
    pub(crate) fn available(self) -> bool {
        match self {
            Isa::Avx2 => is_x86_feature_detected!("avx2"),
            Isa::Avx512 { vbmi2 } => {
                is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("avx512f")
                    && (!vbmi2 || is_x86_feature_detected!("avx512vbmi2"))
            }
        }
    }

    /// The best AVX-512 variant of this CPU.
    pub(crate) fn avx512() -> Isa {
        Isa::Avx512 {
            vbmi2: is_x86_feature_detected!("avx512vbmi2"),
        }
    }

    /// 64-bit words per vector register.
    pub(crate) fn lanes(self) -> usize {
        match self {
            Isa::Avx2 => 4,
            Isa::Avx512 { .. } => 8,
        }
    }

    fn vbytes(self) -> i64 {
        8 * self.lanes() as i64
    }

    fn zmm(self) -> bool {
        matches!(self, Isa::Avx512 { .. })
    }

    /// The AVX-512 encoding of an instruction or its AVX2 twin.
    fn pick(self, zmm: Code, ymm: Code) -> Code {
        if self.zmm() {
            zmm
        } else {
            ymm
        }
    }

    /// Registers that hold values; the next one is scratch.
    fn n_regs(self) -> usize {
        if self.zmm() {
            31
        } else {
            15
        }
    }

    fn reg(self, r: u8) -> Register {
        if self.zmm() {
            Register::ZMM0 + r as u32
        } else {
            Register::YMM0 + r as u32
        }
    }

    fn scratch(self) -> Register {
        self.reg(self.n_regs() as u8)
    }

    fn load(self) -> Code {
        self.pick(
            Code::EVEX_Vmovdqu64_zmm_k1z_zmmm512,
            Code::VEX_Vmovdqu_ymm_ymmm256,
        )
    }

    fn store(self) -> Code {
        self.pick(
            Code::EVEX_Vmovdqu64_zmmm512_k1z_zmm,
            Code::VEX_Vmovdqu_ymmm256_ymm,
        )
    }

    fn copy(self) -> Code {
        self.pick(
            Code::EVEX_Vmovdqa64_zmm_k1z_zmmm512,
            Code::VEX_Vmovdqa_ymm_ymmm256,
        )
    }

    fn and(self) -> Code {
        self.pick(
            Code::EVEX_Vpandq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpand_ymm_ymm_ymmm256,
        )
    }

    /// `!first & second`.
    fn andn(self) -> Code {
        self.pick(
            Code::EVEX_Vpandnq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpandn_ymm_ymm_ymmm256,
        )
    }

    fn or(self) -> Code {
        self.pick(
            Code::EVEX_Vporq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpor_ymm_ymm_ymmm256,
        )
    }

    fn xor(self) -> Code {
        self.pick(
            Code::EVEX_Vpxorq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpxor_ymm_ymm_ymmm256,
        )
    }

    fn shift_left(self) -> Code {
        self.pick(
            Code::EVEX_Vpsllq_zmm_k1z_zmmm512b64_imm8,
            Code::VEX_Vpsllq_ymm_ymm_imm8,
        )
    }

    fn shift_right(self) -> Code {
        self.pick(
            Code::EVEX_Vpsrlq_zmm_k1z_zmmm512b64_imm8,
            Code::VEX_Vpsrlq_ymm_ymm_imm8,
        )
    }
}

/// `vpternlogq`'s operand patterns: bit `i` of the immediate is the result for
/// `A = i >> 2 & 1, B = i >> 1 & 1, C = i & 1`.
const TERN_A: u8 = 0xF0;
const TERN_B: u8 = 0xCC;
const TERN_C: u8 = 0xAA;
const TERNLOG: Code = Code::EVEX_Vpternlogq_zmm_k1z_zmm_zmmm512b64_imm8;

/// What one call of a kernel processes: `rows` consecutive grid rows of `vectors`
/// vectors each. Every row pointer points at data word 0 of channel 0 of the first row
/// (channel `c` is `stride` words further per channel, with a ghost word before word
/// 0; the next row `C·stride` words further); `mask` and `damage` at the first row's
/// first mask word (`nw` words per row; read only by kernels compiled for them).
#[repr(C)]
pub(crate) struct RowArgs {
    pub(crate) up: *const u64,
    pub(crate) mid: *const u64,
    pub(crate) down: *const u64,
    pub(crate) out: *mut u64,
    pub(crate) mask: *const u64,
    pub(crate) damage: *const u64,
    /// `Kernel::spill_words` words, 32-byte aligned.
    pub(crate) spill: *mut u64,
    pub(crate) vectors: usize,
    pub(crate) rows: usize,
}

// Where the prologue finds each field (the struct is `repr(C)`, 8 bytes per field).
const ARG_REGS: [Register; 8] = [
    Register::R8,  // up
    Register::R9,  // mid
    Register::R10, // down
    Register::R11, // out
    Register::RSI, // mask
    Register::RDX, // damage
    Register::RCX, // spill
    Register::RAX, // vectors, then the end offset in bytes
];
const ROW_BASE: [Register; 3] = [Register::R8, Register::R9, Register::R10];
const OUT_BASE: Register = Register::R11;
const MASK_BASE: Register = Register::RSI;
const DAMAGE_BASE: Register = Register::RDX;
const SPILL_BASE: Register = Register::RCX;
const END: Register = Register::RAX;
/// The byte offset of the current vector in its row.
const INDEX: Register = Register::RDI;
/// Rows left (callee-saved: pushed and popped).
const ROWS: Register = Register::RBX;

/// A compiled kernel: machine code in a read-execute mapping.
pub(crate) struct Kernel {
    _code: memmap2::Mmap,
    entry: unsafe extern "sysv64" fn(*const RowArgs),
    spill_words: usize,
}

impl Kernel {
    /// Compiles `net` for `isa` and rows of `stride` words per channel and `nw` mask
    /// words; `masked` and `damaged` select the output variant. Fails only if the OS
    /// refuses executable memory.
    pub(crate) fn compile(
        net: &Netlist,
        isa: Isa,
        stride: usize,
        nw: usize,
        masked: bool,
        damaged: bool,
    ) -> io::Result<Kernel> {
        let (code, spill_slots) =
            generate(net, isa, stride, nw, masked, damaged).map_err(io::Error::other)?;
        let mut map = memmap2::MmapMut::map_anon(code.len())?;
        map.copy_from_slice(&code);
        let map = map.make_exec()?;
        // SAFETY: the mapping holds a complete function with this signature (`generate`):
        // it reads and writes only through the pointers of its `RowArgs`.
        let entry = unsafe {
            std::mem::transmute::<*const u8, unsafe extern "sysv64" fn(*const RowArgs)>(
                map.as_ptr(),
            )
        };
        Ok(Kernel {
            _code: map,
            entry,
            spill_words: spill_slots * isa.lanes(),
        })
    }

    /// Words of spill area a call needs.
    pub(crate) fn spill_words(&self) -> usize {
        self.spill_words
    }

    /// Runs the kernel on one row.
    ///
    /// # Safety
    /// The CPU supports the kernel's `Isa`; `args.vectors >= 1` and `args.rows >= 1`; every row
    /// pointer is valid for reads of `rows` rows of `C` channels of `stride` words from
    /// one word before it, `out` for such writes, `mask`/`damage` (where compiled in)
    /// for reads of `nw·(rows - 1) + lanes·vectors` words, `spill` for `spill_words`
    /// words; `out` overlaps no input.
    pub(crate) unsafe fn run(&self, args: &RowArgs) {
        debug_assert!(args.vectors >= 1 && args.rows >= 1);
        // SAFETY: the caller's contract.
        unsafe { (self.entry)(args) }
    }
}

/// A patch input: its memory operand and whether it needs a shift.
#[derive(Clone, Copy)]
struct InputAt {
    base: Register,
    /// Byte offset of the centre word of the input's channel.
    disp: i64,
    /// -1: the west neighbour (`v << 1`), 0: the cell itself, 1: the east neighbour.
    dc: i8,
}

/// What a gate node computes from its operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeOp {
    /// One of the four kernels on `ops[0], ops[1]`.
    Gate(Kind),
    /// `vpternlogq` with this immediate over `ops` as `A, B, C` (AVX-512 only); operands
    /// past `n` do not affect the result.
    Tern(u8),
}

/// A gate node of the code: a netlist gate, or (AVX-512) a gate with the single-use
/// gates it reads fused in.
#[derive(Clone, Copy, Debug)]
struct Node {
    op: NodeOp,
    ops: [u32; 3],
    n: usize,
}

impl Node {
    fn operands(&self) -> &[u32] {
        &self.ops[..self.n]
    }
}

fn apply(kind: Kind, x: u8, y: u8) -> u8 {
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

/// The netlist's gates as nodes. For AVX-512, a gate that reads a gate used nowhere
/// else (no other gate, no output) absorbs it when the two depend on at most three
/// distinct values, repeatedly: `(a & b) ^ c` becomes one ternary node over `a, b, c`.
/// The absorbed gate is then never computed (nothing reads it any more).
fn nodes(net: &Netlist, isa: Isa) -> Vec<Node> {
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
    let mut readers = vec![0u32; n_in + net.gates.len()];
    for g in &net.gates {
        readers[g.a as usize] += 1;
        readers[g.b as usize] += 1;
    }
    for o in &net.outputs {
        if let NetOutput::Node { node, .. } = *o {
            readers[node as usize] += 2; // stored: always computed
        }
    }
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

/// The circuit as a list of steps: compute a value (a shifted input or a gate), or
/// store an output channel.
#[derive(Clone, Copy)]
enum Step {
    Value(u32),
    Output(usize),
}

/// Which operand of a gate a depth-first order evaluates first.
#[derive(Clone, Copy, Debug)]
enum Order {
    /// The one that needs more registers (Sethi–Ullman), else `a`.
    Needier,
    A,
    B,
}

/// Depth-first evaluation order from the outputs; each shifted input is computed just
/// before its first use.
fn schedule(net: &Netlist, nodes: &[Node], shifted: &[bool], order: Order) -> Vec<Step> {
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

/// Where a value is while the code is generated.
#[derive(Clone, Copy, Default)]
struct Place {
    reg: Option<u8>,
    /// Spill slot, once stored.
    slot: Option<u32>,
}

struct Gen<'a> {
    isa: Isa,
    nodes: &'a [Node],
    outputs: &'a [NetOutput],
    inputs: Vec<InputAt>,
    stride_bytes: i64,
    code: Vec<Instruction>,
    place: Vec<Place>,
    /// Value in each register.
    holder: Vec<Option<u32>>,
    /// Steps at which each value is read, ascending, and how many have passed.
    uses: Vec<Vec<u32>>,
    passed: Vec<usize>,
    free_slots: Vec<u32>,
    n_slots: u32,
}

impl Gen<'_> {
    fn emit(&mut self, ins: Result<Instruction, IcedError>) {
        self.code.push(ins.expect("valid instruction operands"));
    }

    fn vreg(&self, r: u8) -> Register {
        self.isa.reg(r)
    }

    fn is_input(&self, v: u32) -> bool {
        (v as usize) < self.inputs.len()
    }

    fn is_centre(&self, v: u32) -> bool {
        self.is_input(v) && self.inputs[v as usize].dc == 0
    }

    /// The value's memory operand: its grid word for a centre input, else its spill slot.
    fn mem(&self, v: u32) -> MemoryOperand {
        if self.is_centre(v) {
            let at = self.inputs[v as usize];
            return MemoryOperand::with_base_index_scale_displ_size(at.base, INDEX, 1, at.disp, 1);
        }
        let slot = self.place[v as usize]
            .slot
            .expect("spilled value has a slot");
        spill_mem(slot, self.isa)
    }

    fn in_memory(&self, v: u32) -> bool {
        self.is_centre(v) || self.place[v as usize].slot.is_some()
    }

    fn next_use(&self, v: u32) -> u32 {
        let u = &self.uses[v as usize];
        u.get(self.passed[v as usize]).copied().unwrap_or(u32::MAX)
    }

    /// Whether step `pos` is the value's last use.
    fn dies_at(&self, v: u32, pos: u32) -> bool {
        self.uses[v as usize].last() == Some(&pos)
    }

    /// A free register, evicting the value used furthest ahead (never one in `pinned`).
    fn alloc(&mut self, pinned: &[u8]) -> u8 {
        let n_regs = self.isa.n_regs() as u8;
        if let Some(r) = (0..n_regs).find(|&r| self.holder[r as usize].is_none()) {
            return r;
        }
        let r = (0..n_regs)
            .filter(|r| !pinned.contains(r))
            .max_by_key(|&r| self.next_use(self.holder[r as usize].unwrap()))
            .expect("a register to evict");
        let v = self.holder[r as usize].take().unwrap();
        if !self.in_memory(v) {
            let slot = self.free_slots.pop().unwrap_or_else(|| {
                self.n_slots += 1;
                self.n_slots - 1
            });
            self.place[v as usize].slot = Some(slot);
            let (store, reg) = (self.isa.store(), self.vreg(r));
            self.emit(Instruction::with2(store, spill_mem(slot, self.isa), reg));
        }
        self.place[v as usize].reg = None;
        r
    }

    fn bind(&mut self, v: u32, r: u8) {
        self.holder[r as usize] = Some(v);
        self.place[v as usize].reg = Some(r);
    }

    /// Loads `v` into a fresh register that it keeps.
    fn load(&mut self, v: u32, pinned: &[u8]) -> u8 {
        let r = self.alloc(pinned);
        let m = self.mem(v);
        let (load, reg) = (self.isa.load(), self.vreg(r));
        self.emit(Instruction::with2(load, reg, m));
        self.bind(v, r);
        r
    }

    /// After step `pos`: values read for the last time give up their register and slot.
    fn retire(&mut self, v: u32, pos: u32) {
        self.passed[v as usize] += 1;
        if self.dies_at(v, pos) {
            let p = std::mem::take(&mut self.place[v as usize]);
            if let Some(r) = p.reg {
                if self.holder[r as usize] == Some(v) {
                    self.holder[r as usize] = None;
                }
            }
            if let Some(s) = p.slot {
                self.free_slots.push(s);
            }
        }
    }

    /// A shifted input: `(v << 1) | (v[-1] >> 63)` (west) or `(v >> 1) | (v[+1] << 63)`.
    fn shifted_input(&mut self, v: u32) {
        let at = self.inputs[v as usize];
        let r = self.alloc(&[]);
        let word =
            |d: i64| MemoryOperand::with_base_index_scale_displ_size(at.base, INDEX, 1, d, 1);
        let west = at.dc < 0;
        let carry_from = if west { at.disp - 8 } else { at.disp + 8 };
        let (isa, d, s) = (self.isa, self.vreg(r), self.isa.scratch());
        if let Isa::Avx512 { vbmi2: true } = isa {
            // The high (west) or low (east) half of each lane pair shifted by one.
            let code = if west {
                Code::EVEX_Vpshldq_zmm_k1z_zmm_zmmm512b64_imm8
            } else {
                Code::EVEX_Vpshrdq_zmm_k1z_zmm_zmmm512b64_imm8
            };
            self.emit(Instruction::with2(isa.load(), d, word(at.disp)));
            self.emit(Instruction::with4(code, d, d, word(carry_from), 1u32));
            self.bind(v, r);
            return;
        }
        let (near, far) = if west {
            (isa.shift_left(), isa.shift_right())
        } else {
            (isa.shift_right(), isa.shift_left())
        };
        if isa.zmm() {
            // EVEX shifts take a memory source.
            self.emit(Instruction::with3(near, d, word(at.disp), 1u32));
            self.emit(Instruction::with3(far, s, word(carry_from), 63u32));
        } else {
            self.emit(Instruction::with2(isa.load(), d, word(at.disp)));
            self.emit(Instruction::with3(near, d, d, 1u32));
            self.emit(Instruction::with2(isa.load(), s, word(carry_from)));
            self.emit(Instruction::with3(far, s, s, 63u32));
        }
        self.emit(Instruction::with3(isa.or(), d, d, s));
        self.bind(v, r);
    }

    fn gate(&mut self, g: usize, pos: u32) {
        let node = self.nodes[g];
        match node.op {
            NodeOp::Gate(kind) => self.gate2(g, kind, pos),
            NodeOp::Tern(imm) => self.ternary(g, imm, pos),
        }
    }

    /// A two-input gate as one non-destructive three-operand instruction.
    fn gate2(&mut self, g: usize, kind: Kind, pos: u32) {
        let n_in = self.inputs.len() as u32;
        let node = self.nodes[g];
        let (a, b) = (node.ops[0], node.ops[1]);
        let v = n_in + g as u32;
        let isa = self.isa;
        // `first op second` with `first` in a register: vpandn negates its first source.
        let (code, first, second) = match kind {
            Kind::And => (isa.and(), a, b),
            Kind::Or => (isa.or(), a, b),
            Kind::Xor => (isa.xor(), a, b),
            Kind::AndNot => (isa.andn(), b, a),
        };
        let commutative = kind != Kind::AndNot;
        let reg = |s: &Self, x: u32| s.place[x as usize].reg;
        let (first, second) =
            if commutative && reg(self, first).is_none() && reg(self, second).is_some() {
                (second, first)
            } else {
                (first, second)
            };
        let pinned: Vec<u8> = [first, second]
            .iter()
            .filter_map(|&x| reg(self, x))
            .collect();
        let dst;
        if let Some(r1) = reg(self, first) {
            dst = if self.dies_at(first, pos) {
                r1
            } else if let Some(r2) = reg(self, second).filter(|_| self.dies_at(second, pos)) {
                r2
            } else {
                self.alloc(&pinned)
            };
            let src2 = match reg(self, second) {
                Some(r2) => Op::Reg(r2),
                None => Op::Mem(self.mem(second)),
            };
            self.op3(code, dst, r1, src2);
        } else if !self.dies_at(first, pos) {
            // Read again later: keep it in a register.
            let r1 = self.load(first, &pinned);
            let mut pinned = pinned.clone();
            pinned.push(r1);
            dst = match reg(self, second).filter(|_| self.dies_at(second, pos)) {
                Some(r2) => r2,
                None => self.alloc(&pinned),
            };
            let src2 = match reg(self, second) {
                Some(r2) => Op::Reg(r2),
                None => Op::Mem(self.mem(second)),
            };
            self.op3(code, dst, r1, src2);
        } else {
            // Read only here: load it straight into the destination.
            dst = match reg(self, second).filter(|_| self.dies_at(second, pos)) {
                Some(r2) if !commutative => self.alloc(&[r2]),
                Some(r2) => r2,
                None => self.alloc(&pinned),
            };
            let m = self.mem(first);
            if commutative && reg(self, second) == Some(dst) {
                self.op3(code, dst, dst, Op::Mem(m));
            } else {
                let (load, d) = (isa.load(), self.vreg(dst));
                self.emit(Instruction::with2(load, d, m));
                let src2 = match reg(self, second) {
                    Some(r2) => Op::Reg(r2),
                    None => Op::Mem(self.mem(second)),
                };
                self.op3(code, dst, dst, src2);
            }
        }
        // The operands' registers are released first, so that `dst` may be one of them.
        self.retire(a, pos);
        self.retire(b, pos);
        self.finish(v, dst);
    }

    /// Binds the new value `v` to `dst`, whatever `dst` held before.
    fn finish(&mut self, v: u32, dst: u8) {
        if let Some(old) = self.holder[dst as usize] {
            self.place[old as usize].reg = None;
        }
        self.bind(v, dst);
    }

    /// A ternary node: `vpternlogq dst, B, C, imm`, where `dst` holds `A` on entry.
    /// At most one operand stays in memory (the `C` operand, or loaded into `dst`).
    fn ternary(&mut self, g: usize, table: u8, pos: u32) {
        let n_in = self.inputs.len() as u32;
        let node = self.nodes[g];
        let v = n_in + g as u32;
        let ops = node.operands().to_vec();
        let reg = |s: &Self, x: u32| s.place[x as usize].reg;
        let mut pinned: Vec<u8> = ops.iter().filter_map(|&x| reg(self, x)).collect();
        let mut in_mem = None;
        for &x in &ops {
            if reg(self, x).is_none() {
                if in_mem.is_none() {
                    in_mem = Some(x);
                } else {
                    let r = self.load(x, &pinned);
                    pinned.push(r);
                }
            }
        }
        let in_regs: Vec<u32> = ops.iter().copied().filter(|&x| Some(x) != in_mem).collect();
        // A: an operand whose register is free after this step, else a copy.
        let (dst, a) = if let Some(&a) = in_regs.iter().find(|&&x| self.dies_at(x, pos)) {
            (reg(self, a).unwrap(), a)
        } else {
            let dst = self.alloc(&pinned);
            let d = self.vreg(dst);
            match in_mem {
                Some(m) => {
                    let (load, mem) = (self.isa.load(), self.mem(m));
                    self.emit(Instruction::with2(load, d, mem));
                    in_mem = None;
                    (dst, m)
                }
                None => {
                    let (copy, src) = (self.isa.copy(), self.vreg(reg(self, in_regs[0]).unwrap()));
                    self.emit(Instruction::with2(copy, d, src));
                    (dst, in_regs[0])
                }
            }
        };
        let rest: Vec<u32> = in_regs.iter().copied().filter(|&x| x != a).collect();
        // B a register (A's if none is left), C memory, a register or B again.
        let b = rest.first().copied().unwrap_or(a);
        let c = in_mem.or(rest.get(1).copied()).unwrap_or(b);
        let position = |x: u32| ops.iter().position(|&o| o == x).expect("an operand");
        let (pa, pb, pc) = (position(a), position(b), position(c));
        let imm = (0..8u8).fold(0u8, |acc, i| {
            let mut bits = [0u8; 3];
            bits[pc] = i & 1;
            bits[pb] = (i >> 1) & 1;
            bits[pa] = (i >> 2) & 1;
            let j = bits[0] << 2 | bits[1] << 1 | bits[2];
            acc | (((table >> j) & 1) << i)
        });
        let d = self.vreg(dst);
        let rb = self.vreg(if b == a { dst } else { reg(self, b).unwrap() });
        let ins = if Some(c) == in_mem {
            Instruction::with4(TERNLOG, d, rb, self.mem(c), imm as u32)
        } else {
            let rc = if c == a { dst } else { reg(self, c).unwrap() };
            Instruction::with4(TERNLOG, d, rb, self.vreg(rc), imm as u32)
        };
        self.emit(ins);
        for &x in &ops {
            self.retire(x, pos);
        }
        self.finish(v, dst);
    }

    fn op3(&mut self, code: Code, dst: u8, src1: u8, src2: Op) {
        let (d, s1) = (self.vreg(dst), self.vreg(src1));
        let ins = match src2 {
            Op::Reg(r) => Instruction::with3(code, d, s1, self.vreg(r)),
            Op::Mem(m) => Instruction::with3(code, d, s1, m),
        };
        self.emit(ins);
    }

    /// Channel `c` of the next state: the output (negated), blended with the old state
    /// under the mask, damaged cells cleared, stored.
    fn output(&mut self, c: usize, pos: u32, masked: bool, damaged: bool) {
        let isa = self.isa;
        let s = isa.scratch();
        let chan = c as i64 * self.stride_bytes;
        let (r, negate) = match self.outputs[c] {
            NetOutput::Const(value) => {
                let r = self.alloc(&[]);
                let d = self.vreg(r);
                let ins = match (isa.zmm(), value) {
                    (true, true) => Instruction::with4(TERNLOG, d, d, d, 0xFFu32),
                    (false, true) => {
                        Instruction::with3(Code::VEX_Vpcmpeqd_ymm_ymm_ymmm256, d, d, d)
                    }
                    (_, false) => Instruction::with3(isa.xor(), d, d, d),
                };
                self.emit(ins);
                (r, false)
            }
            NetOutput::Node { node, negated } => {
                let held = self.place[node as usize].reg;
                let r = match held {
                    Some(r) if self.dies_at(node, pos) => r,
                    _ => {
                        let pinned: Vec<u8> = held.into_iter().collect();
                        let r = self.alloc(&pinned);
                        let d = self.vreg(r);
                        let ins = match held {
                            Some(h) => Instruction::with2(isa.copy(), d, self.vreg(h)),
                            None => Instruction::with2(isa.load(), d, self.mem(node)),
                        };
                        self.emit(ins);
                        r
                    }
                };
                self.retire(node, pos);
                if let Some(old) = self.holder[r as usize] {
                    self.place[old as usize].reg = None;
                }
                (r, negated)
            }
        };
        self.holder[r as usize] = None; // a temporary from here on
        let d = self.vreg(r);
        let mask = MemoryOperand::with_base_index_scale_displ_size(MASK_BASE, INDEX, 1, 0, 1);
        let old = MemoryOperand::with_base_index_scale_displ_size(ROW_BASE[1], INDEX, 1, chan, 1);
        let dead = MemoryOperand::with_base_index_scale_displ_size(DAMAGE_BASE, INDEX, 1, 0, 1);
        if isa.zmm() {
            // A = the output, B = the mask (scratch), C = the old state or the damage;
            // negation folds into the first ternary op.
            let mut negate = negate;
            if masked {
                let blend = if negate {
                    (!TERN_A & TERN_B) | (TERN_C & !TERN_B)
                } else {
                    (TERN_A & TERN_B) | (TERN_C & !TERN_B)
                };
                negate = false;
                self.emit(Instruction::with2(isa.load(), s, mask));
                self.emit(Instruction::with4(TERNLOG, d, s, old, blend as u32));
            }
            if damaged {
                let a = if negate { !TERN_A } else { TERN_A };
                negate = false;
                self.emit(Instruction::with4(
                    TERNLOG,
                    d,
                    d,
                    dead,
                    (a & !TERN_C) as u32,
                ));
            }
            if negate {
                self.emit(Instruction::with4(TERNLOG, d, d, d, !TERN_A as u32));
            }
        } else {
            if negate {
                self.emit(Instruction::with3(
                    Code::VEX_Vpcmpeqd_ymm_ymm_ymmm256,
                    s,
                    s,
                    s,
                ));
                self.emit(Instruction::with3(isa.xor(), d, d, s));
            }
            if masked {
                self.emit(Instruction::with2(isa.load(), s, mask));
                self.emit(Instruction::with3(isa.and(), d, d, s));
                self.emit(Instruction::with3(isa.andn(), s, s, old));
                self.emit(Instruction::with3(isa.or(), d, d, s));
            }
            if damaged {
                self.emit(Instruction::with2(isa.load(), s, dead));
                self.emit(Instruction::with3(isa.andn(), d, s, d));
            }
        }
        let out = MemoryOperand::with_base_index_scale_displ_size(OUT_BASE, INDEX, 1, chan, 1);
        self.emit(Instruction::with2(isa.store(), out, d));
    }
}

#[derive(Clone, Copy)]
enum Op {
    Reg(u8),
    Mem(MemoryOperand),
}

fn spill_mem(slot: u32, isa: Isa) -> MemoryOperand {
    MemoryOperand::with_base_displ_size(SPILL_BASE, slot as i64 * isa.vbytes(), 1)
}

/// The loop body for one evaluation order: its instructions and spill slots.
#[allow(clippy::too_many_arguments)]
fn loop_body(
    net: &Netlist,
    nodes: &[Node],
    isa: Isa,
    inputs: &[InputAt],
    stride_bytes: i64,
    steps: &[Step],
    masked: bool,
    damaged: bool,
) -> (Vec<Instruction>, usize) {
    let n = inputs.len() + nodes.len();
    let mut uses = vec![Vec::new(); n];
    for (pos, step) in steps.iter().enumerate() {
        match *step {
            Step::Value(v) if (v as usize) >= inputs.len() => {
                for &x in nodes[v as usize - inputs.len()].operands() {
                    uses[x as usize].push(pos as u32);
                }
            }
            Step::Output(c) => {
                if let NetOutput::Node { node, .. } = net.outputs[c] {
                    uses[node as usize].push(pos as u32);
                }
            }
            Step::Value(_) => {}
        }
    }
    let mut gen = Gen {
        isa,
        nodes,
        outputs: &net.outputs,
        inputs: inputs.to_vec(),
        stride_bytes,
        code: Vec::new(),
        place: vec![Place::default(); n],
        holder: vec![None; isa.n_regs()],
        uses,
        passed: vec![0; n],
        free_slots: Vec::new(),
        n_slots: 0,
    };
    for (pos, step) in steps.iter().enumerate() {
        match *step {
            Step::Value(v) if gen.is_input(v) => gen.shifted_input(v),
            Step::Value(v) => gen.gate(v as usize - gen.inputs.len(), pos as u32),
            Step::Output(c) => gen.output(c, pos as u32, masked, damaged),
        }
    }
    (gen.code, gen.n_slots as usize)
}

/// The kernel's machine code and its spill slots.
fn generate(
    net: &Netlist,
    isa: Isa,
    stride: usize,
    nw: usize,
    masked: bool,
    damaged: bool,
) -> Result<(Vec<u8>, usize), IcedError> {
    let stride_bytes = (stride * 8) as i64;
    let inputs: Vec<InputAt> = net
        .inputs
        .iter()
        .map(|p| InputAt {
            base: ROW_BASE[(p.dr + 1) as usize],
            disp: p.channel as i64 * stride_bytes,
            dc: p.dc,
        })
        .collect();
    let shifted: Vec<bool> = inputs.iter().map(|i| i.dc != 0).collect();
    let nodes = nodes(net, isa);
    // Of a few depth-first orders, the one whose code is shortest (fewest spills).
    let (body, n_slots) = [Order::Needier, Order::A, Order::B]
        .into_iter()
        .map(|order| {
            let steps = schedule(net, &nodes, &shifted, order);
            loop_body(
                net,
                &nodes,
                isa,
                &inputs,
                stride_bytes,
                &steps,
                masked,
                damaged,
            )
        })
        .min_by_key(|(body, slots)| (body.len(), *slots))
        .expect("three orders");

    // Prologue: arguments into registers, the end offset of a row.
    let mut head = vec![Instruction::with1(Code::Push_r64, ROWS)?];
    for (i, &r) in ARG_REGS.iter().enumerate() {
        let field = MemoryOperand::with_base_displ_size(Register::RDI, 8 * i as i64, 1);
        head.push(Instruction::with2(Code::Mov_r64_rm64, r, field)?);
    }
    let rows_field =
        MemoryOperand::with_base_displ_size(Register::RDI, 8 * ARG_REGS.len() as i64, 1);
    head.push(Instruction::with2(Code::Mov_r64_rm64, ROWS, rows_field)?);
    head.push(Instruction::with2(
        Code::Shl_rm64_imm8,
        END,
        isa.vbytes().trailing_zeros(),
    )?);
    let mut enc = Encoder::new(64);
    let mut ip = 0u64;
    for ins in &head {
        ip += enc.encode(ins, ip)? as u64;
    }
    // Per row: the index at 0, the vectors, then every pointer on to the next row.
    let row_start = ip;
    ip += enc.encode(
        &Instruction::with2(Code::Xor_r32_rm32, Register::EDI, Register::EDI)?,
        ip,
    )? as u64;
    let vector_start = ip;
    for ins in &body {
        ip += enc.encode(ins, ip)? as u64;
    }
    let row_bytes = (net.channels * stride * 8) as i32;
    let mask_bytes = (nw * 8) as i32;
    let mut tail = vec![
        Instruction::with2(Code::Add_rm64_imm8, INDEX, isa.vbytes() as i32)?,
        Instruction::with2(Code::Cmp_r64_rm64, INDEX, END)?,
        Instruction::with_branch(Code::Jb_rel32_64, vector_start)?,
    ];
    for (r, step) in [
        (ROW_BASE[0], row_bytes),
        (ROW_BASE[1], row_bytes),
        (ROW_BASE[2], row_bytes),
        (OUT_BASE, row_bytes),
        (MASK_BASE, mask_bytes),
        (DAMAGE_BASE, mask_bytes),
    ] {
        tail.push(Instruction::with2(Code::Add_rm64_imm32, r, step)?);
    }
    tail.extend([
        Instruction::with1(Code::Dec_rm64, ROWS)?,
        Instruction::with_branch(Code::Jne_rel32_64, row_start)?,
        Instruction::with1(Code::Pop_r64, ROWS)?,
        Instruction::with(Code::VEX_Vzeroupper),
        Instruction::with(Code::Retnq),
    ]);
    for ins in &tail {
        ip += enc.encode(ins, ip)? as u64;
    }
    Ok((enc.take_buffer(), n_slots))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hard::netlist::{Gate, PatchInput};

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
}
