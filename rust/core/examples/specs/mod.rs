//! The model specs the examples run: two models of `logicars/presets.py`, a narrow
//! one (8 channels) and a wide one (128 channels; docs/performance.md names them).

/// The narrow model: 8 channels, 20 steps on 16x16, zero padding.
pub const NARROW: &str = r#"{"channels": 8, "periodic": false, "num_steps": 20,
    "loss_channels": [0], "perceive": {"n_kernels": 16, "layers": [9, 8, 4, 2],
    "connections": ["first_kernel", "unique", "unique"]},
    "update": {"layers": [264, 256, 256, 256, 256, 256, 256, 256, 256, 256, 256,
                          128, 64, 32, 16, 8, 8],
    "connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique",
                    "unique", "unique", "unique", "unique", "unique", "unique", "unique",
                    "unique", "unique"]}}"#;

/// The wide model: 128 channels, 12 steps on 20x20, periodic.
pub const WIDE: &str = r#"{"channels": 128, "periodic": true, "num_steps": 12,
    "loss_channels": [0], "perceive": {"n_kernels": 4, "layers": [9, 8, 4, 2, 1],
    "connections": ["first_kernel", "unique", "unique", "unique"]},
    "update": {"layers": [640, 512, 512, 512, 512, 512, 512, 512, 512, 256, 128],
    "connections": ["unique", "unique", "unique", "unique", "unique", "unique", "unique",
                    "unique", "unique", "unique"]}}"#;

/// Takes `--spec FILE` out of `args`: the text of a model spec's JSON, to run instead of
/// the narrow or wide model (Python writes a preset's:
/// `python -c "import logicars; print(logicars.get_preset('colored-g').spec.to_json())"`).
pub fn take_spec(args: &mut Vec<String>) -> Option<String> {
    let i = args.iter().position(|a| a == "--spec")?;
    let path = args.get(i + 1).cloned().expect("--spec FILE");
    args.drain(i..i + 2);
    Some(std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")))
}

/// Takes `name N` out of `args` (a number after the flag; panics without one): the
/// examples' `--cells N` and `--batch B`.
pub fn take_option(args: &mut Vec<String>, name: &str) -> Option<usize> {
    let i = args.iter().position(|a| a == name)?;
    let value = args.get(i + 1).and_then(|v| v.parse().ok());
    args.drain(i..(i + 2).min(args.len()));
    Some(value.unwrap_or_else(|| panic!("{name} N")))
}
