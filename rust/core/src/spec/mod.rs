//! The model specification (the fixtures' `config` JSON) and its validation; its
//! fields' table is [`schema`].

pub mod schema;

use serde::{Deserialize, Serialize};

use crate::error::{value_err, Error, Result};
use crate::memory;
use crate::relax::{Relax, INIT_PASS_LOGIT};
use crate::simd::{DEFAULT_CHUNK_CELLS, LANES, MAX_CHUNK_CELLS};
use crate::wiring::Wiring;

/// The perception block: `n_kernels` networks sharing one wiring per layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerceiveSpec {
    pub n_kernels: usize,
    pub layers: Vec<usize>,
    pub connections: Vec<Wiring>,
}

/// The update network: centre cell ++ perception -> next state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpdateSpec {
    pub layers: Vec<usize>,
    pub connections: Vec<Wiring>,
}

/// Everything that fixes the architecture and the training rule of a model. The
/// learning rate is the training's (`Model::train_step`); a config from before it moved
/// there still reads, its `lr` ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spec {
    pub channels: usize,
    pub periodic: bool,
    pub num_steps: usize,
    #[serde(rename = "async", default)]
    pub is_async: bool,
    #[serde(default)]
    pub fire_rate: Option<f32>,
    pub loss_channels: Vec<usize>,
    pub perceive: PerceiveSpec,
    pub update: UpdateSpec,
    /// How gates are relaxed in training; absent (and not written) for the notebook's
    /// softmax, so configs from before relaxations existed read as softmax.
    #[serde(default, skip_serializing_if = "Relax::is_softmax")]
    pub relax: Relax,
    /// Training rounds every state between steps to 0 or 1, straight-through (the last
    /// state, which the loss sees, stays relaxed); absent (and not written) when off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binarize_states: bool,
    /// With `binarize_states`, only the training rollouts of every `binarize_every`-th
    /// optimizer step round (those whose step count before the update is a multiple of
    /// it); the others run relaxed. 1 (absent, and not written): every step.
    #[serde(default = "every_step", skip_serializing_if = "is_every_step")]
    pub binarize_every: u64,
    /// Cells the engine computes together in one chunk, a multiple of 16 up to 128. The
    /// results per cell do not depend on it, but the coefficient gradients are summed
    /// chunk by chunk, so it sets the last bits of training. 64 (absent, and not
    /// written) unless a model is faster with another (docs/performance.md).
    #[serde(default = "default_chunk", skip_serializing_if = "is_default_chunk")]
    pub chunk_cells: usize,
    /// The logit of the pass-through gate (input A) in a fresh model, every other logit
    /// 0: how strongly a new network starts as the identity (residual initialisation,
    /// Petersen et al. 2024). 10 (absent, and not written): the notebook's. Only the
    /// 16-logit relaxations read it; a truth table starts from its own parameters, so a
    /// preset's value does not stop a run from choosing one.
    #[serde(
        default = "default_init_logit",
        skip_serializing_if = "is_default_init_logit"
    )]
    pub init_logit: f32,
}

fn default_init_logit() -> f32 {
    INIT_PASS_LOGIT
}

fn is_default_init_logit(logit: &f32) -> bool {
    *logit == INIT_PASS_LOGIT
}

fn default_chunk() -> usize {
    DEFAULT_CHUNK_CELLS
}

fn is_default_chunk(cells: &usize) -> bool {
    *cells == DEFAULT_CHUNK_CELLS
}

fn every_step() -> u64 {
    1
}

fn is_every_step(every: &u64) -> bool {
    *every == 1
}

impl Spec {
    /// Parses the fixture `config` JSON and validates it.
    pub fn from_json(text: &str) -> Result<Spec> {
        let spec: Spec = match serde_json::from_str(text) {
            Ok(s) => s,
            Err(e) => match schema::field_error(text) {
                Some(m) => return value_err!("{m}"),
                None => return value_err!("config: {e}"),
            },
        };
        spec.validate()?;
        Ok(spec)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a Spec always serialises")
    }

    /// Whether the training rollout of optimizer step `t` (the step count before its
    /// update) rounds its states (`binarize_states`, `binarize_every`).
    pub fn binarizes_step(&self, t: u64) -> bool {
        self.binarize_states && t.is_multiple_of(self.binarize_every)
    }

    /// The share of gates that run hard in the training step of optimizer step `t`: the
    /// relaxation's (`truth-table`'s `hard_fraction` after its warmup), but none in a
    /// relaxed step of a model that rounds its states.
    pub fn hard_fraction(&self, t: u64) -> f64 {
        if self.binarize_states && !self.binarizes_step(t) {
            0.0
        } else {
            self.relax.hard_fraction(t)
        }
    }

    /// Width of the last perception layer (S in the design notes).
    pub fn perceive_out(&self) -> usize {
        *self.perceive.layers.last().unwrap_or(&0)
    }

    /// Fire rate when asynchronous, `None` when every cell updates every step.
    pub fn async_fire_rate(&self) -> Option<f32> {
        if self.is_async {
            Some(self.fire_rate.unwrap_or(0.6))
        } else {
            None
        }
    }

    /// Checks every field and that the layers chain together.
    pub fn validate(&self) -> Result<()> {
        let c = self.channels;
        if c == 0 {
            return value_err!("channels must be >= 1, got 0");
        }
        if self.num_steps == 0 {
            return value_err!("num_steps must be >= 1, got 0");
        }
        if self.perceive.n_kernels == 0 {
            return value_err!("perceive.n_kernels must be >= 1, got 0");
        }
        if let Some(&first) = self.perceive.layers.first() {
            if first != 9 {
                return value_err!("perceive.layers[0] must be 9 (the 3x3 patch), got {first}");
            }
        }
        check_layers(
            "perceive",
            &self.perceive.layers,
            &self.perceive.connections,
        )?;
        check_layers("update", &self.update.layers, &self.update.connections)?;
        let expected_in = c.saturating_add(
            c.saturating_mul(self.perceive_out())
                .saturating_mul(self.perceive.n_kernels),
        );
        if self.update.layers[0] != expected_in {
            return value_err!(
                "update.layers[0] must be channels + channels*perceive_out*n_kernels = {expected_in}, got {}",
                self.update.layers[0]
            );
        }
        let last = *self.update.layers.last().unwrap();
        if last != c {
            return value_err!("update.layers[-1] must equal channels = {c}, got {last}");
        }
        if self.loss_channels.is_empty() {
            return value_err!("loss_channels must name at least one channel");
        }
        for (i, &ch) in self.loss_channels.iter().enumerate() {
            if ch >= c {
                return value_err!("loss_channels[{i}] = {ch} is not a channel (channels = {c})");
            }
            if self.loss_channels[..i].contains(&ch) {
                return value_err!("loss_channels lists channel {ch} twice");
            }
        }
        if let Some(rate) = self.async_fire_rate() {
            if !(rate > 0.0 && rate <= 1.0) {
                return value_err!("fire_rate must be in (0, 1], got {rate}");
            }
        }
        if self.binarize_every == 0 {
            return value_err!("binarize_every must be >= 1, got 0");
        }
        if self.binarize_every != 1 && !self.binarize_states {
            return value_err!("binarize_every applies only with binarize_states");
        }
        let w = self.chunk_cells;
        if w == 0 || !w.is_multiple_of(LANES) || w > MAX_CHUNK_CELLS {
            return value_err!(
                "chunk_cells must be a multiple of {LANES} from {LANES} to {MAX_CHUNK_CELLS}, got {w}"
            );
        }
        if !(self.init_logit.is_finite() && self.init_logit >= 0.0) {
            return value_err!(
                "init_logit must be a finite number >= 0, got {}",
                self.init_logit
            );
        }
        self.relax.validate()?;
        self.check_size()
    }

    /// Refuses, before anything is allocated, a model whose logits, gradient and AdamW
    /// moments (16 or 4 floats each per gate) would exceed `LOGICARS_MAX_MEMORY_MB`.
    fn check_size(&self) -> Result<()> {
        let sum = |w: &[usize]| w.iter().fold(0usize, |a, &b| a.saturating_add(b));
        let gates = sum(&self.perceive.layers[1..])
            .saturating_mul(self.perceive.n_kernels)
            .saturating_add(sum(&self.update.layers[1..]));
        let per_gate = 4 * self.relax.params_per_gate() * std::mem::size_of::<f32>();
        let bytes = gates.saturating_mul(per_gate);
        if memory::over_cap(bytes) {
            return Err(Error::Memory(format!(
                "a model of {gates} gates needs about {} MB for its logits, gradient and \
                 AdamW state, more than the limit of {} MB (set LOGICARS_MAX_MEMORY_MB to \
                 raise it)",
                bytes >> 20,
                memory::cap_mb()
            )));
        }
        Ok(())
    }
}

fn check_layers(name: &str, layers: &[usize], connections: &[Wiring]) -> Result<()> {
    if layers.len() < 2 {
        return value_err!(
            "{name}.layers needs an input width and at least one layer, got {layers:?}"
        );
    }
    if let Some(i) = layers.iter().position(|&w| w == 0) {
        return value_err!("{name}.layers[{i}] must be >= 1, got 0");
    }
    if connections.len() != layers.len() - 1 {
        return value_err!(
            "{name}.connections needs one wiring per layer ({}), got {}",
            layers.len() - 1,
            connections.len()
        );
    }
    for (i, (&wiring, pair)) in connections.iter().zip(layers.windows(2)).enumerate() {
        crate::wiring::check(wiring, pair[0], pair[1])
            .map_err(|e| crate::error::Error::Value(format!("{name} layer {i}: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{"channels": 2, "periodic": false, "num_steps": 3, "async": false,
        "fire_rate": null, "loss_channels": [0],
        "perceive": {"n_kernels": 2, "layers": [9, 8, 4, 2],
                     "connections": ["first_kernel", "unique", "unique"]},
        "update": {"layers": [10, 8, 4, 2], "connections": ["unique", "unique", "unique"]}}"#;

    fn message(json: &str) -> String {
        match Spec::from_json(json) {
            Err(Error::Value(m)) => m,
            other => panic!("expected a value error, got {other:?}"),
        }
    }

    #[test]
    fn valid_config_parses() {
        assert_eq!(Spec::from_json(SMALL).unwrap().channels, 2);
    }

    #[test]
    fn a_config_with_a_learning_rate_still_reads() {
        let old = SMALL.replace(
            r#""loss_channels": [0],"#,
            r#""loss_channels": [0], "lr": 0.06,"#,
        );
        assert_ne!(old, SMALL);
        assert_eq!(
            Spec::from_json(&old).unwrap(),
            Spec::from_json(SMALL).unwrap()
        );
        assert!(!Spec::from_json(&old).unwrap().to_json().contains("lr"));
    }

    #[test]
    fn type_errors_name_the_field() {
        let cases = [
            (
                r#""channels": 2"#,
                r#""channels": -2"#,
                "config.channels: expected a non-negative integer, got -2",
            ),
            (
                r#""periodic": false"#,
                r#""periodic": "no""#,
                "config.periodic: expected true or false",
            ),
            (
                r#""loss_channels": [0]"#,
                r#""loss_channels": [0, 1.5]"#,
                "config.loss_channels[1]",
            ),
            (
                r#""layers": [9, 8, 4, 2]"#,
                r#""layers": 9"#,
                "config.perceive.layers: expected a list",
            ),
            (
                r#""connections": ["unique", "unique", "unique"]"#,
                r#""connections": ["unique", "bogus", "unique"]"#,
                "config.update.connections[1]: expected one of",
            ),
        ];
        for (from, to, want) in cases {
            let json = SMALL.replacen(from, to, 1);
            assert_ne!(json, SMALL, "{from}");
            let m = message(&json);
            assert!(m.contains(want), "{m:?} lacks {want:?}");
        }
        assert!(message("[1, 2]").contains("expected a JSON object"));
        assert!(message("{").starts_with("config: "));
    }

    #[test]
    fn huge_models_are_refused_before_allocating() {
        let json = SMALL
            .replacen("[10, 8, 4, 2]", "[10, 1099511627776, 2]", 1)
            .replacen(
                r#"["unique", "unique", "unique"]}}"#,
                r#"["random", "random"]}}"#,
                1,
            );
        match Spec::from_json(&json) {
            Err(Error::Memory(m)) => assert!(m.contains("1099511627806 gates"), "{m}"),
            other => panic!("expected a memory error, got {other:?}"),
        }
    }

    #[test]
    fn first_perceive_layer_must_be_the_patch() {
        let m = message(&SMALL.replacen("[9, 8, 4, 2]", "[8, 8, 4, 2]", 1));
        assert!(m.starts_with("perceive.layers[0] must be 9"), "{m}");
    }
}
