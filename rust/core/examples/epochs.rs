//! Runs training epochs of the narrow model (`specs`) on a fixed batch, for profilers
//! (perf, valgrind) and A/B timings:
//! `cargo run -r -p logicars-core --example epochs -- [EPOCHS] [THREADS] [wide]
//! [--cells N] [--batch B] [--spec FILE]` (`wide`: the wide model and its grid instead;
//! `--cells`: rows of N cells, the model's `chunk_cells`; `--batch`: B grids, the narrow
//! model's default 2; `--spec`: the model of a spec's JSON file on the narrow model's
//! 16x16 grid, `specs::take_spec`).

use logicars_core::{threads, GridShape, Model, Spec};

mod specs;
use specs::{take_option, take_spec, NARROW, WIDE};

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let cells = take_option(&mut args, "--cells");
    let batch = take_option(&mut args, "--batch");
    let text = take_spec(&mut args);
    let wide = args.last().is_some_and(|a| a == "wide");
    if wide {
        args.pop();
    }
    let args: Vec<usize> = args.iter().map(|a| a.parse().expect("a number")).collect();
    let epochs = args.first().copied().unwrap_or(20);
    threads::set_num_threads(args.get(1).copied().unwrap_or(1)).unwrap();
    let text = text.as_deref().unwrap_or(if wide { WIDE } else { NARROW });
    let mut spec = Spec::from_json(text).unwrap();
    spec.chunk_cells = cells.unwrap_or(spec.chunk_cells);
    let side = if wide { 20 } else { 16 };
    let lr = if wide { 0.06 } else { 0.05 }; // the learning rates of the presets these models come from
    let shape = GridShape {
        batch: batch.unwrap_or(if wide { 1 } else { 2 }),
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
