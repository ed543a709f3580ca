//! Neutral-drift search over the hard circuit's gate ops: the discrete last mile after
//! training (`logicars.repair(..., method="drift")`).
//!
//! A (1+1) search: flip one row of one gate's truth table, run the hard circuit on the
//! task's inputs, and keep the flip when the wrong cells do not grow. The flips go in
//! passes over every (gate, row), each pass in an order drawn from the seed. Keeping the
//! moves that leave the count equal lets the search walk across the plateaus where a
//! greedy search (strictly fewer wrong cells) stops (docs/results.md). A flip of a gate
//! whose value cannot reach the next state under the current ops changes nothing and is
//! kept without a run, which spares many runs (docs/performance.md). Each other
//! candidate compiles the circuit (a large part of its cost) and runs it on [`Planes`]: the
//! slot engine's bit layout, but every gate over the whole grid at once, with the
//! inputs, masks and targets packed once per search (a training grid is small: the slot
//! engine's blocks, thread hand-overs and packing cost more than its gates). Boards up
//! to 32 cells wide share a word side by side (a 16-wide checkerboard four to a word,
//! a 3x3 Life board 21), so that a run costs a fraction of one board per word.

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::Model;
use crate::error::{shape_err, value_err, Result};
use crate::float::program::Program;
use crate::grid::GridShape;
use crate::hard::circuit::Output;
use crate::hard::compile::op_table;
use crate::hard::kernels::Kind;
use crate::hard::masks::{given_mask, random_mask};
use crate::hard::packing::{pack_row, Geo};
use crate::hard::simulator::check_options;
use crate::hard::{Circuit, Interrupt, Masks, SimOptions};

/// What the search runs the circuit on: `x` (`N × H × W × C` bytes of 0/1), and for
/// each grid the targets it may match on `loss_channels`: `targets` holds `O` options of
/// `N × H × W × len(loss_channels)` bytes, and a grid's wrong cells are those of the
/// option it is closest to (a pattern in any of its phases).
pub struct DriftTask<'a> {
    pub x: &'a [u8],
    pub shape: GridShape,
    pub targets: &'a [u8],
    pub loss_channels: &'a [usize],
    /// Steps, boundary and update masks of the run (no recording, no damage).
    pub opts: SimOptions<'a>,
    /// The first step scored: the wrong cells are counted at every step from here to
    /// `opts.steps` (a grown pattern that must hold), and a candidate is compared by its
    /// wrong cells at this step first, then by their sum over the steps. `opts.steps`
    /// scores the last step alone.
    pub score_from: usize,
}

/// What a search did: wrong cells before and after (summed over the scored steps), the
/// candidates (flips tried), and each gate whose op changed as `(parameter gate, old op,
/// new op)`, in gate order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriftOutcome {
    pub wrong_before: u64,
    pub wrong_after: u64,
    pub evaluations: u64,
    pub changes: Vec<(usize, u8, u8)>,
}

impl DriftTask<'_> {
    fn check(&self, channels: usize) -> Result<()> {
        let GridShape {
            batch,
            height,
            width,
        } = self.shape;
        let cells = batch * height * width;
        if self.x.len() != cells * channels {
            return shape_err!(
                "x: expected {cells} cells x {channels} channels = {} bytes, got {}",
                cells * channels,
                self.x.len()
            );
        }
        if self.x.iter().any(|&v| v > 1) {
            return value_err!("x: expected 0 or 1 in every cell");
        }
        if let Some(&c) = self.loss_channels.iter().find(|&&c| c >= channels) {
            return value_err!("loss channel {c} is not one of the model's {channels}");
        }
        let per_option = cells * self.loss_channels.len();
        if per_option == 0
            || self.targets.is_empty()
            || !self.targets.len().is_multiple_of(per_option)
        {
            return shape_err!(
                "targets: expected options of {per_option} bytes (N x H x W x loss channels), got {}",
                self.targets.len()
            );
        }
        if self.targets.iter().any(|&t| t > 1) {
            return value_err!("targets: expected 0 or 1 in every cell");
        }
        if self.opts.record_every != 0 || self.opts.damage.is_some() {
            return value_err!("a drift search runs to the last step, without damage");
        }
        if self.score_from > self.opts.steps {
            return value_err!(
                "score_from: {} is past the run's {} steps",
                self.score_from,
                self.opts.steps
            );
        }
        check_options(self.shape, &self.opts)
    }
}

/// A search's grids as bit planes in the slot engine's layout (`Geo`: each grid row in
/// `nw` words, rows of every board one after another), packed once: the inputs, the
/// update masks of each step, and the target options.
struct Planes {
    geo: Geo,
    /// Boards side by side in a word (`per_word` segments of `width` bits) when a row
    /// fits in half a word or less; 1 otherwise.
    per_word: usize,
    boards: usize,
    /// In each word, the first and the last cell of every segment, and every segment's
    /// cells (the bits a run keeps).
    first_cells: u64,
    last_cells: u64,
    kept: u64,
    /// Rows of every group of boards that share words, `⌈B / per_word⌉·H`.
    rows: usize,
    /// For each row offset (up, same, down), the row each row reads (`None`: outside a
    /// zero grid).
    neighbours: [Vec<Option<usize>>; 3],
    /// Words of one channel, `rows·nw`.
    plane: usize,
    steps: usize,
    /// The start, `rows × C × nw` words (row-major, channels within a row).
    x: Vec<u64>,
    /// Step `t`'s mask at `t · plane`; empty when every cell updates.
    masks: Vec<u64>,
    /// Option `o`, loss channel `l` at `(o · L + l) · plane`.
    targets: Vec<u64>,
    n_options: usize,
}

impl Planes {
    fn new(task: &DriftTask<'_>, channels: usize) -> Planes {
        let shape = task.shape;
        let geo = Geo::new(shape, channels, task.opts.periodic);
        let (nw, rows) = (geo.nw, shape.batch * shape.height);
        let plane = rows * nw;
        let steps = task.opts.steps;
        let mut x = vec![0u64; rows * channels * nw];
        for (row, words) in x.chunks_exact_mut(channels * nw).enumerate() {
            let cells = &task.x[row * shape.width * channels..][..shape.width * channels];
            for (c, w) in words.chunks_exact_mut(nw).enumerate() {
                pack_row(&cells[c..], channels, w);
            }
        }
        // Every step's mask (`check` ran `simulate`'s checks on the masks).
        let synchronous = matches!(task.opts.masks, Masks::Sync);
        let mut masks = vec![0u64; if synchronous { 0 } else { steps * plane }];
        for (t, mask) in masks.chunks_exact_mut(plane).enumerate() {
            match task.opts.masks {
                Masks::Given(given) => given_mask(&geo, given, steps, t, mask),
                Masks::Random { fire_rate, seed } => random_mask(&geo, mask, fire_rate, seed, t),
                Masks::Sync => {}
            }
        }
        let n_loss = task.loss_channels.len();
        let n_options = task.targets.len() / (shape.cells() * n_loss);
        let mut targets = vec![0u64; n_options * n_loss * plane];
        for (o, option) in task
            .targets
            .chunks_exact(shape.cells() * n_loss)
            .enumerate()
        {
            for l in 0..n_loss {
                let dst = &mut targets[(o * n_loss + l) * plane..][..plane];
                for (row, words) in dst.chunks_exact_mut(nw).enumerate() {
                    let cells = &option[row * shape.width * n_loss..][..shape.width * n_loss];
                    pack_row(&cells[l..], n_loss, words);
                }
            }
        }
        // The masks are drawn in the one-board layout (the slot engine's), then the
        // boards are put side by side like everything else.
        let width = shape.width;
        let per_word = if width <= 32 { 64 / width } else { 1 };
        let side_by_side = |words: Vec<u64>, stride: usize| -> Vec<u64> {
            if per_word == 1 {
                return words;
            }
            let (h, per_plane) = (shape.height, rows * stride);
            let groups = shape.batch.div_ceil(per_word);
            let mut out = vec![0u64; words.len() / rows * groups * h];
            for (p, plane) in words.chunks_exact(per_plane).enumerate() {
                let dst = &mut out[p * groups * h * stride..][..groups * h * stride];
                for (row, w) in plane.chunks_exact(stride).enumerate() {
                    let (b, r) = (row / h, row % h);
                    let at = ((b / per_word) * h + r) * stride;
                    let shift = (b % per_word) * width;
                    for (d, &v) in dst[at..][..stride].iter_mut().zip(w) {
                        *d |= v << shift;
                    }
                }
            }
            out
        };
        let x = side_by_side(x, channels * nw);
        let masks = side_by_side(masks, nw);
        let targets = side_by_side(targets, nw);
        let rows = shape.batch.div_ceil(per_word) * shape.height;
        let spread = |bits: u64| (0..per_word).fold(0, |acc, k| acc | bits << (k * width));
        let neighbours = std::array::from_fn(|dr| {
            (0..rows)
                .map(|row| geo.neighbour_rows(row, row % shape.height)[dr])
                .collect()
        });
        Planes {
            per_word,
            boards: shape.batch,
            first_cells: spread(1),
            last_cells: spread(1 << geo.wrap_bit),
            kept: spread(geo.last_mask),
            geo,
            rows,
            neighbours,
            plane: rows * nw,
            steps,
            x,
            masks,
            targets,
            n_options,
        }
    }

    /// Cell `(board, r, col)` of channel `c` of a state (`run`'s).
    #[cfg(test)]
    fn cell(&self, state: &[u64], board: usize, r: usize, col: usize, c: usize) -> u8 {
        let (h, nw, w) = (self.geo.height, self.geo.nw, self.geo.width);
        let row = (board / self.per_word) * h + r;
        let bit = (board % self.per_word) * w + col;
        (state[(row * self.geo.channels + c) * nw + bit / 64] >> (bit % 64) & 1) as u8
    }

    /// Runs `circuit` from the start for the task's steps; returns the final state.
    #[cfg(test)]
    fn run(&self, circuit: &Circuit, arena: &mut Vec<u64>) -> Vec<u64> {
        self.run_while(circuit, arena, |_, _| true)
    }

    /// Runs `circuit` from the start, calling `go_on(t, state)` after each step `t` (1 to
    /// the task's steps), until it returns false or the last step; returns the state
    /// reached.
    fn run_while(
        &self,
        circuit: &Circuit,
        arena: &mut Vec<u64>,
        mut go_on: impl FnMut(usize, &[u64]) -> bool,
    ) -> Vec<u64> {
        let (geo, plane, nw) = (&self.geo, self.plane, self.geo.nw);
        let channels = geo.channels;
        arena.clear();
        arena.resize(circuit.n_slots * plane, 0);
        let mut state = self.x.clone();
        for t in 0..self.steps {
            for f in &circuit.fills {
                let dst = &mut arena[f.slot as usize * plane..][..plane];
                let sources = &self.neighbours[f.dr];
                if nw == 1 {
                    // A grid row in one word (grids up to 64 wide, the usual training
                    // grid), maybe several boards' side by side: the shift inline, each
                    // segment's edge cell cleared (zero boundary) or wrapped within it.
                    let (wrap, c) = (geo.wrap_bit, f.channel);
                    let (first, last) = (self.first_cells, self.last_cells);
                    let periodic = if geo.periodic { !0 } else { 0 };
                    for (d, &src) in dst.iter_mut().zip(sources) {
                        let Some(src) = src else {
                            *d = 0;
                            continue;
                        };
                        let w = state[src * channels + c];
                        *d = match f.dc {
                            1 => w,
                            0 => (w << 1) & !first | (w >> wrap) & first & periodic,
                            _ => (w >> 1) & !last | (w << wrap) & last & periodic,
                        };
                    }
                    continue;
                }
                for (words, &src) in dst.chunks_exact_mut(nw).zip(sources) {
                    match src {
                        Some(src) => geo.shifted_segment(&state, src, 0, f.channel, f.dc, words),
                        None => words.fill(0),
                    }
                }
            }
            for span in &circuit.spans {
                let ops = &circuit.ops[span.start..span.end];
                match span.kind {
                    Kind::And => gate_planes(ops, arena, plane, |x, y| x & y),
                    Kind::AndNot => gate_planes(ops, arena, plane, |x, y| x & !y),
                    Kind::Or => gate_planes(ops, arena, plane, |x, y| x | y),
                    Kind::Xor => gate_planes(ops, arena, plane, |x, y| x ^ y),
                }
            }
            let mask = (!self.masks.is_empty()).then(|| &self.masks[t * plane..][..plane]);
            for (c, out) in circuit.outputs.iter().enumerate() {
                for row in 0..self.rows {
                    let dst = &mut state[(row * channels + c) * nw..][..nw];
                    for (i, d) in dst.iter_mut().enumerate() {
                        let mut v = match *out {
                            Output::Const(b) => 0u64.wrapping_sub(b as u64),
                            Output::Slot { slot, neg } => {
                                arena[slot as usize * plane + row * nw + i]
                                    ^ 0u64.wrapping_sub(neg as u64)
                            }
                        };
                        if let Some(m) = mask {
                            let m = m[row * nw + i];
                            v = (*d & !m) | (v & m);
                        }
                        *d = if i + 1 == nw { v & self.kept } else { v };
                    }
                }
            }
            if !go_on(t + 1, &state) {
                break;
            }
        }
        state
    }

    /// The wrong cells of `circuit` at step `from` and their sum over steps `from` to the
    /// last; `None` as soon as it is sure to compare worse than `bound` (more wrong cells
    /// at `from`, or as many and a greater sum), which spares the rest of the run.
    fn score(
        &self,
        circuit: &Circuit,
        arena: &mut Vec<u64>,
        loss_channels: &[usize],
        from: usize,
        bound: Option<(u64, u64)>,
    ) -> Option<(u64, u64)> {
        let (mut at_from, mut sum, mut worse) = (0, 0, false);
        let mut tally = |t: usize, state: &[u64]| {
            if t < from {
                return true;
            }
            let w = self.wrong(state, loss_channels);
            if t == from {
                at_from = w;
            }
            sum += w;
            worse = bound.is_some_and(|(b0, b1)| at_from > b0 || (at_from == b0 && sum > b1));
            !worse
        };
        if from > 0 || tally(0, &self.x) {
            self.run_while(circuit, arena, tally);
        }
        (!worse).then_some((at_from, sum))
    }

    /// Wrong cells of `state` on `loss_channels`, each board against its closest target
    /// option.
    fn wrong(&self, state: &[u64], loss_channels: &[usize]) -> u64 {
        let (nw, channels, n_loss) = (self.geo.nw, self.geo.channels, loss_channels.len());
        let (h, per_word, width) = (self.geo.height, self.per_word, self.geo.width);
        let segment = |k: usize| self.geo.last_mask << (k * width);
        let mut total = 0;
        // Per board of a group (at most 64 share a word); called at every scored step,
        // so on the stack.
        let (mut best, mut count) = ([0u64; 64], [0u64; 64]);
        for g in 0..self.rows / h {
            let boards = per_word.min(self.boards - g * per_word);
            best[..boards].fill(u64::MAX);
            for o in 0..self.n_options {
                count[..boards].fill(0);
                for (l, &c) in loss_channels.iter().enumerate() {
                    let want = &self.targets[(o * n_loss + l) * self.plane..];
                    for row in g * h..(g + 1) * h {
                        let got = &state[(row * channels + c) * nw..][..nw];
                        let want = &want[row * nw..][..nw];
                        for (got, want) in got.iter().zip(want) {
                            let diff = got ^ want;
                            if per_word == 1 {
                                count[0] += diff.count_ones() as u64;
                            } else {
                                for (k, n) in count[..boards].iter_mut().enumerate() {
                                    *n += (diff & segment(k)).count_ones() as u64;
                                }
                            }
                        }
                    }
                }
                for (b, n) in best.iter_mut().zip(&count[..boards]) {
                    *b = (*b).min(*n);
                }
            }
            total += best[..boards].iter().sum::<u64>();
        }
        total
    }
}

/// `out = f(x, y)` over whole planes for each op. An op's output slot may be one of its
/// inputs' (never both: `x != y`), so the planes are borrowed as two or three disjoint
/// slices, which keeps the loops free of bounds checks and aliasing (they vectorise).
#[inline(always)]
fn gate_planes(
    ops: &[crate::hard::kernels::Op],
    arena: &mut [u64],
    plane: usize,
    f: impl Fn(u64, u64) -> u64,
) {
    let at = |slot: u32| slot as usize * plane..(slot as usize + 1) * plane;
    for op in ops {
        let disjoint = "an op's inputs are two slots";
        if op.out == op.x {
            let [out, y] = arena
                .get_disjoint_mut([at(op.x), at(op.y)])
                .expect(disjoint);
            out.iter_mut().zip(&*y).for_each(|(o, &y)| *o = f(*o, y));
        } else if op.out == op.y {
            let [x, out] = arena
                .get_disjoint_mut([at(op.x), at(op.y)])
                .expect(disjoint);
            out.iter_mut().zip(&*x).for_each(|(o, &x)| *o = f(x, *o));
        } else {
            let [x, y, out] = arena
                .get_disjoint_mut([at(op.x), at(op.y), at(op.out)])
                .expect(disjoint);
            for ((o, &x), &y) in out.iter_mut().zip(&*x).zip(&*y) {
                *o = f(x, y);
            }
        }
    }
}

/// For each parameter gate, whether any of its gates' values can reach the next state
/// under `ops`: back from the output rows through each gate's inputs its op depends on
/// (a constant input is not looked at, so a gate may count as reaching when it does not,
/// never the reverse).
fn reaching_gates(program: &Program, ops: &[u8]) -> Vec<bool> {
    let gates = &program.gates;
    let mut needed = vec![false; gates.n_rows];
    for &r in &gates.out_rows {
        needed[r as usize] = true;
    }
    // Whether each op depends on its input a, b: bit `a + 2·b` of its table is the output
    // on (a, b).
    let depends: [(bool, bool); 16] = std::array::from_fn(|op| {
        let t = op_table(op);
        let (bit0, bit1, bit2, bit3) = (t & 1, (t >> 1) & 1, (t >> 2) & 1, t >> 3);
        (bit0 != bit1 || bit2 != bit3, bit0 != bit2 || bit1 != bit3)
    });
    let mut reaches = vec![false; ops.len()];
    for ins in gates.instrs.iter().rev() {
        if !needed[ins.out as usize] {
            continue;
        }
        reaches[ins.coef as usize] = true;
        let (on_a, on_b) = depends[ops[ins.coef as usize] as usize];
        needed[ins.a as usize] |= on_a;
        needed[ins.b as usize] |= on_b;
    }
    reaches
}

impl Model {
    /// Searches the hard circuit's gate ops for fewer wrong cells on `task` (see the
    /// module's doc), for at most `budget` candidates (flips) or until none is wrong. The
    /// flips come from `seed` and the position in their sequence, `offset` for the first
    /// candidate: a search continued from where another stopped (its changes applied,
    /// `offset` its candidates) is the search that would have run on. The model is
    /// not changed.
    pub fn drift_search(
        &self,
        task: &DriftTask<'_>,
        budget: u64,
        seed: u64,
        offset: u64,
        interrupt: Option<Interrupt<'_>>,
    ) -> Result<DriftOutcome> {
        let channels = self.spec.channels;
        task.check(channels)?;
        let planes = Planes::new(task, channels);
        let mut arena = Vec::new();
        // A candidate's score, `None` when it compares worse than `bound`.
        let mut score = |ops: &[u8], bound: Option<(u64, u64)>| {
            let circuit = Circuit::compile(&self.program, ops);
            planes.score(
                &circuit,
                &mut arena,
                task.loss_channels,
                task.score_from,
                bound,
            )
        };
        let start = self.hard_ops();
        let mut ops = start.clone();
        let before = score(&ops, None).expect("an unbounded score");
        let mut reaches = reaching_gates(&self.program, &ops);
        let (mut current, mut evaluations) = (before, 0u64);
        let n_flips = ops.len() as u64 * 4;
        let mut order: Vec<u32> = Vec::new();
        let mut deadline = Interrupt::deadline(interrupt);
        while current.1 > 0 && evaluations < budget && n_flips > 0 {
            // Flip `position` of the search: passes over every (gate, row) flip, each
            // pass in its own order drawn from `seed`, so that every flip is tried once
            // per pass, and a search resumed at `offset` goes on as one would have.
            let position = offset + evaluations;
            let (pass, at) = (position / n_flips, (position % n_flips) as usize);
            if order.is_empty() || at == 0 {
                order = (0..n_flips as u32).collect();
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                rng.set_stream(pass);
                order.shuffle(&mut rng);
            }
            let (gate, row) = ((order[at] / 4) as usize, order[at] % 4);
            let old = ops[gate];
            ops[gate] ^= 8 >> row; // row k of the table is op bit 3 - k
            evaluations += 1;
            // A gate whose value cannot reach the next state under the current ops: the
            // flip changes no cell, so it is kept, as its run would have it, without one.
            if reaches[gate] {
                match score(&ops, Some(current)) {
                    Some(w) => {
                        current = w;
                        reaches = reaching_gates(&self.program, &ops);
                    }
                    None => ops[gate] = old,
                }
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                Interrupt::poll(interrupt)?;
                deadline = Interrupt::deadline(interrupt);
            }
        }
        let changes = (0..ops.len())
            .filter(|&g| ops[g] != start[g])
            .map(|g| (g, start[g], ops[g]))
            .collect();
        Ok(DriftOutcome {
            wrong_before: before.1,
            wrong_after: current.1,
            evaluations,
            changes,
        })
    }
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::hard::{simulate_on, HardEngine};
    use crate::spec::Spec;

    fn random_model(periodic: bool, seed: u64) -> Model {
        let json = format!(
            r#"{{"channels": 3, "periodic": {periodic}, "num_steps": 3, "loss_channels": [0, 2],
            "perceive": {{"n_kernels": 2, "layers": [9, 8, 4],
                         "connections": ["first_kernel", "unique"]}},
            "update": {{"layers": [27, 16, 8, 4, 3], "connections": ["unique", "unique", "unique", "random"]}}}}"#
        );
        let mut m = Model::new(Spec::from_json(&json).unwrap(), seed).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let logits: Vec<f32> = m
            .logits()
            .iter()
            .map(|_| rng.random_range(-2.0..2.0))
            .collect();
        m.set_logits(&logits).unwrap();
        m
    }

    /// `n` random bytes of 0 or 1.
    fn random_bits(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
        (0..n).map(|_| rng.random_range(0..2)).collect()
    }

    /// The plane run gives the slot engine's final grid, on narrow, word-wide and
    /// multi-word grids, both boundaries, synchronous and with given or drawn masks.
    #[test]
    fn planes_run_the_slot_engines_steps() {
        // Boards side by side in a word (widths 3, 5, 13, 32; the last word's segments
        // partly empty), and one board's row in one word or several.
        for (width, periodic, seed, batch) in [
            (5, true, 1, 2),
            (64, false, 2, 2),
            (70, true, 3, 2),
            (130, false, 4, 2),
            (13, false, 12, 5),
            (3, true, 7, 30),
            (32, true, 8, 3),
        ] {
            let m = random_model(periodic, seed);
            let shape = GridShape {
                batch,
                height: 4,
                width,
            };
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let x = random_bits(&mut rng, shape.cells() * 3);
            let given = random_bits(&mut rng, shape.cells() * 3);
            let circuit = Circuit::compile(&m.program, &m.hard_ops());
            let masks = [
                Masks::Sync,
                Masks::Given(&given),
                Masks::Random {
                    fire_rate: 0.4,
                    seed: 9,
                },
            ];
            for masks in masks {
                let mut opts = SimOptions::new(3, periodic);
                opts.masks = masks;
                let want = simulate_on(HardEngine::Slots, &circuit, &x, shape, &opts).unwrap();
                assert!(
                    want.contains(&0) && want.contains(&1),
                    "seed {seed}: a constant grid"
                );
                let targets = vec![0u8; shape.cells() * 2];
                let task = DriftTask {
                    x: &x,
                    shape,
                    targets: &targets,
                    loss_channels: &[0, 2],
                    opts,
                    score_from: 3,
                };
                task.check(3).unwrap();
                let planes = Planes::new(&task, 3);
                let state = planes.run(&circuit, &mut Vec::new());
                let h = shape.height;
                let got: Vec<u8> = (0..shape.cells() * 3)
                    .map(|i| {
                        let (row, col, c) = (i / (width * 3), i / 3 % width, i % 3);
                        planes.cell(&state, row / h, row % h, col, c)
                    })
                    .collect();
                assert_eq!(got, want, "width {width}, periodic {periodic}, {masks:?}");
                let ones = |c: usize| {
                    want.iter()
                        .skip(c)
                        .step_by(3)
                        .map(|&v| v as u64)
                        .sum::<u64>()
                };
                assert_eq!(planes.wrong(&state, &[0, 2]), ones(0) + ones(2));
            }
        }
    }

    /// A score from step 1 counts the wrong cells of every step (the slot engine's states
    /// run 1, 2 and 3 steps), and a bound it cannot meet ends the run with `None`; a search
    /// scoring steps 1 to 3 never makes step 1 worse, nor the sum at an equal step 1.
    #[test]
    fn scores_from_a_step_sum_every_later_step() {
        let m = random_model(false, 5);
        let shape = GridShape {
            batch: 2,
            height: 5,
            width: 7,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let x = random_bits(&mut rng, shape.cells() * 3);
        let targets = random_bits(&mut rng, shape.cells() * 2);
        let wrong_at = |ops: &[u8], steps: usize| {
            let circuit = Circuit::compile(&m.program, ops);
            let opts = SimOptions::new(steps, false);
            let got = simulate_on(HardEngine::Slots, &circuit, &x, shape, &opts).unwrap();
            let cells = got.chunks(3).flat_map(|c| [c[0], c[2]]);
            cells.zip(&targets).filter(|(g, w)| g != *w).count() as u64
        };
        let task = DriftTask {
            x: &x,
            shape,
            targets: &targets,
            loss_channels: &[0, 2],
            opts: SimOptions::new(3, false),
            score_from: 1,
        };
        task.check(3).unwrap();
        let planes = Planes::new(&task, 3);
        let circuit = Circuit::compile(&m.program, &m.hard_ops());
        let want: Vec<u64> = (1..=3).map(|t| wrong_at(&m.hard_ops(), t)).collect();
        let (first, sum) = (want[0], want.iter().sum::<u64>());
        let score = |bound| planes.score(&circuit, &mut Vec::new(), &[0, 2], 1, bound);
        assert_eq!(score(None), Some((first, sum)));
        assert_eq!(score(Some((first, sum))), Some((first, sum)));
        assert_eq!(score(Some((first, sum - 1))), None);
        if first > 0 {
            assert_eq!(score(Some((first - 1, u64::MAX))), None);
        }

        let out = m.drift_search(&task, 400, 3, 0, None).unwrap();
        assert_eq!(out.wrong_before, sum);
        let mut ops = m.hard_ops();
        for &(g, _, new) in &out.changes {
            ops[g] = new;
        }
        let after: Vec<u64> = (1..=3).map(|t| wrong_at(&ops, t)).collect();
        assert_eq!(out.wrong_after, after.iter().sum::<u64>());
        assert!((after[0], out.wrong_after) <= (first, sum));
        let late = DriftTask {
            score_from: 4,
            ..task
        };
        assert!(late
            .check(3)
            .unwrap_err()
            .to_string()
            .contains("score_from"));
    }

    #[test]
    fn drift_search_never_adds_wrong_cells_and_reports_its_changes() {
        let m = random_model(true, 4);
        let shape = GridShape {
            batch: 3,
            height: 5,
            width: 6,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let x = random_bits(&mut rng, shape.cells() * 3);
        let run = |ops: &[u8]| {
            let circuit = Circuit::compile(&m.program, ops);
            simulate_on(
                HardEngine::Slots,
                &circuit,
                &x,
                shape,
                &SimOptions::new(3, true),
            )
            .unwrap()
        };
        // Targets: the circuit's own channel 0 with a few cells flipped, as a second option
        // the circuit's own output exactly (so a grid may match either).
        let own: Vec<u8> = run(&m.hard_ops()).chunks(3).map(|c| c[0]).collect();
        assert!(
            own.contains(&0) && own.contains(&1),
            "a circuit whose output varies"
        );
        let mut flipped = own.clone();
        for i in [0, 7, 33, 61, 89] {
            flipped[i] ^= 1;
        }
        fn task<'a>(x: &'a [u8], shape: GridShape, targets: &'a [u8]) -> DriftTask<'a> {
            DriftTask {
                x,
                shape,
                targets,
                loss_channels: &[0],
                opts: SimOptions::new(3, true),
                score_from: 3,
            }
        }
        let both: Vec<u8> = [flipped.clone(), own.clone()].concat();
        let exact = m
            .drift_search(&task(&x, shape, &both), 100, 1, 0, None)
            .unwrap();
        assert_eq!((exact.wrong_before, exact.evaluations), (0, 0));

        let a = m
            .drift_search(&task(&x, shape, &flipped), 300, 1, 0, None)
            .unwrap();
        let b = m
            .drift_search(&task(&x, shape, &flipped), 300, 1, 0, None)
            .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.wrong_before, 5);
        assert!(a.wrong_after <= a.wrong_before && a.evaluations <= 300);
        let mut ops = m.hard_ops();
        for &(g, old, new) in &a.changes {
            assert_eq!(ops[g], old);
            ops[g] = new;
        }
        let count_wrong = |ops: &[u8]| {
            let got = run(ops).chunks(3).map(|c| c[0]).collect::<Vec<_>>();
            got.iter().zip(&flipped).filter(|(g, w)| g != w).count() as u64
        };
        assert_eq!(count_wrong(&ops), a.wrong_after);

        // The search equals the plain one, which runs every flip (the drift search keeps
        // the flips of gates that cannot reach the next state without a run).
        assert!(
            reaching_gates(&m.program, &m.hard_ops()).contains(&false),
            "a model with gates that do not reach the next state"
        );
        let mut ops = m.hard_ops();
        let mut current = count_wrong(&ops);
        let n_flips = ops.len() * 4;
        let mut order: Vec<u32> = Vec::new();
        for position in 0..600 {
            let (pass, at) = (position / n_flips, position % n_flips);
            if at == 0 {
                order = (0..n_flips as u32).collect();
                let mut rng = ChaCha8Rng::seed_from_u64(7);
                rng.set_stream(pass as u64);
                order.shuffle(&mut rng);
            }
            let (gate, row) = ((order[at] / 4) as usize, order[at] % 4);
            ops[gate] ^= 8 >> row;
            let w = count_wrong(&ops);
            if w <= current {
                current = w;
            } else {
                ops[gate] ^= 8 >> row;
            }
        }
        let plain = m
            .drift_search(&task(&x, shape, &flipped), 600, 7, 0, None)
            .unwrap();
        let start = m.hard_ops();
        let changed: Vec<_> = (0..ops.len())
            .filter(|&g| ops[g] != start[g])
            .map(|g| (g, start[g], ops[g]))
            .collect();
        assert_eq!((plain.wrong_after, plain.changes), (current, changed));

        for (targets, what) in [(vec![2u8; 90], "0 or 1"), (vec![0u8; 89], "targets")] {
            match m.drift_search(&task(&x, shape, &targets), 10, 1, 0, None) {
                Err(e) => assert!(e.to_string().contains(what), "{e}"),
                Ok(_) => panic!("{what}: accepted"),
            }
        }
    }
}
