//! The float kernels on their own: one gate layer forward and backward, `width` gates
//! over a previous layer of `width` rows wired at random, on one arena chunk (`DEFAULT_CHUNK_CELLS`
//! cells) and on 1024 cells; and the checkerboard's whole perception block (16 kernels
//! on each of 8 channels, layers [9, 8, 4, 2]) on one chunk, exactly the gates the
//! compiled step runs; and a 512-gate layer forward on rows narrower than the default
//! (`chunk_cells` 16 and 32, whose row width is only known at run time).
//! `cargo bench -p logicars-core --bench kernels`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logicars_core::aligned::AlignedVec;
use logicars_core::float::kernels::{self, Lanes};
use logicars_core::float::program::{self, BackInstr, Backward, Gates, Instr, Program};
use logicars_core::simd::{simd_level, DEFAULT_CHUNK_CELLS};
use logicars_core::{Model, PerceiveSpec, Spec, UpdateSpec, Wiring};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A layer of `width` gates reading rows `0..width` and writing rows `width..2·width`,
/// forward and backward (gradient rows numbered like the activations).
fn layer(width: usize, rng: &mut ChaCha8Rng) -> (Gates, Backward) {
    let instrs: Vec<Instr> = (0..width)
        .map(|j| Instr {
            a: rng.random_range(0..width) as u32,
            b: rng.random_range(0..width) as u32,
            out: (width + j) as u32,
            coef: j as u32,
        })
        .collect();
    // Walking backwards, the first gradient written to an input row stores.
    let mut written = vec![false; width];
    let back = instrs
        .iter()
        .rev()
        .map(|ins| {
            let mut first = |r: u32| !std::mem::replace(&mut written[r as usize], true);
            let store_a = first(ins.a);
            let store_b = first(ins.b);
            BackInstr {
                a: ins.a,
                b: ins.b,
                gy: ins.out,
                ga: ins.a,
                gb: ins.b,
                coef: ins.coef,
                store_a,
                store_b,
            }
        })
        .collect();
    let out_rows = (width..2 * width).map(|r| r as u32).collect::<Vec<_>>();
    let gates = Gates {
        instrs,
        n_rows: 2 * width,
        out_rows: out_rows.clone(),
    };
    let back = Backward {
        instrs: back,
        n_rows: 2 * width,
        out_rows,
        unwritten: Vec::new(),
    };
    (gates, back)
}

/// Uniform floats in a cache-aligned buffer, as the engine's arenas are.
fn random_rows(len: usize, rng: &mut ChaCha8Rng) -> AlignedVec {
    let values: Vec<f32> = (0..len).map(|_| rng.random()).collect();
    AlignedVec::from_slice(&values)
}

fn gate_layer(c: &mut Criterion) {
    let level = simd_level();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut group = c.benchmark_group(format!("gate_layer_{}", level.name()));
    for width in [8, 64, 512] {
        let (gates, back) = layer(width, &mut rng);
        let coefs: Vec<[f32; 4]> = (0..width)
            .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0)))
            .collect();
        for cells in [DEFAULT_CHUNK_CELLS, 1024] {
            let chunks = cells / DEFAULT_CHUNK_CELLS;
            let rows = 2 * width * DEFAULT_CHUNK_CELLS;
            let mut act = random_rows(chunks * rows, &mut rng);
            let mut grad = random_rows(chunks * rows, &mut rng);
            let mut acc = AlignedVec::<f64>::zeros(4 * width);
            group.throughput(Throughput::Elements((width * cells) as u64));
            let id = format!("{width}_gates_{cells}_cells");
            group.bench_function(BenchmarkId::new("forward", &id), |b| {
                b.iter(|| {
                    for act in act.chunks_mut(rows) {
                        kernels::forward(&gates, &coefs, act, Lanes::WHOLE, level);
                    }
                })
            });
            group.bench_function(BenchmarkId::new("backward", &id), |b| {
                b.iter(|| {
                    for (act, grad) in act.chunks(rows).zip(grad.chunks_mut(rows)) {
                        kernels::backward(
                            &back,
                            2 * width,
                            &coefs,
                            (act, grad),
                            &mut acc,
                            Lanes::WHOLE,
                            level,
                        );
                    }
                })
            });
        }
    }
    group.finish();
}

/// The checkerboard preset's spec (`logicars.get_preset("checkerboard")`).
fn checkerboard_spec() -> Spec {
    let mut update = vec![264];
    update.extend([256; 10]);
    update.extend([128, 64, 32, 16, 8, 8]);
    Spec {
        channels: 8,
        periodic: false,
        num_steps: 20,
        is_async: false,
        fire_rate: None,
        loss_channels: vec![0],
        perceive: PerceiveSpec {
            n_kernels: 16,
            layers: vec![9, 8, 4, 2],
            connections: vec![Wiring::FirstKernel, Wiring::Unique, Wiring::Unique],
        },
        update: UpdateSpec {
            connections: vec![Wiring::Unique; update.len() - 1],
            layers: update,
        },
        relax: Default::default(),
        binarize_states: false,
        binarize_every: 1,
        chunk_cells: DEFAULT_CHUNK_CELLS,
        init_logit: logicars_core::relax::INIT_PASS_LOGIT,
    }
}

/// The elements of `v` that `pred` keeps.
fn keep<T: Copy>(v: &[T], pred: impl Fn(&T) -> bool) -> Vec<T> {
    v.iter().copied().filter(|x| pred(x)).collect()
}

/// The perception block of the checkerboard's compiled step on one chunk: the forward
/// gates of the training pass (one row per activation) and the matching end of the
/// backward list, picked out by their parameters (perception parameters come first).
fn perception_block(c: &mut Criterion) {
    let level = simd_level();
    let spec = checkerboard_spec();
    let model = Model::new(spec.clone(), 23).expect("valid spec");
    let step = Program::compile(&spec, model.perceive_wires(), model.update_wires());
    let (_, update_offsets, _) = program::param_offsets(&spec);
    let is_perception = |coef: u32| (coef as usize) < update_offsets[0];
    let gates = Gates {
        instrs: keep(&step.gates.instrs, |i| is_perception(i.coef)),
        ..step.gates.clone()
    };
    let back = Backward {
        instrs: keep(&step.backward.instrs, |i| is_perception(i.coef)),
        ..step.backward.clone()
    };
    let n = gates.instrs.len();
    assert_eq!(n, back.instrs.len());
    eprintln!(
        "checkerboard perception: {n} gates of {} in the step",
        step.gates.instrs.len()
    );

    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let coefs: Vec<[f32; 4]> = (0..step.n_params)
        .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0)))
        .collect();
    let mut act = random_rows(step.gates.n_rows * DEFAULT_CHUNK_CELLS, &mut rng);
    let mut grad = random_rows(back.n_rows * DEFAULT_CHUNK_CELLS, &mut rng);
    let mut acc = AlignedVec::<f64>::zeros(step.n_coefs());
    let mut group = c.benchmark_group(format!("perception_{}", level.name()));
    group.throughput(Throughput::Elements((n * DEFAULT_CHUNK_CELLS) as u64));
    let id = format!("checkerboard_{n}_gates_{DEFAULT_CHUNK_CELLS}_cells");
    group.bench_function(BenchmarkId::new("forward", &id), |b| {
        b.iter(|| kernels::forward(&gates, &coefs, &mut act, Lanes::WHOLE, level))
    });
    let act_rows = step.gates.n_rows;
    group.bench_function(BenchmarkId::new("backward", &id), |b| {
        b.iter(|| {
            let arenas = (&act[..], &mut grad[..]);
            kernels::backward(
                &back,
                act_rows,
                &coefs,
                arenas,
                &mut acc,
                Lanes::WHOLE,
                level,
            )
        })
    });
    group.finish();
}

/// A 512-gate layer forward on rows of 16, 32 and 64 cells, per cell: a narrow row
/// whose width is read at run time once compiled to scalar code, 5-7x slower per cell
/// than the default rows (docs/performance.md).
fn row_width(c: &mut Criterion) {
    let level = simd_level();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut group = c.benchmark_group(format!("row_width_{}", level.name()));
    let width = 512;
    let (gates, _) = layer(width, &mut rng);
    let coefs: Vec<[f32; 4]> = (0..width)
        .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0)))
        .collect();
    for cells in [16, 32, DEFAULT_CHUNK_CELLS] {
        let lanes = Lanes {
            cells,
            width: cells,
        };
        let mut act = random_rows(2 * width * cells, &mut rng);
        group.throughput(Throughput::Elements((width * cells) as u64));
        group.bench_function(BenchmarkId::new("forward", format!("{cells}_cells")), |b| {
            b.iter(|| kernels::forward(&gates, &coefs, &mut act, lanes, level))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = gate_layer, perception_block, row_width
}
criterion_main!(benches);
