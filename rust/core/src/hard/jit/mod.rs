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
//!
//! The pieces: [`isa`] (the instruction set and its encodings), [`abi`] (the call's
//! arguments and the registers that hold them), [`fuse`] (AVX-512 ternary fusion of gates),
//! [`schedule`] (evaluation order), [`regalloc`] (registers and spill slots over that
//! order), [`emit`] (the instructions of each input, gate and output), and here the
//! kernel: its prologue, loop and epilogue in executable memory.

mod abi;
mod emit;
mod fuse;
mod isa;
mod regalloc;
mod schedule;
#[cfg(test)]
mod tests;

use std::io;

use iced_x86::{Code, Encoder, IcedError, Instruction, MemoryOperand, Register};

pub(crate) use self::abi::RowArgs;
use self::abi::{ARG_REGS, DAMAGE_BASE, END, INDEX, MASK_BASE, OUT_BASE, ROWS, ROW_BASE};
use self::fuse::nodes;
pub(crate) use self::isa::Isa;
use self::regalloc::{loop_body, InputAt};
use self::schedule::{schedule, Order};
use super::netlist::Netlist;

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

    let head = prologue(isa)?;
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
    let tail = epilogue(isa, vector_start, row_start, net.channels * stride, nw)?;
    for ins in &tail {
        ip += enc.encode(ins, ip)? as u64;
    }
    Ok((enc.take_buffer(), n_slots))
}

/// The prologue: arguments into registers, the end offset of a row.
fn prologue(isa: Isa) -> Result<Vec<Instruction>, IcedError> {
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
    Ok(head)
}

/// After each vector: on to the next vector (`vector_start`) until the row ends, then
/// every pointer on to the next row (`row_words` words per row of data, `nw` of mask)
/// and back to `row_start` until the rows are done; then return.
fn epilogue(
    isa: Isa,
    vector_start: u64,
    row_start: u64,
    row_words: usize,
    nw: usize,
) -> Result<Vec<Instruction>, IcedError> {
    let row_bytes = (row_words * 8) as i32;
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
    Ok(tail)
}
