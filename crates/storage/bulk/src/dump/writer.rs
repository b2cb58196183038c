//! [`DumpWriter`]: a state dump written line by line, an account's storage
//! entry by entry — nothing of an account is held but its code, so an
//! account with tens of millions of slots takes no more memory than one
//! with none.
//!
//! An account line is `{"address":…,"balance":…,"nonce":…,"codeHash":…`,
//! then `"code"` when the code is not empty and `"storage"` when a slot is
//! not zero (32-byte slots and values as `0x` hex, in slot order), then
//! `}` — the bytes serde writes for the same fields.

use std::io::{self, Write};

use alloy_primitives::{Address, B256, Bytes, U256, hex};

use strata_types::account::code_hash;

/// Writes a state dump: the root line at creation, then one line per
/// account (in the caller's order; `strata export` writes address order).
pub struct DumpWriter<W> {
    out: W,
    accounts: u64,
    slots: u64,
}

impl<W: Write> DumpWriter<W> {
    /// Starts a dump of the state whose root is `root`.
    pub fn new(mut out: W, root: B256) -> io::Result<Self> {
        out.write_all(b"{\"root\":")?;
        write_word(&mut out, &root)?;
        out.write_all(b"}\n")?;
        Ok(Self {
            out,
            accounts: 0,
            slots: 0,
        })
    }

    /// Writes one account whose storage `storage` yields in ascending slot
    /// order (zero values are left out); a slot not above the one before
    /// it is refused ([`io::ErrorKind::InvalidInput`]).
    pub fn account(
        &mut self,
        address: Address,
        nonce: u64,
        balance: U256,
        code: &Bytes,
        storage: impl IntoIterator<Item = (B256, U256)>,
    ) -> io::Result<()> {
        let mut line = self.begin_account(address, nonce, balance, code)?;
        for (slot, value) in storage {
            line.slot(slot, value)?;
        }
        line.finish()
    }

    /// Writes the start of an account's line; its slots follow through
    /// [`AccountLine::slot`] and [`AccountLine::finish`] ends it. A line
    /// left unfinished (an error on the way) leaves the dump cut there.
    pub fn begin_account(
        &mut self,
        address: Address,
        nonce: u64,
        balance: U256,
        code: &Bytes,
    ) -> io::Result<AccountLine<'_, W>> {
        let out = &mut self.out;
        out.write_all(b"{\"address\":")?;
        serde_json::to_writer(&mut *out, &address)?;
        out.write_all(b",\"balance\":")?;
        serde_json::to_writer(&mut *out, &balance)?;
        out.write_all(b",\"nonce\":")?;
        serde_json::to_writer(&mut *out, &nonce)?;
        out.write_all(b",\"codeHash\":")?;
        write_word(out, &code_hash(code))?;
        if !code.is_empty() {
            out.write_all(b",\"code\":")?;
            serde_json::to_writer(&mut *out, code)?;
        }
        Ok(AccountLine {
            dump: self,
            last: None,
        })
    }

    /// Accounts and non-zero slots written so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.accounts, self.slots)
    }

    /// The output, after the last line.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// One account's line being written: its non-zero slots in ascending
/// order, then [`AccountLine::finish`].
pub struct AccountLine<'a, W> {
    dump: &'a mut DumpWriter<W>,
    /// The last non-zero slot written (the `storage` object is open).
    last: Option<B256>,
}

impl<W: Write> AccountLine<'_, W> {
    /// Writes a slot (nothing for a zero value); refuses a slot that is not
    /// above the last one written.
    pub fn slot(&mut self, slot: B256, value: U256) -> io::Result<()> {
        if value.is_zero() {
            return Ok(());
        }
        let out = &mut self.dump.out;
        match self.last {
            None => out.write_all(b",\"storage\":{")?,
            Some(last) if last < slot => out.write_all(b",")?,
            Some(last) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "storage slot {slot} written after slot {last}: slots must come in ascending order"
                    ),
                ));
            }
        }
        write_word(out, &slot)?;
        out.write_all(b":")?;
        write_word(out, &B256::from(value))?;
        self.last = Some(slot);
        self.dump.slots += 1;
        Ok(())
    }

    /// Ends the line.
    pub fn finish(self) -> io::Result<()> {
        let out = &mut self.dump.out;
        if self.last.is_some() {
            out.write_all(b"}")?;
        }
        out.write_all(b"}\n")?;
        self.dump.accounts += 1;
        Ok(())
    }
}

/// Writes `word` as a JSON string, `"0x"` and 64 lowercase hex digits (as
/// serde writes a `B256`).
fn write_word(out: &mut impl Write, word: &B256) -> io::Result<()> {
    let mut text = [0u8; 2 + 2 + 64 + 1];
    text[..3].copy_from_slice(b"\"0x");
    hex::encode_to_slice(word.as_slice(), &mut text[3..67])
        .map_err(|e| io::Error::other(e.to_string()))?;
    text[67] = b'"';
    out.write_all(&text[..68])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;

    /// The reference the writer's bytes are checked against: the same fields
    /// through serde.
    #[derive(Serialize)]
    struct SerdeLine<'a> {
        address: Address,
        balance: U256,
        nonce: u64,
        #[serde(rename = "codeHash")]
        code_hash: B256,
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<&'a Bytes>,
        #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        storage: std::collections::BTreeMap<B256, B256>,
    }

    #[test]
    fn writes_the_bytes_serde_writes() {
        let code = Bytes::from_static(&[0x60, 0x01, 0x00]);
        let slots = [
            (B256::with_last_byte(1), U256::from(5)),
            (B256::with_last_byte(2), U256::ZERO),
            (B256::repeat_byte(0xab), U256::MAX),
        ];
        for (code, storage) in [
            (Bytes::new(), &[][..]),
            (code.clone(), &[][..]),
            (Bytes::new(), &slots[..]),
            (code, &slots[..]),
            (Bytes::new(), &slots[1..2]),
        ] {
            let address = Address::repeat_byte(0xc4);
            let (balance, nonce) = (U256::from(0x1234_5678u64) << 100, 42);
            let mut dump = DumpWriter::new(Vec::new(), B256::repeat_byte(7)).unwrap();
            dump.account(address, nonce, balance, &code, storage.iter().copied())
                .unwrap();
            let expected = SerdeLine {
                address,
                balance,
                nonce,
                code_hash: code_hash(&code),
                code: (!code.is_empty()).then_some(&code),
                storage: storage
                    .iter()
                    .filter(|(_, v)| !v.is_zero())
                    .map(|(s, v)| (*s, B256::from(*v)))
                    .collect(),
            };
            let root = serde_json::json!({ "root": B256::repeat_byte(7) });
            let text = format!(
                "{}\n{}\n",
                serde_json::to_string(&root).unwrap(),
                serde_json::to_string(&expected).unwrap()
            );
            assert_eq!(String::from_utf8(dump.into_inner()).unwrap(), text);
        }
    }

    #[test]
    fn refuses_slots_out_of_order() {
        let mut dump = DumpWriter::new(Vec::new(), B256::ZERO).unwrap();
        let mut line = dump
            .begin_account(Address::ZERO, 0, U256::ZERO, &Bytes::new())
            .unwrap();
        line.slot(B256::with_last_byte(2), U256::from(1)).unwrap();
        // A zero value is skipped wherever it comes.
        line.slot(B256::with_last_byte(1), U256::ZERO).unwrap();
        for slot in [1, 2] {
            let err = line
                .slot(B256::with_last_byte(slot), U256::from(1))
                .unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
            assert!(err.to_string().contains("ascending order"), "{err}");
        }
        line.finish().unwrap();
        assert_eq!(dump.counts(), (1, 1));
    }
}
