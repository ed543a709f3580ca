//! Registers over the evaluation order: a linear scan that evicts the value used
//! furthest ahead (Belady) to a spill slot, and the loop body it produces.

use iced_x86::{IcedError, Instruction, MemoryOperand, Register};

use super::abi::{INDEX, SPILL_BASE};
use super::fuse::Node;
use super::isa::Isa;
use super::schedule::Step;
use crate::hard::netlist::{NetOutput, Netlist};

/// A patch input: its memory operand and whether it needs a shift.
#[derive(Clone, Copy)]
pub(super) struct InputAt {
    pub(super) base: Register,
    /// Byte offset of the centre word of the input's channel.
    pub(super) disp: i64,
    /// -1: the west neighbour (`v << 1`), 0: the cell itself, 1: the east neighbour.
    pub(super) dc: i8,
}

/// Where a value is while the code is generated.
#[derive(Clone, Copy, Default)]
pub(super) struct Place {
    pub(super) reg: Option<u8>,
    /// Spill slot, once stored.
    pub(super) slot: Option<u32>,
}

pub(super) struct Gen<'a> {
    pub(super) isa: Isa,
    pub(super) nodes: &'a [Node],
    pub(super) outputs: &'a [NetOutput],
    pub(super) inputs: Vec<InputAt>,
    pub(super) stride_bytes: i64,
    pub(super) code: Vec<Instruction>,
    pub(super) place: Vec<Place>,
    /// Value in each register.
    pub(super) holder: Vec<Option<u32>>,
    /// Steps at which each value is read, ascending, and how many have passed.
    pub(super) uses: Vec<Vec<u32>>,
    pub(super) passed: Vec<usize>,
    pub(super) free_slots: Vec<u32>,
    pub(super) n_slots: u32,
}

impl Gen<'_> {
    pub(super) fn emit(&mut self, ins: Result<Instruction, IcedError>) {
        self.code.push(ins.expect("valid instruction operands"));
    }

    pub(super) fn vreg(&self, r: u8) -> Register {
        self.isa.reg(r)
    }

    pub(super) fn is_input(&self, v: u32) -> bool {
        (v as usize) < self.inputs.len()
    }

    pub(super) fn is_centre(&self, v: u32) -> bool {
        self.is_input(v) && self.inputs[v as usize].dc == 0
    }

    /// The value's memory operand: its grid word for a centre input, else its spill slot.
    pub(super) fn mem(&self, v: u32) -> MemoryOperand {
        if self.is_centre(v) {
            let at = self.inputs[v as usize];
            return MemoryOperand::with_base_index_scale_displ_size(at.base, INDEX, 1, at.disp, 1);
        }
        let slot = self.place[v as usize]
            .slot
            .expect("spilled value has a slot");
        spill_mem(slot, self.isa)
    }

    fn in_memory(&self, v: u32) -> bool {
        self.is_centre(v) || self.place[v as usize].slot.is_some()
    }

    fn next_use(&self, v: u32) -> u32 {
        let u = &self.uses[v as usize];
        u.get(self.passed[v as usize]).copied().unwrap_or(u32::MAX)
    }

    /// Whether step `pos` is the value's last use.
    pub(super) fn dies_at(&self, v: u32, pos: u32) -> bool {
        self.uses[v as usize].last() == Some(&pos)
    }

    /// A free register, evicting the value used furthest ahead (never one in `pinned`).
    pub(super) fn alloc(&mut self, pinned: &[u8]) -> u8 {
        let n_regs = self.isa.n_regs() as u8;
        if let Some(r) = (0..n_regs).find(|&r| self.holder[r as usize].is_none()) {
            return r;
        }
        let r = (0..n_regs)
            .filter(|r| !pinned.contains(r))
            .max_by_key(|&r| self.next_use(self.holder[r as usize].unwrap()))
            .expect("a register to evict");
        let v = self.holder[r as usize].take().unwrap();
        if !self.in_memory(v) {
            let slot = self.free_slots.pop().unwrap_or_else(|| {
                self.n_slots += 1;
                self.n_slots - 1
            });
            self.place[v as usize].slot = Some(slot);
            let (store, reg) = (self.isa.store(), self.vreg(r));
            self.emit(Instruction::with2(store, spill_mem(slot, self.isa), reg));
        }
        self.place[v as usize].reg = None;
        r
    }

    pub(super) fn bind(&mut self, v: u32, r: u8) {
        self.holder[r as usize] = Some(v);
        self.place[v as usize].reg = Some(r);
    }

    /// Loads `v` into a fresh register that it keeps.
    pub(super) fn load(&mut self, v: u32, pinned: &[u8]) -> u8 {
        let r = self.alloc(pinned);
        let m = self.mem(v);
        let (load, reg) = (self.isa.load(), self.vreg(r));
        self.emit(Instruction::with2(load, reg, m));
        self.bind(v, r);
        r
    }

    /// After step `pos`: values read for the last time give up their register and slot.
    pub(super) fn retire(&mut self, v: u32, pos: u32) {
        self.passed[v as usize] += 1;
        if self.dies_at(v, pos) {
            let p = std::mem::take(&mut self.place[v as usize]);
            if let Some(r) = p.reg {
                if self.holder[r as usize] == Some(v) {
                    self.holder[r as usize] = None;
                }
            }
            if let Some(s) = p.slot {
                self.free_slots.push(s);
            }
        }
    }

    /// Binds the new value `v` to `dst`, whatever `dst` held before.
    pub(super) fn finish(&mut self, v: u32, dst: u8) {
        if let Some(old) = self.holder[dst as usize] {
            self.place[old as usize].reg = None;
        }
        self.bind(v, dst);
    }
}

fn spill_mem(slot: u32, isa: Isa) -> MemoryOperand {
    MemoryOperand::with_base_displ_size(SPILL_BASE, slot as i64 * isa.vbytes(), 1)
}

/// The loop body for one evaluation order: its instructions and spill slots.
#[allow(clippy::too_many_arguments)]
pub(super) fn loop_body(
    net: &Netlist,
    nodes: &[Node],
    isa: Isa,
    inputs: &[InputAt],
    stride_bytes: i64,
    steps: &[Step],
    masked: bool,
    damaged: bool,
) -> (Vec<Instruction>, usize) {
    let n = inputs.len() + nodes.len();
    let mut uses = vec![Vec::new(); n];
    for (pos, step) in steps.iter().enumerate() {
        match *step {
            Step::Value(v) if (v as usize) >= inputs.len() => {
                for &x in nodes[v as usize - inputs.len()].operands() {
                    uses[x as usize].push(pos as u32);
                }
            }
            Step::Output(c) => {
                if let NetOutput::Node { node, .. } = net.outputs[c] {
                    uses[node as usize].push(pos as u32);
                }
            }
            Step::Value(_) => {}
        }
    }
    let mut gen = Gen {
        isa,
        nodes,
        outputs: &net.outputs,
        inputs: inputs.to_vec(),
        stride_bytes,
        code: Vec::new(),
        place: vec![Place::default(); n],
        holder: vec![None; isa.n_regs()],
        uses,
        passed: vec![0; n],
        free_slots: Vec::new(),
        n_slots: 0,
    };
    for (pos, step) in steps.iter().enumerate() {
        match *step {
            Step::Value(v) if gen.is_input(v) => gen.shifted_input(v),
            Step::Value(v) => gen.gate(v as usize - gen.inputs.len(), pos as u32),
            Step::Output(c) => gen.output(c, pos as u32, masked, damaged),
        }
    }
    (gen.code, gen.n_slots as usize)
}
