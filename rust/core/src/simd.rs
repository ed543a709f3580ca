//! The SIMD vocabulary every engine shares: the instruction set the kernels run with
//! (`SimdLevel`), the lanes of one register's worth of cells, and the chunk widths a
//! spec may choose. A leaf module: the spec, the float engine and the hard engine
//! import it, and it imports nothing of theirs.

use std::sync::OnceLock;

/// Lanes summed in one SIMD register's worth.
pub const LANES: usize = 16;

/// Cells per chunk unless the spec says otherwise (`Spec::chunk_cells`): one arena row.
/// The width sets the order of the per-chunk gradient sums, so changing it changes the
/// last bits of training and with them which seeds reach hard loss 0; the presets'
/// default seeds were chosen with their own widths (docs/performance.md).
pub const DEFAULT_CHUNK_CELLS: usize = 64;

/// The widest chunk the float kernels are compiled for.
pub const MAX_CHUNK_CELLS: usize = 8 * LANES;

/// The lanes the kernels read and write in a chunk of `cells` cells: whole SIMD blocks.
pub fn lanes_used(cells: usize) -> usize {
    cells.div_ceil(LANES) * LANES
}

/// Instruction set the kernels run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimdLevel {
    /// Whatever the build's target features allow, multiply and add kept separate.
    Portable,
    /// AVX2 with fused multiply-add.
    Avx2,
    /// AVX-512 with fused multiply-add.
    Avx512,
}

impl SimdLevel {
    /// Whether this CPU has the instructions of `self` (portable code runs anywhere).
    pub fn is_supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            let fma = is_x86_feature_detected!("fma");
            match self {
                SimdLevel::Portable => true,
                SimdLevel::Avx2 => fma && is_x86_feature_detected!("avx2"),
                SimdLevel::Avx512 => fma && is_x86_feature_detected!("avx512f"),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == SimdLevel::Portable
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Portable => "portable",
            SimdLevel::Avx2 => "avx2+fma",
            SimdLevel::Avx512 => "avx512+fma",
        }
    }

    /// The best level this CPU supports, whatever `LOGICARS_SIMD` says.
    pub fn best_supported() -> SimdLevel {
        [SimdLevel::Avx512, SimdLevel::Avx2]
            .into_iter()
            .find(|level| level.is_supported())
            .unwrap_or(SimdLevel::Portable)
    }
}

/// The best level this CPU supports, or the one forced by `LOGICARS_SIMD`
/// (`portable`, `avx2`, `avx512`; a level the CPU lacks falls back to the best it has).
pub fn simd_level() -> SimdLevel {
    static LEVEL: OnceLock<SimdLevel> = OnceLock::new();
    *LEVEL.get_or_init(|| {
        let best = SimdLevel::best_supported();
        match std::env::var("LOGICARS_SIMD").as_deref() {
            Ok("portable") => SimdLevel::Portable,
            Ok("avx2") if best != SimdLevel::Portable => SimdLevel::Avx2,
            _ => best,
        }
    })
}
