//! Serialising trace lines: one compact JSON object per line, keys in a
//! fixed order, so that equal traces are equal bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use alloy_primitives::{B256, U256, hex};

use crate::{AccountRead, AccountWrite, TraceBlock, TraceLine};

/// Writes trace lines, each followed by `\n`.
#[derive(Debug)]
pub struct TraceWriter<W> {
    out: W,
    buf: String,
}

impl<W: Write> TraceWriter<W> {
    /// Wrap an output.
    pub fn new(out: W) -> Self {
        Self {
            out,
            buf: String::new(),
        }
    }

    /// Write one line.
    pub fn write(&mut self, line: &TraceLine) -> io::Result<()> {
        self.buf.clear();
        render(line, &mut self.buf);
        self.buf.push('\n');
        self.out.write_all(self.buf.as_bytes())
    }

    /// Flush what was written to the output.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flush and return the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// One line as JSON text (without the trailing newline).
pub fn line_to_string(line: &TraceLine) -> String {
    let mut out = String::new();
    render(line, &mut out);
    out
}

fn render(line: &TraceLine, out: &mut String) {
    match line {
        TraceLine::Genesis { alloc, state_root } => {
            out.push_str(r#"{"kind":"genesis""#);
            if let Some(root) = state_root {
                let _ = write!(out, r#","state_root":"{}""#, hex::encode_prefixed(root));
            }
            out.push_str(r#","alloc":{"#);
            for (i, (address, account)) in alloc.iter().enumerate() {
                sep(out, i);
                let _ = write!(
                    out,
                    r#""{}":{{"balance":"{:#x}","nonce":{}"#,
                    hex::encode_prefixed(address),
                    account.balance,
                    account.nonce
                );
                if !account.code.is_empty() {
                    let _ = write!(out, r#","code":"{}""#, hex::encode_prefixed(&account.code));
                }
                if !account.storage.is_empty() {
                    out.push_str(r#","storage":"#);
                    storage(out, &account.storage);
                }
                out.push('}');
            }
            out.push_str("}}");
        }
        TraceLine::Block(block) => render_block(block, out),
    }
}

fn render_block(block: &TraceBlock, out: &mut String) {
    let _ = write!(out, r#"{{"kind":"block","number":{}"#, block.number);
    if let Some(gas) = block.gas_used {
        let _ = write!(out, r#","gas_used":{gas}"#);
    }
    if let Some(root) = block.state_root {
        let _ = write!(out, r#","state_root":"{}""#, hex::encode_prefixed(root));
    }
    out.push_str(r#","reads":{"#);
    for (i, (address, read)) in block.reads.iter().enumerate() {
        sep(out, i);
        let _ = write!(out, r#""{}":"#, hex::encode_prefixed(address));
        render_read(read, out);
    }
    out.push_str(r#"},"writes":{"#);
    for (i, (address, write)) in block.writes.iter().enumerate() {
        sep(out, i);
        let _ = write!(out, r#""{}":"#, hex::encode_prefixed(address));
        render_write(write, out);
    }
    out.push('}');
    if let Some(list) = &block.access_list {
        out.push_str(r#","access_list":"#);
        // alloy-eip7928's JSON (the engine API's and the fixtures' shape).
        // Its fields are numbers, hex strings and lists: serde_json fails
        // only on maps with non-string keys or a failing Serialize impl,
        // neither of which it has.
        let json = serde_json::to_string(list).expect("an access list serializes to JSON");
        out.push_str(&json);
    }
    out.push('}');
}

fn render_read(read: &AccountRead, out: &mut String) {
    let _ = write!(
        out,
        r#"{{"balance":"{:#x}","nonce":{}"#,
        read.balance, read.nonce
    );
    if let Some(hash) = read.code_hash {
        let _ = write!(out, r#","code_hash":"{}""#, hex::encode_prefixed(hash));
    }
    if let Some(code) = &read.code {
        let _ = write!(out, r#","code":"{}""#, hex::encode_prefixed(code));
    }
    if !read.storage.is_empty() {
        out.push_str(r#","storage":"#);
        storage(out, &read.storage);
    }
    out.push('}');
}

fn render_write(write: &AccountWrite, out: &mut String) {
    out.push('{');
    let mut fields = 0;
    let mut field = |out: &mut String| {
        sep(out, fields);
        fields += 1;
    };
    if write.deleted {
        field(out);
        out.push_str(r#""deleted":true"#);
    }
    if let Some(balance) = write.balance {
        field(out);
        let _ = write!(out, r#""balance":"{balance:#x}""#);
    }
    if let Some(nonce) = write.nonce {
        field(out);
        let _ = write!(out, r#""nonce":{nonce}"#);
    }
    if let Some(code) = &write.code {
        field(out);
        let _ = write!(out, r#""code":"{}""#, hex::encode_prefixed(code));
    }
    if !write.storage.is_empty() {
        field(out);
        out.push_str(r#""storage":"#);
        storage(out, &write.storage);
    }
    out.push('}');
}

fn storage(out: &mut String, slots: &BTreeMap<B256, U256>) {
    out.push('{');
    for (i, (slot, value)) in slots.iter().enumerate() {
        sep(out, i);
        let _ = write!(out, r#""{}":"{value:#x}""#, hex::encode_prefixed(slot));
    }
    out.push('}');
}

fn sep(out: &mut String, index: usize) {
    if index > 0 {
        out.push(',');
    }
}
