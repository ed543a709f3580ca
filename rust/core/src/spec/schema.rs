//! The config JSON's fields: where each is, what its values must be, and what an absent
//! one means. One table serves the messages that name a field of the wrong type
//! (serde_json's own give a line and column, not the field) and the schema the Python
//! package reads (`logicars._core.CONFIG_FIELDS`).

use std::fmt;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::relax::{self, Relax, INIT_PASS_LOGIT};
use crate::simd::DEFAULT_CHUNK_CELLS;
use crate::wiring::{self, Wiring};

/// What each value of a field must be, as a message says it.
#[derive(Debug, Clone, Copy)]
pub enum Expected {
    /// Described in words.
    Text(&'static str),
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expected::Text(text) => f.write_str(text),
            Expected::OneOf(names) => {
                let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
                write!(f, "one of {}", quoted.join(", "))
            }
        }
    }
}

/// What a config that leaves a field out means.
#[derive(Debug, Clone, Copy)]
pub enum Absent {
    /// It must be given (wherever its object is).
    Required,
    /// This value.
    Default(fn() -> Value),
    /// The relaxation's own default, where its mode takes the parameter (`Relax`).
    ModeDefault,
}

/// A field of the config JSON: where it is, whether it is a list (then `expected` is
/// what each item must be), what a value must be, and what an absent one means.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub path: &'static [&'static str],
    pub list: bool,
    valid: fn(&Value) -> bool,
    pub expected: Expected,
    pub absent: Absent,
}

impl Field {
    /// The dotted name a message gives, e.g. `perceive.layers`.
    pub fn name(&self) -> String {
        self.path.join(".")
    }
}

const fn one(
    path: &'static [&'static str],
    valid: fn(&Value) -> bool,
    expected: Expected,
    absent: Absent,
) -> Field {
    Field {
        path,
        list: false,
        valid,
        expected,
        absent,
    }
}

const fn list(
    path: &'static [&'static str],
    valid: fn(&Value) -> bool,
    expected: Expected,
) -> Field {
    Field {
        path,
        list: true,
        valid,
        expected,
        absent: Absent::Required,
    }
}

const COUNT: Expected = Expected::Text("a non-negative integer");
const BOOL: Expected = Expected::Text("true or false");
const OBJECT: Expected = Expected::Text("an object");
const NUMBER: Expected = Expected::Text("a number");
const RELAX_MODE: Expected = Expected::OneOf(&relax::MODES);
const WIRING: Expected = Expected::OneOf(&wiring::NAMES);

use Absent::{ModeDefault, Required};

/// Every field of the config, in the order a message should report them. (`lr`, which
/// configs from before it became a training option hold, is read and ignored.)
pub const FIELDS: &[Field] = &[
    one(&["channels"], is_count, COUNT, Required),
    one(&["num_steps"], is_count, COUNT, Required),
    one(&["periodic"], Value::is_boolean, BOOL, Required),
    one(&["async"], Value::is_boolean, BOOL, Absent::Default(no)),
    one(
        &["fire_rate"],
        is_rate,
        Expected::Text("a number or null"),
        Absent::Default(null),
    ),
    one(
        &["relax"],
        Value::is_object,
        OBJECT,
        Absent::Default(softmax),
    ),
    one(&["relax", "mode"], is_relax_mode, RELAX_MODE, Required),
    one(&["relax", "tau"], Value::is_number, NUMBER, ModeDefault),
    one(&["relax", "noise"], Value::is_number, NUMBER, ModeDefault),
    one(&["relax", "warmup"], is_count, COUNT, ModeDefault),
    one(&["relax", "steps"], is_count, COUNT, ModeDefault),
    one(
        &["relax", "hard_fraction"],
        Value::is_number,
        NUMBER,
        ModeDefault,
    ),
    list(&["loss_channels"], is_count, COUNT),
    one(&["perceive"], Value::is_object, OBJECT, Required),
    one(&["perceive", "n_kernels"], is_count, COUNT, Required),
    list(&["perceive", "layers"], is_count, COUNT),
    list(&["perceive", "connections"], is_wiring, WIRING),
    one(&["update"], Value::is_object, OBJECT, Required),
    list(&["update", "layers"], is_count, COUNT),
    list(&["update", "connections"], is_wiring, WIRING),
    one(
        &["binarize_states"],
        Value::is_boolean,
        BOOL,
        Absent::Default(no),
    ),
    one(
        &["binarize_every"],
        is_count,
        COUNT,
        Absent::Default(every_step),
    ),
    one(
        &["chunk_cells"],
        is_count,
        COUNT,
        Absent::Default(chunk_cells),
    ),
    one(
        &["init_logit"],
        Value::is_number,
        NUMBER,
        Absent::Default(init_logit),
    ),
];

fn no() -> Value {
    json!(false)
}

fn null() -> Value {
    Value::Null
}

fn softmax() -> Value {
    json!({ "mode": "softmax" })
}

fn every_step() -> Value {
    json!(1)
}

fn chunk_cells() -> Value {
    json!(DEFAULT_CHUNK_CELLS)
}

fn init_logit() -> Value {
    json!(INIT_PASS_LOGIT)
}

fn is_relax_mode(v: &Value) -> bool {
    Relax::deserialize(&json!({ "mode": v })).is_ok()
}

fn is_count(v: &Value) -> bool {
    v.as_u64().is_some_and(|n| usize::try_from(n).is_ok())
}

fn is_rate(v: &Value) -> bool {
    v.is_null() || v.is_number()
}

fn is_wiring(v: &Value) -> bool {
    Wiring::deserialize(v).is_ok()
}

/// The first field of `text` with a value of the wrong type, named, with what it must
/// be.
pub(super) fn field_error(text: &str) -> Option<String> {
    let root: Value = serde_json::from_str(text).ok()?;
    if !root.is_object() {
        return Some(format!("config: expected a JSON object, got {root}"));
    }
    for f in FIELDS {
        let Some(value) = f.path.iter().try_fold(&root, |v, key| v.get(key)) else {
            continue;
        };
        let name = f.name();
        if !f.list {
            if !(f.valid)(value) {
                return Some(format!(
                    "config.{name}: expected {}, got {value}",
                    f.expected
                ));
            }
            continue;
        }
        let Some(items) = value.as_array() else {
            return Some(format!("config.{name}: expected a list, got {value}"));
        };
        if let Some((i, bad)) = items.iter().enumerate().find(|(_, v)| !(f.valid)(v)) {
            return Some(format!(
                "config.{name}[{i}]: expected {}, got {bad}",
                f.expected
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::spec::Spec;

    /// A config of every required field.
    fn required() -> Value {
        json!({"channels": 2, "periodic": false, "num_steps": 3, "loss_channels": [0],
               "perceive": {"n_kernels": 2, "layers": [9, 8, 4, 2],
                            "connections": ["first_kernel", "unique", "unique"]},
               "update": {"layers": [10, 8, 4, 2],
                          "connections": ["unique", "unique", "unique"]}})
    }

    fn parse(config: &Value) -> crate::error::Result<Spec> {
        Spec::from_json(&config.to_string())
    }

    /// `config` with the field at `path` set to `value`, or removed (None).
    fn with(config: &Value, path: &[&str], value: Option<Value>) -> Value {
        let mut config = config.clone();
        let (last, parents) = path.split_last().unwrap();
        let mut at = &mut config;
        for key in parents {
            at = at.get_mut(*key).unwrap();
        }
        let object = at.as_object_mut().unwrap();
        match value {
            Some(v) => object.insert(last.to_string(), v),
            None => object.remove(*last),
        };
        config
    }

    #[test]
    fn a_default_is_what_an_absent_field_reads_as() {
        let base = parse(&required()).unwrap();
        for f in FIELDS {
            if let Absent::Default(value) = f.absent {
                let given = with(&required(), f.path, Some(value()));
                assert_eq!(parse(&given).unwrap(), base, "{}", f.name());
            }
        }
    }

    #[test]
    fn a_required_field_cannot_be_left_out() {
        // Where a relaxation's fields are, its object is given.
        let config = with(&required(), &["relax"], Some(softmax()));
        for f in FIELDS.iter().filter(|f| matches!(f.absent, Required)) {
            let without = with(&config, f.path, None);
            assert!(parse(&without).is_err(), "{} may be left out", f.name());
        }
    }

    /// Every field that a spec writes is in the table, and every field of the table is
    /// written by some spec.
    #[test]
    fn the_table_lists_every_field() {
        let relaxations = [
            json!({"mode": "gumbel-st", "tau": 2.0, "noise": 0.5, "warmup": 3}),
            json!({"mode": "anneal", "tau": 0.5, "warmup": 3, "steps": 100}),
            json!({"mode": "truth-table", "hard_fraction": 0.5, "warmup": 3}),
        ];
        let mut written = BTreeSet::new();
        for relax in relaxations {
            let mut config = with(&required(), &["relax"], Some(relax.clone()));
            for (key, value) in [
                ("async", json!(true)),
                ("fire_rate", json!(0.5)),
                ("binarize_states", json!(true)),
                ("binarize_every", json!(2)),
                ("chunk_cells", json!(80)),
            ] {
                config = with(&config, &[key], Some(value));
            }
            if relax["mode"] != "truth-table" {
                // truth tables start from their own parameters
                config = with(&config, &["init_logit"], Some(json!(5.0)));
            }
            let spec: Value = serde_json::from_str(&parse(&config).unwrap().to_json()).unwrap();
            for (key, value) in spec.as_object().unwrap() {
                written.insert(key.clone());
                if let Some(inner) = value.as_object() {
                    written.extend(inner.keys().map(|k| format!("{key}.{k}")));
                }
            }
        }
        let listed: BTreeSet<String> = FIELDS.iter().map(Field::name).collect();
        assert_eq!(written, listed);
    }
}
