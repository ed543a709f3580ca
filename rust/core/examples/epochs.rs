//! Runs checkerboard-preset training epochs on a fixed batch, for profilers
//! (perf, valgrind): `cargo run -r -p logicars-core --example epochs -- [EPOCHS] [THREADS]`.

use logicars_core::{threads, GridShape, Model, Spec};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let epochs = args.first().copied().unwrap_or(20);
    threads::set_num_threads(args.get(1).copied().unwrap_or(1)).unwrap();
    let update: Vec<usize> = [264]
        .into_iter()
        .chain([256; 10])
        .chain([128, 64, 32, 16, 8, 8])
        .collect();
    let spec = Spec::from_json(&format!(
        r#"{{"channels": 8, "periodic": false, "num_steps": 20, "loss_channels": [0], "lr": 0.05,
            "perceive": {{"n_kernels": 16, "layers": [9, 8, 4, 2],
                          "connections": ["first_kernel", "unique", "unique"]}},
            "update": {{"layers": {update:?}, "connections": {conns:?}}}}}"#,
        conns = vec!["unique"; update.len() - 1]
    ))
    .unwrap();
    let shape = GridShape {
        batch: 2,
        height: 16,
        width: 16,
    };
    let n = shape.cells() * spec.channels;
    let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 3 == 0) as u8 as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| ((i / 8) % 2) as f32).collect();
    let mut model = Model::new(spec, 23).unwrap();
    let t0 = std::time::Instant::now();
    let mut last = (0.0, 0.0);
    for _ in 0..epochs {
        last = model.train_step(&x, &y, shape, None).unwrap();
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3 / epochs as f64;
    println!("{epochs} epochs, {ms:.2} ms/epoch, last losses {last:?}");
}
