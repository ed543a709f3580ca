//! Runs checkerboard-preset training epochs on a fixed batch, for profilers
//! (perf, valgrind) and A/B timings:
//! `cargo run -r -p logicars-core --example epochs -- [EPOCHS] [THREADS] [lizard]`
//! (`lizard`: the lizard preset's model and grid instead).

use logicars_core::{threads, GridShape, Model, Spec};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let lizard = args.last().is_some_and(|a| a == "lizard");
    if lizard {
        args.pop();
    }
    let args: Vec<usize> = args.iter().map(|a| a.parse().expect("a number")).collect();
    let epochs = args.first().copied().unwrap_or(20);
    threads::set_num_threads(args.get(1).copied().unwrap_or(1)).unwrap();
    let update: Vec<usize> = [264]
        .into_iter()
        .chain([256; 10])
        .chain([128, 64, 32, 16, 8, 8])
        .collect();
    let checkerboard = format!(
        r#"{{"channels": 8, "periodic": false, "num_steps": 20, "loss_channels": [0], "lr": 0.05,
            "perceive": {{"n_kernels": 16, "layers": [9, 8, 4, 2],
                          "connections": ["first_kernel", "unique", "unique"]}},
            "update": {{"layers": {update:?}, "connections": {conns:?}}}}}"#,
        conns = vec!["unique"; update.len() - 1]
    );
    let spec = Spec::from_json(if lizard { LIZARD } else { &checkerboard }).unwrap();
    let side = if lizard { 20 } else { 16 };
    let shape = GridShape {
        batch: if lizard { 1 } else { 2 },
        height: side,
        width: side,
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

/// The lizard preset (`logicars/presets.py`): 128 channels, 12 steps on 20x20.
const LIZARD: &str = r#"{"channels": 128, "periodic": true, "num_steps": 12, "loss_channels": [0],
    "lr": 0.06, "perceive": {"n_kernels": 4, "layers": [9, 8, 4, 2, 1],
    "connections": ["first_kernel", "unique", "unique", "unique"]},
    "update": {"layers": [640, 512, 512, 512, 512, 512, 512, 512, 512, 256, 128],
    "connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique",
                    "unique", "unique", "unique"]}}"#;
