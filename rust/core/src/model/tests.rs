use super::*;
use crate::error::Error;
use crate::gates::N_OPS;

fn async_model() -> Model {
    let json = r#"{"channels": 2, "periodic": true, "num_steps": 2, "async": true,
        "fire_rate": 0.5, "loss_channels": [0],
        "perceive": {"n_kernels": 1, "layers": [9, 8, 4],
                     "connections": ["first_kernel", "unique"]},
        "update": {"layers": [10, 6, 4, 2],
                   "connections": ["unique", "unique", "unique"]}}"#;
    Model::new(Spec::from_json(json).unwrap(), 7).unwrap()
}

const SHAPE: GridShape = GridShape {
    batch: 1,
    height: 3,
    width: 4,
};

#[test]
fn refused_calls_draw_no_masks() {
    let mut m = async_model();
    let mut x = vec![0.0f32; 24];
    x[5] = f32::NAN;
    let soft = Decoding::Soft;
    assert!(matches!(
        m.rollout(&x, SHAPE, 2, soft, None, false),
        Err(Error::Value(_))
    ));
    x[5] = 2.0;
    assert!(matches!(
        m.rollout(&x, SHAPE, 2, soft, None, false),
        Err(Error::Value(_))
    ));
    x[5] = 1.0;
    assert!(matches!(
        m.rollout(&x, SHAPE, 0, soft, None, false),
        Err(Error::Value(_))
    ));
    let y = vec![3.0f32; 24];
    assert!(matches!(
        m.train_step(&x, &y, SHAPE, None, 0.05, optim::WEIGHT_DECAY),
        Err(Error::Value(_))
    ));
    let y = vec![1.0f32; 24];
    for lr in [f32::NAN, f32::INFINITY, 0.0, -0.1] {
        match m.train_step(&x, &y, SHAPE, None, lr, optim::WEIGHT_DECAY) {
            Err(Error::Value(msg)) => assert!(msg.starts_with("lr must be a finite number > 0")),
            other => panic!("lr {lr}: expected a value error, got {other:?}"),
        }
    }
    for wd in [f32::NAN, f32::INFINITY, -0.01] {
        match m.train_step(&x, &y, SHAPE, None, 0.05, wd) {
            Err(Error::Value(msg)) => {
                assert!(msg.starts_with("weight_decay must be a finite number >= 0"))
            }
            other => panic!("weight decay {wd}: expected a value error, got {other:?}"),
        }
    }
    assert_eq!(m.mask_draws, 0);
    m.rollout(&x, SHAPE, 2, soft, None, false).unwrap();
    assert_eq!(m.mask_draws, 1);
}

/// A small synchronous model with two loss channels.
const SYNC_SPEC: &str = r#"{"channels": 2, "periodic": true, "num_steps": 2, "async": false,
    "loss_channels": [0, 1],
    "perceive": {"n_kernels": 2, "layers": [9, 8, 4],
                 "connections": ["first_kernel", "unique"]},
    "update": {"layers": [18, 12, 6, 4, 2],
               "connections": ["unique", "unique", "unique", "unique"]}}"#;

/// The hard circuit is cached across steps, but follows the logits: after new ones,
/// a step's hard loss is that of a fresh model holding them.
#[test]
fn the_hard_loss_follows_changed_logits() {
    let spec = Spec::from_json(SYNC_SPEC).unwrap();
    let mut m = Model::new(spec.clone(), 7).unwrap();
    let x: Vec<f32> = (0..24).map(|i| (i % 3 == 0) as u8 as f32).collect();
    let y: Vec<f32> = (0..24).map(|i| (i % 3 == 1) as u8 as f32).collect();
    let (_, first) = m
        .train_step(&x, &y, SHAPE, None, 0.05, optim::WEIGHT_DECAY)
        .unwrap();
    // Every gate constant 1 (op 15): every output 1, a hard loss of 16 zeros of y.
    let logits: Vec<f32> = (0..m.logits().len())
        .map(|i| if i % N_OPS == 15 { 5.0 } else { 0.0 })
        .collect();
    m.set_logits(&logits).unwrap();
    let (perceive, update) = (m.perceive_wires().to_vec(), m.update_wires().to_vec());
    let mut fresh = Model::from_parts(spec, perceive, update, logits, 7).unwrap();
    let (_, want) = fresh
        .train_step(&x, &y, SHAPE, None, 0.05, optim::WEIGHT_DECAY)
        .unwrap();
    assert_eq!(want, 16.0);
    assert_ne!(want, first, "the new logits must change the hard loss");
    assert_eq!(
        m.train_step(&x, &y, SHAPE, None, 0.05, optim::WEIGHT_DECAY)
            .unwrap()
            .1,
        want
    );
}

/// The hard loss unpacks only the loss channels of the bit-sliced run: it is the
/// squared error of the float engine's hard rollout on those channels, with the loss
/// channels in any order and the target given for every channel or for those only.
#[test]
fn the_hard_loss_is_the_hard_rollouts_error_on_the_loss_channels() {
    let json = r#"{"channels": 3, "periodic": false, "num_steps": 3, "async": false,
        "loss_channels": [2, 0],
        "perceive": {"n_kernels": 2, "layers": [9, 8, 4],
                     "connections": ["first_kernel", "unique"]},
        "update": {"layers": [27, 16, 8, 4, 3],
                   "connections": ["unique", "unique", "unique", "unique"]}}"#;
    let spec = Spec::from_json(json).unwrap();
    let m = Model::new(spec.clone(), 3).unwrap();
    // Logits that pick a spread of ops, so that the channels differ.
    let logits: Vec<f32> = (0..m.logits().len())
        .map(|i| ((i * 7919) % 23) as f32 / 4.0)
        .collect();
    let model = || {
        let (perceive, update) = (m.perceive_wires().to_vec(), m.update_wires().to_vec());
        Model::from_parts(spec.clone(), perceive, update, logits.clone(), 3).unwrap()
    };
    let cells = SHAPE.cells();
    let x: Vec<f32> = (0..cells * 3).map(|i| (i % 5 < 2) as u8 as f32).collect();
    let out = model()
        .rollout(&x, SHAPE, 3, Decoding::Hard, None, false)
        .unwrap();
    assert!((0..cells).any(|n| out[n * 3] != out[n * 3 + 2]));
    // Targets the rollout meets on both loss channels (and misses on channel 1, not a
    // loss channel), then misses in every cell on channel 2 too: hard losses 0 and one
    // per cell, with the target given for every channel, then for the loss channels.
    let mut y = out.clone();
    for miss_2 in [false, true] {
        for n in 0..cells {
            y[n * 3 + 1] = 1.0 - out[n * 3 + 1];
            y[n * 3 + 2] = if miss_2 {
                1.0 - out[n * 3 + 2]
            } else {
                out[n * 3 + 2]
            };
        }
        let y_loss: Vec<f32> = (0..cells).flat_map(|n| [y[n * 3 + 2], y[n * 3]]).collect();
        for target in [&y, &y_loss] {
            let (_, hard) = model()
                .train_step(&x, target, SHAPE, None, 0.05, optim::WEIGHT_DECAY)
                .unwrap();
            assert_eq!(hard, if miss_2 { cells as f64 } else { 0.0 });
        }
    }
}

#[test]
fn absurd_step_counts_are_refused_before_allocating() {
    let mut m = async_model();
    let x = vec![0.0f32; 24];
    for steps in [1usize << 40, usize::MAX / 2, usize::MAX] {
        let r = m.rollout(&x, SHAPE, steps, Decoding::Hard, None, true);
        assert!(matches!(r, Err(Error::Memory(_))), "{steps}: {r:?}");
    }
    assert_eq!(m.mask_draws, 0);
}

fn sync_model_with_random_logits() -> Model {
    let mut m = Model::new(Spec::from_json(SYNC_SPEC).unwrap(), 3).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let logits: Vec<f32> = (0..m.logits().len())
        .map(|_| rng.random::<f32>() * 4.0 - 2.0)
        .collect();
    m.set_logits(&logits).unwrap();
    m
}

/// A loss over several states is the mean of each state's own loss, and so is its
/// gradient: the loss gradient of every state before the last joins the one coming back
/// from later steps.
#[test]
fn a_loss_over_several_states_is_the_mean_of_theirs() {
    let mut m = sync_model_with_random_logits();
    let x: Vec<f32> = (0..24).map(|i| (i % 5 < 2) as u8 as f32).collect();
    let y: Vec<f32> = (0..24).map(|i| (i % 3 == 1) as u8 as f32).collect();
    let at = LossSteps { steps: 3, from: 1 };
    let (loss, grad) = m.soft_loss_and_grad(&x, &y, 2, SHAPE, None, at).unwrap();
    let mut want_loss = 0.0;
    let mut want_grad = vec![0f64; grad.len()];
    for t in 1..=3 {
        let (l, g) = m
            .soft_loss_and_grad(&x, &y, 2, SHAPE, None, LossSteps::last(t))
            .unwrap();
        want_loss += l / 3.0;
        for (w, v) in want_grad.iter_mut().zip(&g) {
            *w += *v as f64 / 3.0;
        }
    }
    assert!(
        (loss - want_loss).abs() < 1e-9 * want_loss.max(1.0),
        "{loss} vs {want_loss}"
    );
    let scale = want_grad.iter().fold(0f64, |a, v| a.max(v.abs()));
    assert!(scale > 0.0);
    for (i, (g, w)) in grad.iter().zip(&want_grad).enumerate() {
        assert!(
            (*g as f64 - w).abs() < 1e-5 * scale,
            "logit {i}: {g} vs {w}"
        );
    }
    // Reading the middle states matters: the last state's loss alone differs.
    let (last, _) = m
        .soft_loss_and_grad(&x, &y, 2, SHAPE, None, LossSteps::last(3))
        .unwrap();
    assert_ne!(last, loss);
}

/// The bit-sliced hard loss over several states, and the last state it keeps, are the
/// float engine's (hard gates).
#[test]
fn the_bit_sliced_hard_loss_over_several_states_is_the_float_one() {
    let mut m = sync_model_with_random_logits();
    let shape = GridShape {
        batch: 2,
        height: 3,
        width: 4,
    };
    let x: Vec<f32> = (0..48).map(|i| (i % 7 < 3) as u8 as f32).collect();
    let y: Vec<f32> = (0..48).map(|i| (i % 3 == 1) as u8 as f32).collect();
    for at in [LossSteps::last(3), LossSteps { steps: 6, from: 2 }] {
        let bits = loss::hard_bits(&x, None).unwrap().0;
        let circuit = m.compile_circuit();
        let spec = m.spec.clone();
        let sliced =
            loss::bit_sliced_hard_loss(&spec, &circuit, (&bits, None), &y, 2, shape, at, true)
                .unwrap();
        let float = m.float_hard_loss(&x, &y, 2, shape, None, at, true).unwrap();
        assert_eq!(sliced, float);
        assert!(sliced.1.unwrap().iter().all(|&v| v == 0.0 || v == 1.0));
    }
}

#[test]
fn loss_states_outside_the_rollout_are_refused() {
    let mut m = sync_model_with_random_logits();
    let x = vec![0f32; 24];
    let y = vec![0f32; 24];
    let settings = optim::StepSettings::new(0.05, 0.0);
    for at in [
        LossSteps { steps: 3, from: 0 },
        LossSteps { steps: 3, from: 4 },
    ] {
        let step = m.train_step_at(&x, &y, SHAPE, None, settings, at, false);
        assert!(matches!(step, Err(Error::Value(_))), "{at:?}");
    }
    let at = LossSteps { steps: 3, from: 2 };
    let out = m
        .train_step_at(&x, &y, SHAPE, None, settings, at, true)
        .unwrap();
    assert_eq!(out.last_state.unwrap().len(), 24);
}
