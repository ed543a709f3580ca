//! One training epoch (soft + hard rollout, BPTT, AdamW) of the paper's presets, with
//! 1 and 2 threads. `cargo bench -p logicars-core --bench epoch`.

use criterion::{criterion_group, criterion_main, Criterion};
use logicars_core::{threads, GridShape, Model, Spec};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The design's checkerboard preset: 8 channels, 16x16, batch 2, 20 steps.
const CHECKERBOARD: &str = r#"{"channels": 8, "periodic": false, "num_steps": 20, "async": false,
 "loss_channels": [0], "lr": 0.05,
 "perceive": {"n_kernels": 16, "layers": [9, 8, 4, 2], "connections": ["first_kernel", "unique", "unique"]},
 "update": {"layers": [264, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 128, 64, 32, 16, 8, 8],
            "connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique",
                            "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique"]}}"#;

fn epoch(c: &mut Criterion) {
    let spec = Spec::from_json(CHECKERBOARD).unwrap();
    let shape = GridShape {
        batch: 2,
        height: 16,
        width: 16,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let n = shape.cells() * spec.channels;
    let x: Vec<f32> = (0..n).map(|_| rng.random_range(0..2u8) as f32).collect();
    let y: Vec<f32> = (0..n).map(|_| rng.random_range(0..2u8) as f32).collect();
    for t in [1, 2] {
        threads::set_num_threads(t).unwrap();
        let mut model = Model::new(spec.clone(), 23).unwrap();
        c.bench_function(&format!("checkerboard_epoch_{t}_threads"), |b| {
            b.iter(|| model.train_step(&x, &y, shape, None).unwrap())
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = epoch
}
criterion_main!(benches);
