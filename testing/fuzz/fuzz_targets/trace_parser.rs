//! Fuzz target for the trace reader (`strata_trace`).
//!
//! Input: the bytes of a whole trace file, read with `TraceReader` line by
//! line. Every item is `Ok` or a `TraceError` whose line is the reader's
//! current line (and within the input) — never a panic — and the reader
//! stops after the first error. Every parsed line must survive the writer:
//! `parse_line(line_to_string(line)) == line`, and rendering is canonical
//! (rendering the re-parsed line gives the same text). Accepted block lines
//! are numbered consecutively and a genesis line only comes first.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use strata_trace::{TraceLine, TraceReader, line_to_string, parse_line};

fuzz_target!(|data: &[u8]| {
    let lines_in_input = data.split(|&b| b == b'\n').count();
    let mut reader = TraceReader::new(Cursor::new(data));
    let mut previous_block: Option<u64> = None;
    let mut accepted = 0usize;
    while let Some(item) = reader.next() {
        let line = reader.line();
        assert!(
            line >= 1 && line <= lines_in_input,
            "line {line} of {lines_in_input}"
        );
        match item {
            Ok(parsed) => {
                match &parsed {
                    TraceLine::Genesis { .. } => assert_eq!(accepted, 0, "genesis not first"),
                    TraceLine::Block(block) => {
                        if let Some(p) = previous_block {
                            assert_eq!(Some(block.number), p.checked_add(1), "out of order");
                        }
                        previous_block = Some(block.number);
                    }
                }
                accepted += 1;
                let text = line_to_string(&parsed);
                let again = parse_line(&text, line)
                    .unwrap_or_else(|e| panic!("written line does not parse: {e}\n{text}"));
                assert_eq!(
                    again, parsed,
                    "round trip through the writer changed the line"
                );
                assert_eq!(line_to_string(&again), text, "rendering is not canonical");
            }
            Err(e) => {
                assert_eq!(e.line(), line, "error names line {}: {e}", e.line());
                assert!(e.to_string().starts_with(&format!("line {line}: ")), "{e}");
                assert!(reader.next().is_none(), "the reader goes on after an error");
                break;
            }
        }
    }
});
