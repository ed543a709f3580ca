//! The gate kernels: every op of a run of one kind as one branch-free bitwise operation
//! on `L` words, with explicit AVX-512 where the CPU has it.

use crate::aligned::AlignedVec;
use crate::error::Result;
use crate::memory;
use crate::simd::SimdLevel;

/// The four bitwise kernels every remaining gate is one of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    /// `x & y`
    And = 0,
    /// `x & !y`
    AndNot = 1,
    /// `x | y`
    Or = 2,
    /// `x ^ y`
    Xor = 3,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::And, Kind::AndNot, Kind::Or, Kind::Xor];

    pub fn name(self) -> &'static str {
        match self {
            Kind::And => "and",
            Kind::AndNot => "and_not",
            Kind::Or => "or",
            Kind::Xor => "xor",
        }
    }

    pub(super) fn commutative(self) -> bool {
        self != Kind::AndNot
    }
}

/// A gate of the compiled circuit: `out = kind(x, y)` on arena slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Op {
    pub(crate) x: u32,
    pub(crate) y: u32,
    pub(crate) out: u32,
}

/// Consecutive ops of one kind (`start..end` of the circuit's ops).
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpSpan {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

#[inline(always)]
fn run_ops<const L: usize>(ops: &[Op], arena: &mut [[u64; L]], f: impl Fn(u64, u64) -> u64) {
    let n = arena.len();
    let p = arena.as_mut_ptr();
    for op in ops {
        debug_assert!((op.x as usize) < n && (op.y as usize) < n && (op.out as usize) < n);
        // SAFETY: `Circuit::compile` numbers slots below `n_slots` and `eval`, the only
        // caller, checks the arena holds that many. Both inputs are read before the write.
        unsafe {
            let x = *p.add(op.x as usize);
            let y = *p.add(op.y as usize);
            let mut o = [0u64; L];
            for k in 0..L {
                o[k] = f(x[k], y[k]);
            }
            *p.add(op.out as usize) = o;
        }
    }
}

#[inline(always)]
fn eval_impl<const L: usize>(ops: &[Op], spans: &[OpSpan], arena: &mut [[u64; L]]) {
    for r in spans {
        let ops = &ops[r.start..r.end];
        match r.kind {
            Kind::And => run_ops(ops, arena, |x, y| x & y),
            Kind::AndNot => run_ops(ops, arena, |x, y| x & !y),
            Kind::Or => run_ops(ops, arena, |x, y| x | y),
            Kind::Xor => run_ops(ops, arena, |x, y| x ^ y),
        }
    }
}

/// AVX-512 kernels: one 512-bit register per 8 words, explicit because LLVM prefers
/// 256-bit vectors on many AVX-512 CPUs, and the 512-bit loads and stores are what
/// bound this loop (about 1.5x the throughput of the 256-bit code here).
#[cfg(target_arch = "x86_64")]
mod zmm {
    use super::{Kind, Op, OpSpan};
    use std::arch::x86_64::*;

    macro_rules! run {
        ($ops:expr, $p:expr, $L:expr, |$x:ident, $y:ident| $e:expr) => {
            for op in $ops {
                let (xp, yp) = ($p.add(op.x as usize * $L), $p.add(op.y as usize * $L));
                let out = $p.add(op.out as usize * $L);
                for k in 0..$L / 8 {
                    let $x = _mm512_loadu_si512(xp.add(8 * k).cast());
                    let $y = _mm512_loadu_si512(yp.add(8 * k).cast());
                    _mm512_storeu_si512(out.add(8 * k).cast(), $e);
                }
            }
        };
    }

    /// # Safety
    /// The CPU has AVX-512F, `L` is a multiple of 8 and every slot of `ops` is below
    /// `arena.len()`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn eval<const L: usize>(
        ops: &[Op],
        spans: &[OpSpan],
        arena: &mut [[u64; L]],
    ) {
        let p = arena.as_mut_ptr().cast::<u64>();
        for r in spans {
            let ops = &ops[r.start..r.end];
            // SAFETY: the caller's contract; both inputs are loaded before the store.
            unsafe {
                match r.kind {
                    Kind::And => run!(ops, p, L, |x, y| _mm512_and_si512(x, y)),
                    Kind::AndNot => run!(ops, p, L, |x, y| _mm512_andnot_si512(y, x)),
                    Kind::Or => run!(ops, p, L, |x, y| _mm512_or_si512(x, y)),
                    Kind::Xor => run!(ops, p, L, |x, y| _mm512_xor_si512(x, y)),
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn eval_avx2<const L: usize>(ops: &[Op], spans: &[OpSpan], arena: &mut [[u64; L]]) {
    eval_impl::<L>(ops, spans, arena)
}

/// Runs `ops` run by run on `arena`. Every slot of `ops` must be below `n_slots` (as
/// `Circuit::compile` numbers them: the circuit's invariant, which the unsafe kernels
/// rely on).
///
/// Panics if the arena holds fewer than `n_slots` slots.
#[inline(always)]
pub(crate) fn eval<const L: usize>(
    (ops, spans, n_slots): (&[Op], &[OpSpan], usize),
    arena: &mut [[u64; L]],
    level: SimdLevel,
) {
    assert!(arena.len() >= n_slots, "arena smaller than the circuit");
    match level {
        // SAFETY: `simd_level` only reports levels the CPU supports; the slots of `ops`
        // are below `n_slots` (the caller's contract), checked against the arena above.
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 if L.is_multiple_of(8) => unsafe { zmm::eval::<L>(ops, spans, arena) },
        #[cfg(target_arch = "x86_64")]
        SimdLevel::Avx512 | SimdLevel::Avx2 => unsafe { eval_avx2::<L>(ops, spans, arena) },
        _ => eval_impl::<L>(ops, spans, arena),
    }
}

/// The scratch slots of one thread, 64-byte aligned (a cache line, one AVX-512 register).
pub(crate) struct Arena {
    words: AlignedVec<u64>,
}

impl Arena {
    pub(crate) fn new(n_slots: usize, words: usize) -> Result<Arena> {
        Ok(Arena {
            words: memory::try_zeros(n_slots.max(1) * words, "the simulator's arenas")?,
        })
    }

    /// The arena as slots of `L` words.
    pub(crate) fn slots<const L: usize>(&mut self) -> &mut [[u64; L]] {
        let n = self.words.len() / L;
        // SAFETY: `n` slots of `L` words fit in the buffer's initialised, 64-byte aligned
        // `u64`s; the borrow of `self` keeps them exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast::<[u64; L]>(), n) }
    }
}
