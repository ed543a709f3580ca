//! A pruned hard circuit compiled to x86-64 AVX2 machine code at run time.
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
//! The code is encoded with `iced-x86` and placed in its own anonymous mapping, written
//! while read-write and then made read-execute (never both). It is only ever generated
//! where the CPU reports AVX2 and the OS keeps its state ([`super::jit_available`]).

use std::io;

use iced_x86::{Code, Encoder, IcedError, Instruction, MemoryOperand, Register};

use super::kernels::Kind;
use super::netlist::{NetOutput, Netlist};

/// 64-bit words per vector register.
pub(crate) const LANES: usize = 4;
/// Bytes per vector register.
const VBYTES: i64 = 32;
/// Registers ymm0..ymm14 hold values; ymm15 is scratch.
const N_REGS: usize = 15;
const SCRATCH: u8 = 15;

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
    /// Compiles `net` for rows of `stride` words per channel and `nw` mask words;
    /// `masked` and `damaged` select the output variant. Fails only if the OS refuses
    /// executable memory.
    pub(crate) fn compile(
        net: &Netlist,
        stride: usize,
        nw: usize,
        masked: bool,
        damaged: bool,
    ) -> io::Result<Kernel> {
        let (code, spill_slots) =
            generate(net, stride, nw, masked, damaged).map_err(io::Error::other)?;
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
            spill_words: spill_slots * LANES,
        })
    }

    /// Words of spill area a call needs.
    pub(crate) fn spill_words(&self) -> usize {
        self.spill_words
    }

    /// Runs the kernel on one row.
    ///
    /// # Safety
    /// The CPU supports AVX2; `args.vectors >= 1` and `args.rows >= 1`; every row
    /// pointer is valid for reads of `rows` rows of `C` channels of `stride` words from
    /// one word before it, `out` for such writes, `mask`/`damage` (where compiled in)
    /// for reads of `nw·(rows - 1) + LANES·vectors` words, `spill` for `spill_words`
    /// words; `out` overlaps no input.
    pub(crate) unsafe fn run(&self, args: &RowArgs) {
        debug_assert!(args.vectors >= 1 && args.rows >= 1);
        // SAFETY: the caller's contract.
        unsafe { (self.entry)(args) }
    }
}

fn ymm(r: u8) -> Register {
    Register::YMM0 + r as u32
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
fn schedule(net: &Netlist, shifted: &[bool], order: Order) -> Vec<Step> {
    let n_in = net.inputs.len();
    let n = n_in + net.gates.len();
    // Registers a node's evaluation needs (Sethi–Ullman, counting shared nodes again).
    let mut need = vec![0u32; n];
    for (i, s) in shifted.iter().enumerate() {
        need[i] = *s as u32;
    }
    for (g, gate) in net.gates.iter().enumerate() {
        let (a, b) = (need[gate.a as usize], need[gate.b as usize]);
        need[n_in + g] = if a == b { a + 1 } else { a.max(b) };
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
                    let gate = net.gates[vi - n_in];
                    stack.push((v, true));
                    // Popped first = evaluated first: the needier operand.
                    let (a, b) = (gate.a, gate.b);
                    let a_first = match order {
                        Order::Needier => need[a as usize] >= need[b as usize],
                        Order::A => true,
                        Order::B => false,
                    };
                    if a_first {
                        stack.push((b, false));
                        stack.push((a, false));
                    } else {
                        stack.push((a, false));
                        stack.push((b, false));
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
    net: &'a Netlist,
    inputs: Vec<InputAt>,
    stride_bytes: i64,
    code: Vec<Instruction>,
    place: Vec<Place>,
    /// Value in each register.
    holder: [Option<u32>; N_REGS],
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
        spill_mem(slot)
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
        if let Some(r) = (0..N_REGS as u8).find(|&r| self.holder[r as usize].is_none()) {
            return r;
        }
        let r = (0..N_REGS as u8)
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
            self.emit(Instruction::with2(
                Code::VEX_Vmovdqu_ymmm256_ymm,
                spill_mem(slot),
                ymm(r),
            ));
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
        self.emit(Instruction::with2(Code::VEX_Vmovdqu_ymm_ymmm256, ymm(r), m));
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
        let (near, far, carry_from) = if at.dc < 0 {
            (
                Code::VEX_Vpsllq_ymm_ymm_imm8,
                Code::VEX_Vpsrlq_ymm_ymm_imm8,
                at.disp - 8,
            )
        } else {
            (
                Code::VEX_Vpsrlq_ymm_ymm_imm8,
                Code::VEX_Vpsllq_ymm_ymm_imm8,
                at.disp + 8,
            )
        };
        let s = ymm(SCRATCH);
        self.emit(Instruction::with2(
            Code::VEX_Vmovdqu_ymm_ymmm256,
            ymm(r),
            word(at.disp),
        ));
        self.emit(Instruction::with3(near, ymm(r), ymm(r), 1u32));
        self.emit(Instruction::with2(
            Code::VEX_Vmovdqu_ymm_ymmm256,
            s,
            word(carry_from),
        ));
        self.emit(Instruction::with3(far, s, s, 63u32));
        self.emit(Instruction::with3(
            Code::VEX_Vpor_ymm_ymm_ymmm256,
            ymm(r),
            ymm(r),
            s,
        ));
        self.bind(v, r);
    }

    fn gate(&mut self, g: usize, pos: u32) {
        let n_in = self.inputs.len() as u32;
        let gate = self.net.gates[g];
        let v = n_in + g as u32;
        // `first op second` with `first` in a register: vpandn negates its first source.
        let (code, first, second) = match gate.kind {
            Kind::And => (Code::VEX_Vpand_ymm_ymm_ymmm256, gate.a, gate.b),
            Kind::Or => (Code::VEX_Vpor_ymm_ymm_ymmm256, gate.a, gate.b),
            Kind::Xor => (Code::VEX_Vpxor_ymm_ymm_ymmm256, gate.a, gate.b),
            Kind::AndNot => (Code::VEX_Vpandn_ymm_ymm_ymmm256, gate.b, gate.a),
        };
        let commutative = gate.kind != Kind::AndNot;
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
                self.emit(Instruction::with2(
                    Code::VEX_Vmovdqu_ymm_ymmm256,
                    ymm(dst),
                    m,
                ));
                let src2 = match reg(self, second) {
                    Some(r2) => Op::Reg(r2),
                    None => Op::Mem(self.mem(second)),
                };
                self.op3(code, dst, dst, src2);
            }
        }
        // The operands' registers are released first, so that `dst` may be one of them.
        self.retire(gate.a, pos);
        self.retire(gate.b, pos);
        if let Some(old) = self.holder[dst as usize] {
            self.place[old as usize].reg = None;
        }
        self.bind(v, dst);
    }

    fn op3(&mut self, code: Code, dst: u8, src1: u8, src2: Op) {
        let ins = match src2 {
            Op::Reg(r) => Instruction::with3(code, ymm(dst), ymm(src1), ymm(r)),
            Op::Mem(m) => Instruction::with3(code, ymm(dst), ymm(src1), m),
        };
        self.emit(ins);
    }

    /// Channel `c` of the next state: the output (negated), blended with the old state
    /// under the mask, damaged cells cleared, stored.
    fn output(&mut self, c: usize, pos: u32, masked: bool, damaged: bool) {
        let s = ymm(SCRATCH);
        let chan = c as i64 * self.stride_bytes;
        let (r, negate) = match self.net.outputs[c] {
            NetOutput::Const(value) => {
                let r = self.alloc(&[]);
                let code = if value {
                    Code::VEX_Vpcmpeqd_ymm_ymm_ymmm256
                } else {
                    Code::VEX_Vpxor_ymm_ymm_ymmm256
                };
                self.emit(Instruction::with3(code, ymm(r), ymm(r), ymm(r)));
                (r, false)
            }
            NetOutput::Node { node, negated } => {
                let held = self.place[node as usize].reg;
                let r = match held {
                    Some(r) if self.dies_at(node, pos) => r,
                    _ => {
                        let pinned: Vec<u8> = held.into_iter().collect();
                        let r = self.alloc(&pinned);
                        let ins = match held {
                            Some(h) => {
                                Instruction::with2(Code::VEX_Vmovdqa_ymm_ymmm256, ymm(r), ymm(h))
                            }
                            None => Instruction::with2(
                                Code::VEX_Vmovdqu_ymm_ymmm256,
                                ymm(r),
                                self.mem(node),
                            ),
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
        let d = ymm(r);
        if negate {
            self.emit(Instruction::with3(
                Code::VEX_Vpcmpeqd_ymm_ymm_ymmm256,
                s,
                s,
                s,
            ));
            self.emit(Instruction::with3(Code::VEX_Vpxor_ymm_ymm_ymmm256, d, d, s));
        }
        if masked {
            let mask = MemoryOperand::with_base_index_scale_displ_size(MASK_BASE, INDEX, 1, 0, 1);
            let old =
                MemoryOperand::with_base_index_scale_displ_size(ROW_BASE[1], INDEX, 1, chan, 1);
            self.emit(Instruction::with2(Code::VEX_Vmovdqu_ymm_ymmm256, s, mask));
            self.emit(Instruction::with3(Code::VEX_Vpand_ymm_ymm_ymmm256, d, d, s));
            self.emit(Instruction::with3(
                Code::VEX_Vpandn_ymm_ymm_ymmm256,
                s,
                s,
                old,
            ));
            self.emit(Instruction::with3(Code::VEX_Vpor_ymm_ymm_ymmm256, d, d, s));
        }
        if damaged {
            let dead = MemoryOperand::with_base_index_scale_displ_size(DAMAGE_BASE, INDEX, 1, 0, 1);
            self.emit(Instruction::with2(Code::VEX_Vmovdqu_ymm_ymmm256, s, dead));
            self.emit(Instruction::with3(
                Code::VEX_Vpandn_ymm_ymm_ymmm256,
                d,
                s,
                d,
            ));
        }
        let out = MemoryOperand::with_base_index_scale_displ_size(OUT_BASE, INDEX, 1, chan, 1);
        self.emit(Instruction::with2(Code::VEX_Vmovdqu_ymmm256_ymm, out, d));
    }
}

#[derive(Clone, Copy)]
enum Op {
    Reg(u8),
    Mem(MemoryOperand),
}

fn spill_mem(slot: u32) -> MemoryOperand {
    MemoryOperand::with_base_displ_size(SPILL_BASE, slot as i64 * VBYTES, 1)
}

/// The loop body for one evaluation order: its instructions and spill slots.
fn loop_body(
    net: &Netlist,
    inputs: &[InputAt],
    stride_bytes: i64,
    steps: &[Step],
    masked: bool,
    damaged: bool,
) -> (Vec<Instruction>, usize) {
    let n = inputs.len() + net.gates.len();
    let mut uses = vec![Vec::new(); n];
    for (pos, step) in steps.iter().enumerate() {
        match *step {
            Step::Value(v) if (v as usize) >= inputs.len() => {
                let g = net.gates[v as usize - inputs.len()];
                uses[g.a as usize].push(pos as u32);
                uses[g.b as usize].push(pos as u32);
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
        net,
        inputs: inputs.to_vec(),
        stride_bytes,
        code: Vec::new(),
        place: vec![Place::default(); n],
        holder: [None; N_REGS],
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
    // Of a few depth-first orders, the one whose code is shortest (fewest spills).
    let (body, n_slots) = [Order::Needier, Order::A, Order::B]
        .into_iter()
        .map(|order| {
            let steps = schedule(net, &shifted, order);
            loop_body(net, &inputs, stride_bytes, &steps, masked, damaged)
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
    head.push(Instruction::with2(Code::Shl_rm64_imm8, END, 5u32)?);
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
        Instruction::with2(Code::Add_rm64_imm8, INDEX, VBYTES as i32)?,
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
        let steps = schedule(&net, &[false, true], Order::Needier);
        let order: Vec<i64> = steps
            .iter()
            .map(|s| match *s {
                Step::Value(v) => v as i64,
                Step::Output(c) => -(c as i64) - 1,
            })
            .collect();
        assert_eq!(order, vec![1, 2, 3, -1, -2]);
    }
}
