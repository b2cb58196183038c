//! A streaming reader: one [`TraceLine`] per non-blank input line, checking
//! the ordering rules (genesis only first, block numbers consecutive).

use std::io::BufRead;

use crate::{TraceError, TraceLine, parse_line};

/// Reads a trace line by line from any [`BufRead`]. Blank lines are skipped.
/// After the first error the iterator ends.
#[derive(Debug)]
pub struct TraceReader<R> {
    input: R,
    buf: String,
    line: usize,
    seen_any: bool,
    previous_block: Option<u64>,
    failed: bool,
}

impl<R: BufRead> TraceReader<R> {
    /// Wrap an input.
    pub fn new(input: R) -> Self {
        Self {
            input,
            buf: String::new(),
            line: 0,
            seen_any: false,
            previous_block: None,
            failed: false,
        }
    }

    /// The 1-based number of the last line read (0 before the first).
    pub fn line(&self) -> usize {
        self.line
    }

    fn next_line(&mut self) -> Option<Result<TraceLine, TraceError>> {
        loop {
            self.buf.clear();
            self.line += 1;
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(TraceError::Io {
                        line: self.line,
                        source,
                    }));
                }
            }
            if !self.buf.trim().is_empty() {
                break;
            }
        }
        let line = self.line;
        let parsed = match parse_line(&self.buf, line) {
            Ok(parsed) => parsed,
            Err(e) => return Some(Err(e)),
        };
        let first = !self.seen_any;
        self.seen_any = true;
        match &parsed {
            TraceLine::Genesis { .. } if !first => {
                return Some(Err(TraceError::GenesisNotFirst { line }));
            }
            TraceLine::Genesis { .. } => {}
            TraceLine::Block(block) => {
                if let Some(previous) = self.previous_block
                    && previous.checked_add(1) != Some(block.number)
                {
                    return Some(Err(TraceError::OutOfOrder {
                        line,
                        previous,
                        found: block.number,
                    }));
                }
                self.previous_block = Some(block.number);
            }
        }
        Some(Ok(parsed))
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceLine, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let item = self.next_line();
        if matches!(item, Some(Err(_))) {
            self.failed = true;
        }
        item
    }
}
