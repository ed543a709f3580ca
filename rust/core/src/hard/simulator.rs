//! Running a compiled hard circuit: the engine choice ([`HardEngine`]), a reusable
//! [`Simulator`] over either engine, and [`simulate`].

use std::sync::OnceLock;

use super::circuit::Circuit;
#[cfg(target_arch = "x86_64")]
use super::grid;
#[cfg(target_arch = "x86_64")]
use super::jit::Isa;
use super::masks::{Masks, StepMask};
#[cfg(target_arch = "x86_64")]
use super::netlist::Netlist;
use super::options::{is_frame, n_frames, SimOptions};
use super::slots::{check_words, SlotSim};
use crate::error::{shape_err, value_err, Error, Result};
use crate::grid::GridShape;
use crate::memory;
#[cfg(target_arch = "x86_64")]
use crate::simd::{simd_level, SimdLevel};
use crate::threads;

/// Which engine runs a hard circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HardEngine {
    /// Compiled AVX2 machine code (`jit`).
    Jit,
    /// Compiled AVX-512 machine code (`jit`: `zmm` registers, `vpternlogq`).
    JitAvx512,
    /// The portable slot interpreter ([`super::slots`]).
    Slots,
}

impl HardEngine {
    pub fn name(self) -> &'static str {
        match self {
            HardEngine::Jit => "jit-avx2",
            HardEngine::JitAvx512 => "jit-avx512",
            HardEngine::Slots => "slots",
        }
    }

    /// Whether this is one of the JIT back ends.
    pub fn is_jit(self) -> bool {
        self != HardEngine::Slots
    }

    /// `jit` (the best JIT back end this machine runs, as [`default_engine`] picks it),
    /// `jit-avx2`, `jit-avx512` or `slots` (as the Python API spells them).
    pub fn parse(name: &str) -> Result<HardEngine> {
        match name {
            "jit" if default_engine() == HardEngine::JitAvx512 => Ok(HardEngine::JitAvx512),
            "jit" | "jit-avx2" => Ok(HardEngine::Jit),
            "jit-avx512" => Ok(HardEngine::JitAvx512),
            "slots" => Ok(HardEngine::Slots),
            _ => value_err!(
                "engine must be 'jit', 'jit-avx2', 'jit-avx512' or 'slots', got {name:?}"
            ),
        }
    }

    /// Whether this engine runs here.
    pub fn available(self) -> bool {
        match self {
            HardEngine::Jit => jit_available(),
            HardEngine::JitAvx512 => jit_avx512_available(),
            HardEngine::Slots => true,
        }
    }
}

/// Whether the JIT can run here: an x86-64 CPU with AVX2 (detected at run time, which
/// also checks that the OS saves the AVX state), the kernels not forced to the portable
/// level (`LOGICARS_SIMD=portable`), and executable memory granted (a small circuit is
/// compiled and run once, and must give the slot engine's answer).
pub fn jit_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            Isa::Avx2.available() && simd_level() != SimdLevel::Portable && self_test(Isa::Avx2)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Whether the AVX-512 JIT can run here: [`jit_available`], and a CPU with AVX-512F
/// whose OS keeps the `zmm` and mask registers (XCR0 bits 5–7, which run-time detection
/// checks), and the AVX-512 kernel's self-test passes.
pub fn jit_avx512_available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            jit_available() && Isa::avx512().available() && self_test(Isa::avx512())
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    })
}

/// Compiles and runs a one-gate circuit (`x ^ east neighbour`) on one 64-cell row.
#[cfg(target_arch = "x86_64")]
fn self_test(isa: Isa) -> bool {
    use super::kernels::Kind;
    use super::netlist::{Gate, NetOutput, PatchInput};
    let net = Netlist {
        channels: 1,
        inputs: vec![
            PatchInput {
                channel: 0,
                dr: 0,
                dc: 0,
            },
            PatchInput {
                channel: 0,
                dr: 0,
                dc: 1,
            },
        ],
        gates: vec![Gate {
            kind: Kind::Xor,
            a: 0,
            b: 1,
        }],
        outputs: vec![NetOutput::Node {
            node: 2,
            negated: false,
        }],
    };
    let shape = GridShape {
        batch: 1,
        height: 1,
        width: 64,
    };
    let Ok(mut sim) = grid::GridSim::new(grid::KernelCache::new(net), shape, true, isa) else {
        return false;
    };
    let x: Vec<u8> = (0..64).map(|i| (i % 3 == 0) as u8).collect();
    let want: Vec<u8> = (0..64).map(|i| x[i] ^ x[(i + 1) % 64]).collect();
    let mut got = vec![0u8; 64];
    sim.load(&x).is_ok() && sim.step(StepMask::All, false).is_ok() && {
        sim.read_into(&mut got);
        got == want
    }
}

/// Cell-steps below which [`simulate_into`], asked for no engine, runs the slot engine:
/// the JIT's machine code for a circuit it has not run costs more to make than such a run
/// takes. A repair's candidate on the Game of Life's 512 boards (4608 cell-steps, a new
/// circuit each): 0.82 ms with the JIT, 0.62 with the slots (docs/performance.md).
pub const SLOTS_BELOW_CELL_STEPS: usize = 1 << 14;

fn small_run(shape: GridShape, steps: usize) -> bool {
    shape.cells().saturating_mul(steps.max(1)) < SLOTS_BELOW_CELL_STEPS
}

/// The engine [`simulate`] and [`Simulator::new`] use when none is asked for: the
/// AVX-512 JIT where [`jit_avx512_available`] and the kernels run at the AVX-512 level
/// (not forced to `LOGICARS_SIMD=avx2`), else the AVX2 JIT where [`jit_available`], else
/// the slot engine; `LOGICARS_HARD_ENGINE=slots` forces the slot engine.
pub fn default_engine() -> HardEngine {
    static ENGINE: OnceLock<HardEngine> = OnceLock::new();
    *ENGINE.get_or_init(|| {
        let forced = std::env::var("LOGICARS_HARD_ENGINE").ok();
        if forced.as_deref() == Some("slots") {
            return HardEngine::Slots;
        }
        #[cfg(target_arch = "x86_64")]
        if simd_level() == SimdLevel::Avx512 && jit_avx512_available() {
            return HardEngine::JitAvx512;
        }
        if jit_available() {
            HardEngine::Jit
        } else {
            HardEngine::Slots
        }
    })
}

/// What the JIT makes of one circuit, kept between its simulations: the netlist and the
/// compiled kernels (built on first use, not once per call).
#[derive(Default)]
struct JitCache {
    #[cfg(target_arch = "x86_64")]
    kernels: OnceLock<grid::KernelCache>,
}

/// A circuit with its `JitCache`: simulate it call after call through
/// [`Simulator::of`] or [`simulate_into`].
pub struct CompiledCircuit {
    circuit: Circuit,
    jit: JitCache,
}

impl CompiledCircuit {
    pub fn new(circuit: Circuit) -> CompiledCircuit {
        CompiledCircuit {
            circuit,
            jit: JitCache::default(),
        }
    }

    pub fn circuit(&self) -> &Circuit {
        &self.circuit
    }
}

enum Inner {
    #[cfg(target_arch = "x86_64")]
    Jit(Box<grid::GridSim>),
    Slots(Box<SlotSim>),
}

/// A hard circuit with its packed grid and every buffer a simulation needs, kept between
/// calls: load a grid once, run steps, read the grid, change it, run on.
pub struct Simulator {
    inner: Inner,
    shape: GridShape,
    channels: usize,
    periodic: bool,
}

impl Simulator {
    /// A simulator of `circuit` for `shape` grids (all 0 until [`Simulator::load`]) on
    /// `engine` (`None`: [`default_engine`]). Asking for the JIT where it is not
    /// available is an error. `words` sets the slot engine's block width (0: automatic).
    pub fn new(
        circuit: &Circuit,
        shape: GridShape,
        periodic: bool,
        engine: Option<HardEngine>,
        words: usize,
    ) -> Result<Simulator> {
        Simulator::build(
            circuit,
            &JitCache::default(),
            shape,
            periodic,
            engine,
            words,
        )
    }

    /// [`Simulator::new`] for a [`CompiledCircuit`], reusing its netlist and kernels.
    pub fn of(
        compiled: &CompiledCircuit,
        shape: GridShape,
        periodic: bool,
        engine: Option<HardEngine>,
        words: usize,
    ) -> Result<Simulator> {
        let CompiledCircuit { circuit, jit } = compiled;
        Simulator::build(circuit, jit, shape, periodic, engine, words)
    }

    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
    fn build(
        circuit: &Circuit,
        jit: &JitCache,
        shape: GridShape,
        periodic: bool,
        engine: Option<HardEngine>,
        words: usize,
    ) -> Result<Simulator> {
        if shape.batch == 0 || shape.height == 0 || shape.width == 0 {
            return shape_err!("batch, height and width must be >= 1, got {shape:?}");
        }
        check_words(words)?;
        let bytes = Simulator::estimate_bytes(circuit, shape, words);
        if memory::over_cap(bytes) {
            return Err(Error::Memory(format!(
                "a simulator of {}x{}x{} cells x {} channels needs about {} MB, more than the \
                 limit of {} MB (set LOGICARS_MAX_MEMORY_MB to raise it)",
                shape.batch,
                shape.height,
                shape.width,
                circuit.channels(),
                bytes >> 20,
                memory::cap_mb()
            )));
        }
        let engine = engine.unwrap_or_else(default_engine);
        let inner = match engine {
            HardEngine::Jit if !jit_available() => {
                return value_err!(
                    "the JIT engine needs an x86-64 CPU with AVX2 and executable memory; \
                     this machine runs the 'slots' engine"
                );
            }
            HardEngine::JitAvx512 if !jit_avx512_available() => {
                return value_err!(
                    "the 'jit-avx512' engine needs an x86-64 CPU with AVX-512F and \
                     executable memory; this machine runs '{}'",
                    default_engine().name()
                );
            }
            #[cfg(target_arch = "x86_64")]
            HardEngine::Jit | HardEngine::JitAvx512 => {
                let kernels = jit
                    .kernels
                    .get_or_init(|| grid::KernelCache::new(Netlist::from_circuit(circuit)));
                let isa = if engine == HardEngine::Jit {
                    Isa::Avx2
                } else {
                    Isa::avx512()
                };
                let sim = grid::GridSim::new(kernels.clone(), shape, periodic, isa)?;
                Inner::Jit(Box::new(sim))
            }
            _ => Inner::Slots(Box::new(SlotSim::new(circuit, shape, periodic, words)?)),
        };
        Ok(Simulator {
            inner,
            shape,
            channels: circuit.channels(),
            periodic,
        })
    }

    /// Bytes of the buffers a simulator of this size holds (the larger engine's).
    pub fn estimate_bytes(circuit: &Circuit, shape: GridShape, words: usize) -> usize {
        let slots = SlotSim::estimate_bytes(circuit, shape, words);
        #[cfg(target_arch = "x86_64")]
        let slots = slots.max(grid::GridSim::estimate_bytes(circuit.channels(), shape));
        slots
    }

    pub fn engine(&self) -> HardEngine {
        match self.inner {
            #[cfg(target_arch = "x86_64")]
            Inner::Jit(ref s) => s.engine(),
            Inner::Slots(_) => HardEngine::Slots,
        }
    }

    pub fn shape(&self) -> GridShape {
        self.shape
    }

    pub fn channels(&self) -> usize {
        self.channels
    }

    pub fn periodic(&self) -> bool {
        self.periodic
    }

    /// Sets the state from a `B × H × W × C` grid of 0/1 bytes.
    pub fn load(&mut self, x: &[u8]) -> Result<()> {
        threads::pool().install(|| match &mut self.inner {
            #[cfg(target_arch = "x86_64")]
            Inner::Jit(s) => s.load(x),
            Inner::Slots(s) => s.load(x),
        })
    }

    /// Writes the current state into `out` (`B × H × W × C` bytes of 0/1).
    pub fn read_into(&self, out: &mut [u8]) {
        match &self.inner {
            #[cfg(target_arch = "x86_64")]
            Inner::Jit(s) => s.read_into(out),
            Inner::Slots(s) => s.read_into(out),
        }
    }

    /// Writes channels `channels` of the current state, in that order, into `out`
    /// (`B × H × W × L` bytes of 0/1, `L = channels.len()`): a loss that reads a few
    /// channels of a wide model then unpacks those only.
    pub fn read_channels_into(&self, channels: &[usize], out: &mut [u8]) {
        match &self.inner {
            #[cfg(target_arch = "x86_64")]
            Inner::Jit(s) => s.read_channels_into(channels, out),
            Inner::Slots(s) => s.read_channels_into(channels, out),
        }
    }

    /// Sets the damage plane (`H × W` or `B × H × W` bytes, 1 = dead; `None` removes it).
    pub fn set_damage(&mut self, cells: Option<&[u8]>) -> Result<()> {
        threads::pool().install(|| match &mut self.inner {
            #[cfg(target_arch = "x86_64")]
            Inner::Jit(s) => s.set_damage(cells),
            Inner::Slots(s) => s.set_damage(cells),
        })
    }

    /// One step: every cell (or the masked ones) takes its new state, then, with
    /// `damaged`, the cells of the damage plane are set to 0 in every channel.
    pub fn step(&mut self, mask: StepMask<'_>, damaged: bool) -> Result<()> {
        match &mut self.inner {
            #[cfg(target_arch = "x86_64")]
            Inner::Jit(s) => s.step(mask, damaged),
            Inner::Slots(s) => s.step(mask, damaged),
        }
    }

    /// Runs `opts.steps` steps from the current state as [`simulate`] does (`opts.damage`
    /// replaces the damage plane; `opts.periodic` and `opts.words` are the simulator's
    /// own). Returns the grids of [`super::frame_steps`] concatenated.
    pub fn run(&mut self, opts: &SimOptions<'_>) -> Result<Vec<u8>> {
        let mut out = memory::try_vec(
            output_len(self.shape, self.channels, opts)?,
            0u8,
            "the grids",
        )?;
        self.run_chunked(opts, Some(&mut out))?;
        Ok(out)
    }

    /// [`Simulator::run`] into `out`, which holds [`output_len`] bytes.
    pub fn run_into(&mut self, opts: &SimOptions<'_>, out: &mut [u8]) -> Result<()> {
        let want = output_len(self.shape, self.channels, opts)?;
        if out.len() != want {
            return shape_err!("out: expected {want} bytes, got {}", out.len());
        }
        self.run_chunked(opts, Some(out))
    }

    /// [`Simulator::run`] without reading any grid back (not even the last).
    pub fn advance(&mut self, opts: &SimOptions<'_>) -> Result<()> {
        check_options(self.shape, opts)?;
        self.run_chunked(opts, None)
    }

    /// Runs the steps in the pool, one hand-over for the whole run; with an interrupt
    /// check, one hand-over per `every` of running, the check made between them on the
    /// calling thread (where Python can see signals).
    fn run_chunked(&mut self, opts: &SimOptions<'_>, mut out: Option<&mut [u8]>) -> Result<()> {
        let pool = threads::pool();
        let mut t = 0;
        let mut written = 0;
        while t <= opts.steps {
            let started = std::time::Instant::now();
            let until = opts.interrupt.map(|i| started + i.every);
            pool.install(|| {
                self.run_in_pool(opts, out.as_deref_mut(), &mut t, &mut written, until)
            })?;
            if t <= opts.steps {
                if let Some(check) = opts.interrupt {
                    if (check.check)() {
                        return Err(Error::Interrupted);
                    }
                }
            }
        }
        Ok(())
    }

    /// Steps `*t..=opts.steps` (step 0 is reading the start grid), stopping early once
    /// `until` has passed; `*t` and `*written` (frames written to `out`) carry on.
    fn run_in_pool(
        &mut self,
        opts: &SimOptions<'_>,
        mut out: Option<&mut [u8]>,
        t: &mut usize,
        written: &mut usize,
        until: Option<std::time::Instant>,
    ) -> Result<()> {
        let steps = opts.steps;
        let frame_len = self.shape.cells() * self.channels;
        if *t == 0 {
            self.set_damage(opts.damage)?;
        }
        while *t <= steps {
            let step = *t;
            if step > 0 {
                let mask = match opts.masks {
                    Masks::Sync => StepMask::All,
                    Masks::Given(masks) => StepMask::Given {
                        masks,
                        steps,
                        t: step - 1,
                    },
                    Masks::Random { fire_rate, seed } => StepMask::Random {
                        fire_rate,
                        seed,
                        t: step - 1,
                    },
                };
                let damaged = opts.damage.is_some() && opts.damage_steps.contains(&(step - 1));
                self.step(mask, damaged)?;
            }
            if let Some(out) = out.as_deref_mut() {
                if is_frame(step, steps, opts.record_every) {
                    let w = *written;
                    self.read_into(&mut out[w * frame_len..(w + 1) * frame_len]);
                    *written += 1;
                }
            }
            *t += 1;
            if until.is_some_and(|u| std::time::Instant::now() >= u) {
                break;
            }
        }
        Ok(())
    }
}

/// Bytes of the grids a run with `opts` returns (`frames × B × H × W × C`), after
/// checking the options and that they fit the memory limit.
pub fn output_len(shape: GridShape, channels: usize, opts: &SimOptions<'_>) -> Result<usize> {
    check_options(shape, opts)?;
    let frames = n_frames(opts.steps, opts.record_every);
    let bytes = shape
        .cells()
        .saturating_mul(channels)
        .saturating_mul(frames);
    check_memory(shape, channels, frames, bytes)?;
    Ok(bytes)
}

/// The checks of [`simulate`]'s options that do not depend on the engine (also the
/// drift search's, `model::drift`).
pub(crate) fn check_options(shape: GridShape, opts: &SimOptions<'_>) -> Result<()> {
    let steps = opts.steps;
    match opts.masks {
        Masks::Sync => {}
        Masks::Given(m) => {
            let want = shape.cells().checked_mul(steps);
            if want != Some(m.len()) {
                return shape_err!(
                    "masks: expected B*steps*H*W = {}*{steps}*{}*{} values, got {}",
                    shape.batch,
                    shape.height,
                    shape.width,
                    m.len()
                );
            }
            if let Some(i) = m.iter().position(|&v| v > 1) {
                return value_err!(
                    "masks: values must be 0 or 1, found {} at flat index {i}",
                    m[i]
                );
            }
        }
        Masks::Random { fire_rate, .. } => {
            if !(fire_rate > 0.0 && fire_rate <= 1.0) {
                return value_err!("fire_rate must be in (0, 1], got {fire_rate}");
            }
        }
    }
    if opts.damage_steps.start > opts.damage_steps.end {
        return value_err!(
            "damage_steps: expected start <= end, got ({}, {})",
            opts.damage_steps.start,
            opts.damage_steps.end
        );
    }
    Ok(())
}

fn check_memory(shape: GridShape, channels: usize, frames: usize, bytes: usize) -> Result<()> {
    if memory::over_cap(bytes) {
        let cap_mb = memory::cap_mb();
        return Err(Error::Memory(format!(
            "simulating {}x{}x{} cells x {channels} channels and returning {frames} grid(s) \
             needs about {} MB, more than the limit of {cap_mb} MB; record fewer steps (a \
             larger record_every, or only the final grid) or set LOGICARS_MAX_MEMORY_MB",
            shape.batch,
            shape.height,
            shape.width,
            bytes >> 20
        )));
    }
    Ok(())
}

/// Runs `circuit` on `x` (`B × H × W × C` bytes, 0/1) for `opts.steps` steps on the
/// [`default_engine`]. Returns the grids of [`super::frame_steps`] concatenated,
/// each `B × H × W × C` bytes.
pub fn simulate(
    circuit: &Circuit,
    x: &[u8],
    shape: GridShape,
    opts: &SimOptions<'_>,
) -> Result<Vec<u8>> {
    simulate_on(default_engine(), circuit, x, shape, opts)
}

/// [`simulate`] on the given engine.
pub fn simulate_on(
    engine: HardEngine,
    circuit: &Circuit,
    x: &[u8],
    shape: GridShape,
    opts: &SimOptions<'_>,
) -> Result<Vec<u8>> {
    let mut out = memory::try_vec(
        output_len(shape, circuit.channels(), opts)?,
        0u8,
        "the grids",
    )?;
    let mut sim = threads::pool().install(|| {
        let mut sim = Simulator::new(circuit, shape, opts.periodic, Some(engine), opts.words)?;
        sim.load(x)?;
        Ok::<_, crate::error::Error>(sim)
    })?;
    sim.run_chunked(opts, Some(&mut out))?;
    Ok(out)
}

/// [`simulate`] into `out`, which holds [`output_len`] bytes, on `engine` (`None`: the
/// slot engine for a run under [`SLOTS_BELOW_CELL_STEPS`], else the [`default_engine`]).
pub fn simulate_into(
    engine: Option<HardEngine>,
    circuit: &CompiledCircuit,
    x: &[u8],
    shape: GridShape,
    opts: &SimOptions<'_>,
    out: &mut [u8],
) -> Result<()> {
    let engine = engine.or_else(|| small_run(shape, opts.steps).then_some(HardEngine::Slots));
    // One hand-over to the pool for the whole run (one per interrupt check with one): the
    // steps' parallel loops then start on a worker instead of waking the pool from
    // outside twice per step.
    let mut sim = threads::pool().install(|| {
        let mut sim = Simulator::of(circuit, shape, opts.periodic, engine, opts.words)?;
        sim.load(x)?;
        Ok::<_, crate::error::Error>(sim)
    })?;
    sim.run_into(opts, out)
}
