//! The instruction set a kernel is compiled for, and the encoding of each vector
//! instruction in it (AVX-512 or its AVX2 twin).

use iced_x86::{Code, Register};

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

    pub(super) fn vbytes(self) -> i64 {
        8 * self.lanes() as i64
    }

    pub(super) fn zmm(self) -> bool {
        matches!(self, Isa::Avx512 { .. })
    }

    /// The AVX-512 encoding of an instruction or its AVX2 twin.
    pub(super) fn pick(self, zmm: Code, ymm: Code) -> Code {
        if self.zmm() {
            zmm
        } else {
            ymm
        }
    }

    /// Registers that hold values; the next one is scratch.
    pub(super) fn n_regs(self) -> usize {
        if self.zmm() {
            31
        } else {
            15
        }
    }

    pub(super) fn reg(self, r: u8) -> Register {
        if self.zmm() {
            Register::ZMM0 + r as u32
        } else {
            Register::YMM0 + r as u32
        }
    }

    pub(super) fn scratch(self) -> Register {
        self.reg(self.n_regs() as u8)
    }

    pub(super) fn load(self) -> Code {
        self.pick(
            Code::EVEX_Vmovdqu64_zmm_k1z_zmmm512,
            Code::VEX_Vmovdqu_ymm_ymmm256,
        )
    }

    pub(super) fn store(self) -> Code {
        self.pick(
            Code::EVEX_Vmovdqu64_zmmm512_k1z_zmm,
            Code::VEX_Vmovdqu_ymmm256_ymm,
        )
    }

    pub(super) fn copy(self) -> Code {
        self.pick(
            Code::EVEX_Vmovdqa64_zmm_k1z_zmmm512,
            Code::VEX_Vmovdqa_ymm_ymmm256,
        )
    }

    pub(super) fn and(self) -> Code {
        self.pick(
            Code::EVEX_Vpandq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpand_ymm_ymm_ymmm256,
        )
    }

    /// `!first & second`.
    pub(super) fn andn(self) -> Code {
        self.pick(
            Code::EVEX_Vpandnq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpandn_ymm_ymm_ymmm256,
        )
    }

    pub(super) fn or(self) -> Code {
        self.pick(
            Code::EVEX_Vporq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpor_ymm_ymm_ymmm256,
        )
    }

    pub(super) fn xor(self) -> Code {
        self.pick(
            Code::EVEX_Vpxorq_zmm_k1z_zmm_zmmm512b64,
            Code::VEX_Vpxor_ymm_ymm_ymmm256,
        )
    }

    pub(super) fn shift_left(self) -> Code {
        self.pick(
            Code::EVEX_Vpsllq_zmm_k1z_zmmm512b64_imm8,
            Code::VEX_Vpsllq_ymm_ymm_imm8,
        )
    }

    pub(super) fn shift_right(self) -> Code {
        self.pick(
            Code::EVEX_Vpsrlq_zmm_k1z_zmmm512b64_imm8,
            Code::VEX_Vpsrlq_ymm_ymm_imm8,
        )
    }
}

/// `vpternlogq`'s operand patterns: bit `i` of the immediate is the result for
/// `A = i >> 2 & 1, B = i >> 1 & 1, C = i & 1`.
pub(super) const TERN_A: u8 = 0xF0;
pub(super) const TERN_B: u8 = 0xCC;
pub(super) const TERN_C: u8 = 0xAA;
pub(super) const TERNLOG: Code = Code::EVEX_Vpternlogq_zmm_k1z_zmm_zmmm512b64_imm8;
