//! The float kernels on their own: one gate layer forward and backward, `width` gates
//! over a previous layer of `width` rows wired at random, on one arena chunk (`CHUNK`
//! cells) and on 1024 cells. `cargo bench -p logicars-core --bench kernels`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use logicars_core::kernels::{self, CHUNK};
use logicars_core::program::{BackInstr, Backward, Gates, Instr};
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
    };
    (gates, back)
}

fn gate_layer(c: &mut Criterion) {
    let level = kernels::simd_level();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut group = c.benchmark_group(format!("gate_layer_{}", level.name()));
    for width in [8, 64, 512] {
        let (gates, back) = layer(width, &mut rng);
        let coefs: Vec<[f32; 4]> = (0..width)
            .map(|_| std::array::from_fn(|_| rng.random_range(-1.0..1.0)))
            .collect();
        for cells in [CHUNK, 1024] {
            let chunks = cells / CHUNK;
            let rows = 2 * width * CHUNK;
            let mut act: Vec<f32> = (0..chunks * rows).map(|_| rng.random()).collect();
            let mut grad: Vec<f32> = (0..chunks * rows).map(|_| rng.random()).collect();
            let mut acc = vec![0f64; 4 * width];
            group.throughput(Throughput::Elements((width * cells) as u64));
            let id = format!("{width}_gates_{cells}_cells");
            group.bench_function(BenchmarkId::new("forward", &id), |b| {
                b.iter(|| {
                    for act in act.chunks_mut(rows) {
                        kernels::forward(&gates, &coefs, act, level);
                    }
                })
            });
            group.bench_function(BenchmarkId::new("backward", &id), |b| {
                b.iter(|| {
                    for (act, grad) in act.chunks(rows).zip(grad.chunks_mut(rows)) {
                        kernels::backward(&back, 2 * width, &coefs, (act, grad), &mut acc, level);
                    }
                })
            });
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    targets = gate_layer
}
criterion_main!(benches);
