//! A small EVM assembler: opcodes, minimal pushes, and labels for jumps
//! and code offsets (two-byte `PUSH2` fixed up when the code is built).

use std::collections::HashMap;

use alloy_primitives::{Bytes, U256};
use revm::bytecode::opcode;

/// Code being assembled.
#[derive(Debug, Default)]
pub(crate) struct Asm {
    code: Vec<u8>,
    labels: HashMap<&'static str, usize>,
    /// `(position of a PUSH2's operand, label it names)`.
    fixups: Vec<(usize, &'static str)>,
    /// The first problem met (a label defined twice), reported by `build`.
    problem: Option<String>,
}

impl Asm {
    /// Empty code.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Appends opcodes.
    pub(crate) fn ops(mut self, ops: &[u8]) -> Self {
        self.code.extend_from_slice(ops);
        self
    }

    /// Pushes `value` with the shortest push (`PUSH0` for zero).
    pub(crate) fn push(mut self, value: U256) -> Self {
        let bytes = value.to_be_bytes_trimmed_vec();
        if bytes.is_empty() {
            self.code.push(opcode::PUSH0);
        } else {
            self.code.push(opcode::PUSH1 + (bytes.len() as u8 - 1));
            self.code.extend_from_slice(&bytes);
        }
        self
    }

    /// Pushes a small number.
    pub(crate) fn push_u64(self, value: u64) -> Self {
        self.push(U256::from(value))
    }

    /// Pushes exactly these bytes (1 to 32 of them), leading zeros kept.
    pub(crate) fn push_bytes(mut self, bytes: &[u8]) -> Self {
        debug_assert!((1..=32).contains(&bytes.len()), "PUSH1..PUSH32");
        self.code.push(opcode::PUSH1 + (bytes.len() as u8 - 1));
        self.code.extend_from_slice(bytes);
        self
    }

    /// Pushes the code offset of `label` (a `PUSH2`, filled in by `build`).
    pub(crate) fn push_label(mut self, label: &'static str) -> Self {
        self.code.push(opcode::PUSH2);
        self.fixups.push((self.code.len(), label));
        self.code.extend_from_slice(&[0, 0]);
        self
    }

    /// `JUMPDEST` here, named `label`.
    pub(crate) fn jumpdest(self, label: &'static str) -> Self {
        self.mark(label).ops(&[opcode::JUMPDEST])
    }

    /// Names the current offset `label` without an instruction (for data
    /// appended after the code).
    pub(crate) fn mark(mut self, label: &'static str) -> Self {
        if self.labels.insert(label, self.code.len()).is_some() && self.problem.is_none() {
            self.problem = Some(format!("label `{label}` is defined twice"));
        }
        self
    }

    /// Jumps to `label`.
    pub(crate) fn jump(self, label: &'static str) -> Self {
        self.push_label(label).ops(&[opcode::JUMP])
    }

    /// Jumps to `label` if the top of the stack is non-zero.
    pub(crate) fn jumpi(self, label: &'static str) -> Self {
        self.push_label(label).ops(&[opcode::JUMPI])
    }

    /// Appends raw bytes (data, or code assembled separately).
    pub(crate) fn data(mut self, bytes: &[u8]) -> Self {
        self.code.extend_from_slice(bytes);
        self
    }

    /// The bytecode, every label filled in; a label used but not defined, or
    /// an offset past 64 KiB, is an error naming it.
    pub(crate) fn build(self) -> Result<Bytes, String> {
        if let Some(problem) = self.problem {
            return Err(problem);
        }
        let mut code = self.code;
        for (at, label) in self.fixups {
            let target = *self
                .labels
                .get(label)
                .ok_or_else(|| format!("label `{label}` is used but not defined"))?;
            let target = u16::try_from(target)
                .map_err(|_| format!("label `{label}` is at {target}, past a PUSH2"))?;
            code[at..at + 2].copy_from_slice(&target.to_be_bytes());
        }
        Ok(code.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pushes_are_minimal_and_labels_resolve() {
        let code = Asm::new()
            .push_u64(0)
            .push_u64(0x1234)
            .jump("end")
            .ops(&[opcode::INVALID])
            .jumpdest("end")
            .build()
            .expect("assembles");
        assert_eq!(
            code.as_ref(),
            &[
                opcode::PUSH0,
                opcode::PUSH2,
                0x12,
                0x34,
                opcode::PUSH2,
                0,
                9,
                opcode::JUMP,
                opcode::INVALID,
                opcode::JUMPDEST
            ]
        );
    }

    #[test]
    fn undefined_and_repeated_labels_are_errors() {
        assert!(Asm::new().jump("nowhere").build().is_err());
        assert!(Asm::new().jumpdest("a").jumpdest("a").build().is_err());
    }
}
