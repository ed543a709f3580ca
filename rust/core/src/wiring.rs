//! How each gate layer picks its inputs.

use rand::seq::SliceRandom;
use rand::RngExt;
use rand_chacha::ChaCha8Rng;

use crate::error::{value_err, Result};
use serde::{Deserialize, Serialize};

/// How a gate layer picks the two inputs of each gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Wiring {
    /// First perception layer: a = a permutation of the 8 neighbours, b = the centre.
    FirstKernel,
    /// The notebook's `get_unique_connections` followed by a random permutation.
    Unique,
    /// Two distinct random inputs per gate.
    Random,
}

/// Every wiring's name as the config JSON spells it, in `Wiring`'s order.
pub const NAMES: [&str; 3] = ["first_kernel", "unique", "random"];

/// Inputs of one gate layer: gate `j` reads `a[j]` and `b[j]` of the previous layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wires {
    pub a: Vec<u32>,
    pub b: Vec<u32>,
}

impl Wires {
    pub fn len(&self) -> usize {
        self.a.len()
    }

    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// Checks that the layer has `out` gates reading inputs below `in_width`.
    pub fn check(&self, in_width: usize, out: usize, name: &str) -> Result<()> {
        if self.a.len() != out || self.b.len() != out {
            return value_err!(
                "{name}: expected {out} wires per row, got a: {}, b: {}",
                self.a.len(),
                self.b.len()
            );
        }
        for (row, v) in [("a", &self.a), ("b", &self.b)] {
            if let Some((j, &i)) = v.iter().enumerate().find(|(_, &i)| i as usize >= in_width) {
                return value_err!(
                    "{name}: wire {row}[{j}] = {i} is not an input (input width {in_width})"
                );
            }
        }
        Ok(())
    }
}

/// Checks that `wiring` can connect `in_width` inputs to `out` gates.
pub fn check(wiring: Wiring, in_width: usize, out: usize) -> Result<()> {
    match wiring {
        Wiring::FirstKernel if in_width != 9 || out != 8 => {
            value_err!("first_kernel wiring maps the 9-cell patch to 8 gates, got {in_width} -> {out}")
        }
        Wiring::Unique if 2 * out < in_width => value_err!(
            "unique wiring needs 2*out >= in so every input is used, got in {in_width}, out {out}"
        ),
        Wiring::Unique if in_width * (in_width - 1) / 2 < out => value_err!(
            "unique wiring: {in_width} inputs give only {} distinct pairs, fewer than out = {out}; use random",
            in_width * (in_width - 1) / 2
        ),
        _ => Ok(()),
    }
}

/// The notebook's `get_unique_connections`, before its random permutation: pairs
/// (0,1), (2,3), ...; then (1,2), (3,4), ...; then (i, i+d) for d = 2, 3, ...
/// The first `out` pairs are kept. Every input appears when `2·out >= in`.
pub fn unique_pairs(in_width: usize, out: usize) -> Result<Wires> {
    check(Wiring::Unique, in_width, out)?;
    let mut a = Vec::with_capacity(out);
    let mut b = Vec::with_capacity(out);
    let mut push = |i: usize, j: usize| {
        if a.len() < out {
            a.push(i as u32);
            b.push(j as u32);
        }
    };
    for i in (0..in_width.saturating_sub(1)).step_by(2) {
        push(i, i + 1);
    }
    for i in (1..in_width.saturating_sub(1)).step_by(2) {
        push(i, i + 1);
    }
    for offset in 2..in_width {
        for i in 0..in_width - offset {
            push(i, i + offset);
        }
    }
    Ok(Wires { a, b })
}

/// Draws the wires of one layer.
pub fn init(wiring: Wiring, in_width: usize, out: usize, rng: &mut ChaCha8Rng) -> Result<Wires> {
    check(wiring, in_width, out)?;
    Ok(match wiring {
        Wiring::FirstKernel => {
            let mut a: Vec<u32> = vec![0, 1, 2, 3, 5, 6, 7, 8];
            a.shuffle(rng);
            Wires { a, b: vec![4; 8] }
        }
        Wiring::Unique => {
            let pairs = unique_pairs(in_width, out)?;
            let mut order: Vec<usize> = (0..out).collect();
            order.shuffle(rng);
            Wires {
                a: order.iter().map(|&j| pairs.a[j]).collect(),
                b: order.iter().map(|&j| pairs.b[j]).collect(),
            }
        }
        Wiring::Random => {
            let n = in_width as u32;
            let mut a = Vec::with_capacity(out);
            let mut b = Vec::with_capacity(out);
            for _ in 0..out {
                let i = rng.random_range(0..n);
                // A second, distinct input when there is one: a gate of one input is wasted.
                let j = if n > 1 {
                    (i + rng.random_range(1..n)) % n
                } else {
                    i
                };
                a.push(i);
                b.push(j);
            }
            Wires { a, b }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_wirings() {
        // Exhaustive: a new wiring does not compile here until it is listed.
        let _ = |w: Wiring| match w {
            Wiring::FirstKernel | Wiring::Unique | Wiring::Random => (),
        };
        let all = [Wiring::FirstKernel, Wiring::Unique, Wiring::Random];
        for (wiring, name) in all.into_iter().zip(NAMES) {
            assert_eq!(serde_json::to_value(wiring).unwrap(), name);
        }
    }

    #[test]
    fn unique_uses_every_input_without_repeating_a_pair() {
        for (i, o) in [(264, 256), (17, 128), (9, 8), (8, 4)] {
            let w = unique_pairs(i, o).unwrap();
            let mut seen = std::collections::HashSet::new();
            for j in 0..o {
                assert!(w.a[j] < w.b[j]);
                assert!(seen.insert((w.a[j], w.b[j])));
            }
            for input in 0..i as u32 {
                assert!(w.a.contains(&input) || w.b.contains(&input));
            }
        }
    }

    #[test]
    fn unique_refuses_too_few_gates() {
        assert!(unique_pairs(10, 4).is_err());
        assert!(unique_pairs(4, 16).is_err());
    }
}
