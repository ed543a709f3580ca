//! One training epoch (soft rollout, BPTT, hard rollout, AdamW) of every preset, with
//! 1 and 2 threads: `cargo bench -p logicars-core --bench epoch [-- PRESET]`.
//! The specs are those of `python -m logicars presets` (`logicars/presets.py`).

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use logicars_core::{threads, GridShape, Model, Spec};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Name, batch, height, width, learning rate and spec of each preset.
const PRESETS: [(&str, usize, usize, usize, f32, &str); 5] = [
    (
        "gol",
        20,
        3,
        3,
        0.05,
        r#"{"async": false, "channels": 1, "fire_rate": null, "loss_channels": [0], "num_steps": 1, "perceive": {"connections": ["first_kernel", "unique", "unique", "unique"], "layers": [9, 8, 4, 2, 1], "n_kernels": 16}, "periodic": true, "update": {"connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique"], "layers": [17, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 64, 32, 16, 8, 4, 2, 1]}}"#,
    ),
    (
        "checkerboard",
        2,
        16,
        16,
        0.05,
        r#"{"async": false, "channels": 8, "fire_rate": null, "loss_channels": [0], "num_steps": 20, "perceive": {"connections": ["first_kernel", "unique", "unique"], "layers": [9, 8, 4, 2], "n_kernels": 16}, "periodic": false, "update": {"connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique"], "layers": [264, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 128, 64, 32, 16, 8, 8]}}"#,
    ),
    (
        "checkerboard-async",
        1,
        14,
        14,
        0.05,
        r#"{"async": true, "channels": 8, "fire_rate": 0.6, "loss_channels": [0], "num_steps": 50, "perceive": {"connections": ["first_kernel", "unique", "unique"], "layers": [9, 8, 4, 2], "n_kernels": 16}, "periodic": false, "update": {"connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique"], "layers": [264, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256, 128, 64, 32, 16, 8, 8]}}"#,
    ),
    (
        "lizard",
        1,
        20,
        20,
        0.06,
        r#"{"async": false, "channels": 128, "fire_rate": null, "loss_channels": [0], "num_steps": 12, "perceive": {"connections": ["first_kernel", "unique", "unique", "unique"], "layers": [9, 8, 4, 2, 1], "n_kernels": 4}, "periodic": true, "update": {"connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique"], "layers": [640, 512, 512, 512, 512, 512, 512, 512, 512, 256, 128]}}"#,
    ),
    (
        "colored-g",
        1,
        16,
        16,
        0.06,
        r#"{"async": false, "channels": 64, "fire_rate": null, "loss_channels": [0, 1, 2], "num_steps": 15, "perceive": {"connections": ["first_kernel", "unique", "unique"], "layers": [9, 8, 4, 2], "n_kernels": 4}, "periodic": false, "update": {"connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique", "unique"], "layers": [576, 512, 512, 512, 512, 512, 512, 512, 512, 256, 128, 64]}}"#,
    ),
];

fn epoch(c: &mut Criterion) {
    for (name, batch, height, width, lr, json) in PRESETS {
        let spec = Spec::from_json(json).unwrap();
        let shape = GridShape {
            batch,
            height,
            width,
        };
        // Random bits: the cost of an epoch does not depend on the values.
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let n = shape.cells() * spec.channels;
        let x: Vec<f32> = (0..n).map(|_| rng.random_range(0..2u8) as f32).collect();
        let y: Vec<f32> = (0..n).map(|_| rng.random_range(0..2u8) as f32).collect();
        for t in [1, 2] {
            threads::set_num_threads(t).unwrap();
            let mut model = Model::new(spec.clone(), 23).unwrap();
            c.bench_function(&format!("{name}_epoch_{t}_threads"), |b| {
                b.iter(|| {
                    model
                        .train_step(&x, &y, shape, None, lr, logicars_core::optim::WEIGHT_DECAY)
                        .unwrap()
                })
            });
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = epoch
}
criterion_main!(benches);
