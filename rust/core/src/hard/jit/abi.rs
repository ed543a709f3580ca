//! The kernel's calling convention: the arguments of one call and the registers the
//! generated code keeps them in.

use iced_x86::Register;

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
pub(super) const ARG_REGS: [Register; 8] = [
    Register::R8,  // up
    Register::R9,  // mid
    Register::R10, // down
    Register::R11, // out
    Register::RSI, // mask
    Register::RDX, // damage
    Register::RCX, // spill
    Register::RAX, // vectors, then the end offset in bytes
];
pub(super) const ROW_BASE: [Register; 3] = [Register::R8, Register::R9, Register::R10];
pub(super) const OUT_BASE: Register = Register::R11;
pub(super) const MASK_BASE: Register = Register::RSI;
pub(super) const DAMAGE_BASE: Register = Register::RDX;
pub(super) const SPILL_BASE: Register = Register::RCX;
pub(super) const END: Register = Register::RAX;
/// The byte offset of the current vector in its row.
pub(super) const INDEX: Register = Register::RDI;
/// Rows left (callee-saved: pushed and popped).
pub(super) const ROWS: Register = Register::RBX;
