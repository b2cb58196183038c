//! The observer as a second process: `strata observe --samples` started on
//! the datadir a replay writes, opened read-only. It prints `ready` once the
//! datadir is open, then one sample per line, and stops when its standard
//! input closes.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::thread::JoinHandle;

use strata_observer::Sample;

use crate::CliError;

/// The first line a `strata observe --samples` prints once it is reading.
pub(crate) const READY_LINE: &str = "ready";

/// A running `strata observe --samples` child and the thread collecting its samples.
pub(crate) struct ObserverProcess {
    command: String,
    child: Child,
    stdin: Option<ChildStdin>,
    samples: Option<JoinHandle<Result<Vec<Sample>, String>>>,
    stderr: Option<JoinHandle<String>>,
}

impl ObserverProcess {
    /// Starts this executable as `strata observe --samples` on `datadir`
    /// and waits until it has opened the datadir.
    pub(crate) fn spawn(
        datadir: &Path,
        trace: &Path,
        genesis: Option<&Path>,
        rate: f64,
    ) -> Result<ObserverProcess, CliError> {
        let exe = std::env::current_exe().map_err(CliError::file("the strata executable"))?;
        let mut command = Command::new(&exe);
        command
            .arg("observe")
            .arg("--datadir")
            .arg(datadir)
            .arg("--trace")
            .arg(trace)
            .arg("--rate")
            .arg(rate.to_string())
            .arg("--samples");
        if let Some(genesis) = genesis {
            command.arg("--genesis").arg(genesis);
        }
        let line = format!("{command:?}");
        let fail = |what: String| CliError::ObserverProcess {
            command: line.clone(),
            what,
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("cannot start: {e}")))?;
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
        let mut first = String::new();
        let read = stdout.read_line(&mut first);
        if read.is_err() || first.trim_end() != READY_LINE {
            let _ = child.wait();
            let said = stderr.join().unwrap_or_default();
            return Err(fail(format!(
                "did not start reading: {}",
                said.trim()
                    .lines()
                    .last()
                    .unwrap_or("it exited without a word")
            )));
        }
        let samples = std::thread::spawn(move || {
            let mut samples = Vec::new();
            for (number, line) in stdout.lines().enumerate() {
                let line = line.map_err(|e| format!("reading its output: {e}"))?;
                samples.push(
                    Sample::parse(&line).map_err(|e| format!("output line {}: {e}", number + 2))?,
                );
            }
            Ok(samples)
        });
        Ok(ObserverProcess {
            command: line,
            stdin: child.stdin.take(),
            child,
            samples: Some(samples),
            stderr: Some(stderr),
        })
    }

    /// Closes the child's input (its signal to stop), waits for it and
    /// returns every sample it printed.
    pub(crate) fn finish(mut self) -> Result<Vec<Sample>, CliError> {
        drop(self.stdin.take());
        let status = self.child.wait();
        let samples = self.samples.take().map(|h| h.join());
        let said = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let fail = |what: String| CliError::ObserverProcess {
            command: self.command.clone(),
            what,
        };
        match status {
            Ok(status) if status.success() => {}
            Ok(status) => return Err(fail(format!("{status}: {}", said.trim()))),
            Err(e) => return Err(fail(format!("cannot wait for it: {e}"))),
        }
        match samples {
            Some(Ok(Ok(samples))) => Ok(samples),
            Some(Ok(Err(what))) => Err(fail(what)),
            _ => Err(fail("the sample collector failed".into())),
        }
    }
}

impl Drop for ObserverProcess {
    fn drop(&mut self) {
        // An error path left the child running: stop it.
        if self.samples.is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
