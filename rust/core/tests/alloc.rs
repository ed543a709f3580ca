//! Proves that nothing in the training hot loop allocates: a counting global allocator
//! sees the same number of allocations per `train_step` whether the epoch runs 2 or 20
//! CA steps over 64 or 256 cells (1 or 4 chunks), so none is per step, chunk or gate.
//! (The few per epoch are the step's setup: softmax table, hard circuit, gradient.)
//! This file is its own test binary, so no other test allocates meanwhile.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use logicars_core::optim::WEIGHT_DECAY;
use logicars_core::{threads, GridShape, Model, Spec};

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A small model of 8 channels (debug builds run this test too).
fn spec(steps: usize, fire_rate: Option<f32>) -> Spec {
    let asynchronous = match fire_rate {
        Some(r) => format!(r#""async": true, "fire_rate": {r}"#),
        None => r#""async": false"#.to_string(),
    };
    Spec::from_json(&format!(
        r#"{{"channels": 8, "periodic": false, "num_steps": {steps}, {asynchronous},
            "loss_channels": [0],
            "perceive": {{"n_kernels": 4, "layers": [9, 8, 4, 2],
                          "connections": ["first_kernel", "unique", "unique"]}},
            "update": {{"layers": [72, 36, 18, 9, 8],
                        "connections": ["unique", "unique", "unique", "unique"]}}}}"#
    ))
    .unwrap()
}

/// Allocations of one steady-state `train_step`: the fewest over 6 epochs after one
/// warm-up. (Rayon's job queue allocates a block every 63 jobs handed to the pool,
/// a few per epoch; over 6 epochs that happens at most once, so the fewest is exact.)
fn allocations_per_epoch(steps: usize, side: usize, batch: usize, fire_rate: Option<f32>) -> usize {
    let shape = GridShape {
        batch,
        height: side,
        width: side,
    };
    let mut model = Model::new(spec(steps, fire_rate), 5).unwrap();
    let n = shape.cells() * 8;
    let x: Vec<f32> = (0..n).map(|i| (i % 3 == 0) as u8 as f32).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 5 < 2) as u8 as f32).collect();
    let mut step = || {
        model
            .train_step(&x, &y, shape, None, 0.05, WEIGHT_DECAY)
            .unwrap()
    };
    step();
    (0..6)
        .map(|_| {
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            step();
            ALLOCATIONS.load(Ordering::SeqCst) - before
        })
        .min()
        .unwrap()
}

#[test]
fn allocations_per_epoch_do_not_grow_with_steps_or_cells() {
    for t in [1, 2] {
        threads::set_num_threads(t).unwrap();
        for fire_rate in [None, Some(0.6)] {
            let small = allocations_per_epoch(2, 8, 1, fire_rate);
            let large = allocations_per_epoch(20, 16, 1, fire_rate);
            println!("{t} threads, fire rate {fire_rate:?}: {small} and {large} allocations");
            assert_eq!(
                small, large,
                "{t} threads, fire rate {fire_rate:?}: 2 steps over 64 cells allocate {small} \
                 times, 20 steps over 256 cells {large}"
            );
        }
    }
}
