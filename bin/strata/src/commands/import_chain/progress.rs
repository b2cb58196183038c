//! The import's progress: a bar over the chain file's bytes on a terminal,
//! a log line every few seconds otherwise.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Blocks and gas done so far: what a progress line reports.
#[derive(Clone, Copy)]
pub(super) struct Done {
    /// Blocks executed and committed.
    pub(super) blocks: u64,
    /// Their gas.
    pub(super) gas: u64,
}

/// Progress of one import.
pub(super) struct Progress {
    bar: Option<ProgressBar>,
    log: bool,
    last_log: Instant,
}

impl Progress {
    /// A bar over `file_bytes` when `show` and stderr is a terminal; log
    /// lines when `show` and it is not; nothing otherwise.
    pub(super) fn new(show: bool, file_bytes: u64) -> Self {
        let bar = (show && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::new(file_bytes);
            if let Ok(style) = ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30} {bytes}/{total_bytes} {msg}",
            ) {
                bar.set_style(style);
            }
            bar
        });
        Self {
            log: show && bar.is_none(),
            bar,
            last_log: Instant::now(),
        }
    }

    fn line(number: u64, run: Done, started: Instant) -> String {
        let secs = started.elapsed().as_secs_f64().max(1e-9);
        format!(
            "block {number}: {} blocks, {:.1} blocks/s, {:.1} Mgas/s",
            run.blocks,
            run.blocks as f64 / secs,
            run.gas as f64 / 1e6 / secs
        )
    }

    /// After block `number`, with `position` bytes of the file read.
    pub(super) fn update(&mut self, number: u64, position: usize, run: Done, started: Instant) {
        if let Some(bar) = &self.bar {
            bar.set_position(position as u64);
            bar.set_message(Self::line(number, run, started));
        } else if self.log && self.last_log.elapsed() >= Duration::from_secs(5) {
            self.last_log = Instant::now();
            eprintln!("import-chain: {}", Self::line(number, run, started));
        }
    }

    /// Clears the bar and says what was done in `wall`.
    pub(super) fn finish(&mut self, run: Done, wall: Duration) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if self.log || run.blocks > 0 {
            let secs = wall.as_secs_f64().max(1e-9);
            eprintln!(
                "import-chain: done: {} blocks in {secs:.2} s, {:.1} Mgas/s",
                run.blocks,
                run.gas as f64 / 1e6 / secs
            );
        }
    }
}
