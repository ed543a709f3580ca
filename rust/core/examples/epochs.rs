//! Runs checkerboard-preset training epochs on a fixed batch, for profilers
//! (perf, valgrind) and A/B timings:
//! `cargo run -r -p logicars-core --example epochs -- [EPOCHS] [THREADS] [lizard]`
//! (`lizard`: the lizard preset's model and grid instead).

use logicars_core::{threads, GridShape, Model, Spec};

mod specs;
use specs::{CHECKERBOARD, LIZARD};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let lizard = args.last().is_some_and(|a| a == "lizard");
    if lizard {
        args.pop();
    }
    let args: Vec<usize> = args.iter().map(|a| a.parse().expect("a number")).collect();
    let epochs = args.first().copied().unwrap_or(20);
    threads::set_num_threads(args.get(1).copied().unwrap_or(1)).unwrap();
    let spec = Spec::from_json(if lizard { LIZARD } else { CHECKERBOARD }).unwrap();
    let side = if lizard { 20 } else { 16 };
    let lr = if lizard { 0.06 } else { 0.05 }; // the presets' learning rates
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
        last = model
            .train_step(&x, &y, shape, None, lr, logicars_core::optim::WEIGHT_DECAY)
            .unwrap();
    }
    let ms = t0.elapsed().as_secs_f64() * 1e3 / epochs as f64;
    println!("{epochs} epochs, {ms:.2} ms/epoch, last losses {last:?}");
}
