//! The instructions of each step: a shifted input, a gate (one three-operand
//! instruction, or one `vpternlogq` for a fused node) and an output channel's store.

use iced_x86::{Code, Instruction, MemoryOperand, Register};

use super::abi::{DAMAGE_BASE, INDEX, MASK_BASE, OUT_BASE, ROW_BASE};
use super::fuse::NodeOp;
use super::isa::{Isa, TERNLOG, TERN_A, TERN_B, TERN_C};
use super::regalloc::Gen;
use crate::hard::kernels::Kind;
use crate::hard::netlist::NetOutput;

impl Gen<'_> {
    /// A shifted input: `(v << 1) | (v[-1] >> 63)` (west) or `(v >> 1) | (v[+1] << 63)`.
    pub(super) fn shifted_input(&mut self, v: u32) {
        let at = self.inputs[v as usize];
        let r = self.alloc(&[]);
        let word =
            |d: i64| MemoryOperand::with_base_index_scale_displ_size(at.base, INDEX, 1, d, 1);
        let west = at.dc < 0;
        let carry_from = if west { at.disp - 8 } else { at.disp + 8 };
        let (isa, d, s) = (self.isa, self.vreg(r), self.isa.scratch());
        if let Isa::Avx512 { vbmi2: true } = isa {
            // The high (west) or low (east) half of each lane pair shifted by one.
            let code = if west {
                Code::EVEX_Vpshldq_zmm_k1z_zmm_zmmm512b64_imm8
            } else {
                Code::EVEX_Vpshrdq_zmm_k1z_zmm_zmmm512b64_imm8
            };
            self.emit(Instruction::with2(isa.load(), d, word(at.disp)));
            self.emit(Instruction::with4(code, d, d, word(carry_from), 1u32));
            self.bind(v, r);
            return;
        }
        let (near, far) = if west {
            (isa.shift_left(), isa.shift_right())
        } else {
            (isa.shift_right(), isa.shift_left())
        };
        if isa.zmm() {
            // EVEX shifts take a memory source.
            self.emit(Instruction::with3(near, d, word(at.disp), 1u32));
            self.emit(Instruction::with3(far, s, word(carry_from), 63u32));
        } else {
            self.emit(Instruction::with2(isa.load(), d, word(at.disp)));
            self.emit(Instruction::with3(near, d, d, 1u32));
            self.emit(Instruction::with2(isa.load(), s, word(carry_from)));
            self.emit(Instruction::with3(far, s, s, 63u32));
        }
        self.emit(Instruction::with3(isa.or(), d, d, s));
        self.bind(v, r);
    }

    pub(super) fn gate(&mut self, g: usize, pos: u32) {
        let node = self.nodes[g];
        match node.op {
            NodeOp::Gate(kind) => self.gate2(g, kind, pos),
            NodeOp::Tern(imm) => self.ternary(g, imm, pos),
        }
    }

    /// A two-input gate as one non-destructive three-operand instruction.
    fn gate2(&mut self, g: usize, kind: Kind, pos: u32) {
        let n_in = self.inputs.len() as u32;
        let node = self.nodes[g];
        let (a, b) = (node.ops[0], node.ops[1]);
        let v = n_in + g as u32;
        let isa = self.isa;
        // `first op second` with `first` in a register: vpandn negates its first source.
        let (code, first, second) = match kind {
            Kind::And => (isa.and(), a, b),
            Kind::Or => (isa.or(), a, b),
            Kind::Xor => (isa.xor(), a, b),
            Kind::AndNot => (isa.andn(), b, a),
        };
        let commutative = kind != Kind::AndNot;
        let reg = |s: &Self, x: u32| s.place[x as usize].reg;
        let (first, second) =
            if commutative && reg(self, first).is_none() && reg(self, second).is_some() {
                (second, first)
            } else {
                (first, second)
            };
        let pinned: Vec<u8> = [first, second]
            .iter()
            .filter_map(|&x| reg(self, x))
            .collect();
        let dst;
        if let Some(r1) = reg(self, first) {
            dst = if self.dies_at(first, pos) {
                r1
            } else if let Some(r2) = reg(self, second).filter(|_| self.dies_at(second, pos)) {
                r2
            } else {
                self.alloc(&pinned)
            };
            let src2 = match reg(self, second) {
                Some(r2) => Op::Reg(r2),
                None => Op::Mem(self.mem(second)),
            };
            self.op3(code, dst, r1, src2);
        } else if !self.dies_at(first, pos) {
            // Read again later: keep it in a register.
            let r1 = self.load(first, &pinned);
            let mut pinned = pinned.clone();
            pinned.push(r1);
            dst = match reg(self, second).filter(|_| self.dies_at(second, pos)) {
                Some(r2) => r2,
                None => self.alloc(&pinned),
            };
            let src2 = match reg(self, second) {
                Some(r2) => Op::Reg(r2),
                None => Op::Mem(self.mem(second)),
            };
            self.op3(code, dst, r1, src2);
        } else {
            // Read only here: load it straight into the destination.
            dst = match reg(self, second).filter(|_| self.dies_at(second, pos)) {
                Some(r2) if !commutative => self.alloc(&[r2]),
                Some(r2) => r2,
                None => self.alloc(&pinned),
            };
            let m = self.mem(first);
            if commutative && reg(self, second) == Some(dst) {
                self.op3(code, dst, dst, Op::Mem(m));
            } else {
                let (load, d) = (isa.load(), self.vreg(dst));
                self.emit(Instruction::with2(load, d, m));
                let src2 = match reg(self, second) {
                    Some(r2) => Op::Reg(r2),
                    None => Op::Mem(self.mem(second)),
                };
                self.op3(code, dst, dst, src2);
            }
        }
        // The operands' registers are released first, so that `dst` may be one of them.
        self.retire(a, pos);
        self.retire(b, pos);
        self.finish(v, dst);
    }

    /// A ternary node: `vpternlogq dst, B, C, imm`, where `dst` holds `A` on entry.
    /// At most one operand stays in memory (the `C` operand, or loaded into `dst`).
    fn ternary(&mut self, g: usize, table: u8, pos: u32) {
        let n_in = self.inputs.len() as u32;
        let node = self.nodes[g];
        let v = n_in + g as u32;
        let ops = node.operands().to_vec();
        let reg = |s: &Self, x: u32| s.place[x as usize].reg;
        let mut pinned: Vec<u8> = ops.iter().filter_map(|&x| reg(self, x)).collect();
        let mut in_mem = None;
        for &x in &ops {
            if reg(self, x).is_none() {
                if in_mem.is_none() {
                    in_mem = Some(x);
                } else {
                    let r = self.load(x, &pinned);
                    pinned.push(r);
                }
            }
        }
        let in_regs: Vec<u32> = ops.iter().copied().filter(|&x| Some(x) != in_mem).collect();
        // A: an operand whose register is free after this step, else a copy.
        let (dst, a) = if let Some(&a) = in_regs.iter().find(|&&x| self.dies_at(x, pos)) {
            (reg(self, a).unwrap(), a)
        } else {
            let dst = self.alloc(&pinned);
            let d = self.vreg(dst);
            match in_mem {
                Some(m) => {
                    let (load, mem) = (self.isa.load(), self.mem(m));
                    self.emit(Instruction::with2(load, d, mem));
                    in_mem = None;
                    (dst, m)
                }
                None => {
                    let (copy, src) = (self.isa.copy(), self.vreg(reg(self, in_regs[0]).unwrap()));
                    self.emit(Instruction::with2(copy, d, src));
                    (dst, in_regs[0])
                }
            }
        };
        let rest: Vec<u32> = in_regs.iter().copied().filter(|&x| x != a).collect();
        // B a register (A's if none is left), C memory, a register or B again.
        let b = rest.first().copied().unwrap_or(a);
        let c = in_mem.or(rest.get(1).copied()).unwrap_or(b);
        let position = |x: u32| ops.iter().position(|&o| o == x).expect("an operand");
        let (pa, pb, pc) = (position(a), position(b), position(c));
        let imm = (0..8u8).fold(0u8, |acc, i| {
            let mut bits = [0u8; 3];
            bits[pc] = i & 1;
            bits[pb] = (i >> 1) & 1;
            bits[pa] = (i >> 2) & 1;
            let j = bits[0] << 2 | bits[1] << 1 | bits[2];
            acc | (((table >> j) & 1) << i)
        });
        let d = self.vreg(dst);
        let rb = self.vreg(if b == a { dst } else { reg(self, b).unwrap() });
        let ins = if Some(c) == in_mem {
            Instruction::with4(TERNLOG, d, rb, self.mem(c), imm as u32)
        } else {
            let rc = if c == a { dst } else { reg(self, c).unwrap() };
            Instruction::with4(TERNLOG, d, rb, self.vreg(rc), imm as u32)
        };
        self.emit(ins);
        for &x in &ops {
            self.retire(x, pos);
        }
        self.finish(v, dst);
    }

    fn op3(&mut self, code: Code, dst: u8, src1: u8, src2: Op) {
        let (d, s1) = (self.vreg(dst), self.vreg(src1));
        let ins = match src2 {
            Op::Reg(r) => Instruction::with3(code, d, s1, self.vreg(r)),
            Op::Mem(m) => Instruction::with3(code, d, s1, m),
        };
        self.emit(ins);
    }

    /// Channel `c` of the next state: the output (negated), blended with the old state
    /// under the mask, damaged cells cleared, stored.
    pub(super) fn output(&mut self, c: usize, pos: u32, masked: bool, damaged: bool) {
        let chan = c as i64 * self.stride_bytes;
        let (r, negate) = self.output_value(c, pos);
        self.holder[r as usize] = None; // a temporary from here on
        let d = self.vreg(r);
        let old = MemoryOperand::with_base_index_scale_displ_size(ROW_BASE[1], INDEX, 1, chan, 1);
        let blend = masked.then_some(old);
        if self.isa.zmm() {
            self.finish_avx512(d, negate, blend, damaged);
        } else {
            self.finish_avx2(d, negate, blend, damaged);
        }
        let out = MemoryOperand::with_base_index_scale_displ_size(OUT_BASE, INDEX, 1, chan, 1);
        self.emit(Instruction::with2(self.isa.store(), out, d));
    }

    /// Output `c`'s value in a register it may overwrite, and whether it is negated.
    fn output_value(&mut self, c: usize, pos: u32) -> (u8, bool) {
        let isa = self.isa;
        match self.outputs[c] {
            NetOutput::Const(value) => {
                let r = self.alloc(&[]);
                let d = self.vreg(r);
                let ins = match (isa.zmm(), value) {
                    (true, true) => Instruction::with4(TERNLOG, d, d, d, 0xFFu32),
                    (false, true) => {
                        Instruction::with3(Code::VEX_Vpcmpeqd_ymm_ymm_ymmm256, d, d, d)
                    }
                    (_, false) => Instruction::with3(isa.xor(), d, d, d),
                };
                self.emit(ins);
                (r, false)
            }
            NetOutput::Node { node, negated } => {
                let held = self.place[node as usize].reg;
                let r = match held {
                    Some(r) if self.dies_at(node, pos) => r,
                    _ => {
                        let pinned: Vec<u8> = held.into_iter().collect();
                        let r = self.alloc(&pinned);
                        let d = self.vreg(r);
                        let ins = match held {
                            Some(h) => Instruction::with2(isa.copy(), d, self.vreg(h)),
                            None => Instruction::with2(isa.load(), d, self.mem(node)),
                        };
                        self.emit(ins);
                        r
                    }
                };
                self.retire(node, pos);
                if let Some(old) = self.holder[r as usize] {
                    self.place[old as usize].reg = None;
                }
                (r, negated)
            }
        }
    }

    /// AVX-512: A = the output, B = the mask (scratch), C = the old state or the damage;
    /// negation folds into the first ternary op.
    fn finish_avx512(
        &mut self,
        d: Register,
        negate: bool,
        blend: Option<MemoryOperand>,
        damaged: bool,
    ) {
        let s = self.isa.scratch();
        let mut negate = negate;
        if let Some(old) = blend {
            let table = if negate {
                (!TERN_A & TERN_B) | (TERN_C & !TERN_B)
            } else {
                (TERN_A & TERN_B) | (TERN_C & !TERN_B)
            };
            negate = false;
            self.emit(Instruction::with2(self.isa.load(), s, mask_operand()));
            self.emit(Instruction::with4(TERNLOG, d, s, old, table as u32));
        }
        if damaged {
            let a = if negate { !TERN_A } else { TERN_A };
            negate = false;
            self.emit(Instruction::with4(
                TERNLOG,
                d,
                d,
                damage_operand(),
                (a & !TERN_C) as u32,
            ));
        }
        if negate {
            self.emit(Instruction::with4(TERNLOG, d, d, d, !TERN_A as u32));
        }
    }

    /// AVX2: negate with all-ones, blend with and/andn/or, clear damage with andn.
    fn finish_avx2(
        &mut self,
        d: Register,
        negate: bool,
        blend: Option<MemoryOperand>,
        damaged: bool,
    ) {
        let (isa, s) = (self.isa, self.isa.scratch());
        if negate {
            self.emit(Instruction::with3(
                Code::VEX_Vpcmpeqd_ymm_ymm_ymmm256,
                s,
                s,
                s,
            ));
            self.emit(Instruction::with3(isa.xor(), d, d, s));
        }
        if let Some(old) = blend {
            self.emit(Instruction::with2(isa.load(), s, mask_operand()));
            self.emit(Instruction::with3(isa.and(), d, d, s));
            self.emit(Instruction::with3(isa.andn(), s, s, old));
            self.emit(Instruction::with3(isa.or(), d, d, s));
        }
        if damaged {
            self.emit(Instruction::with2(isa.load(), s, damage_operand()));
            self.emit(Instruction::with3(isa.andn(), d, s, d));
        }
    }
}

#[derive(Clone, Copy)]
enum Op {
    Reg(u8),
    Mem(MemoryOperand),
}

/// The current vector's update-mask words.
fn mask_operand() -> MemoryOperand {
    MemoryOperand::with_base_index_scale_displ_size(MASK_BASE, INDEX, 1, 0, 1)
}

/// The current vector's damage words.
fn damage_operand() -> MemoryOperand {
    MemoryOperand::with_base_index_scale_displ_size(DAMAGE_BASE, INDEX, 1, 0, 1)
}
