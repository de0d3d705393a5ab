//! Log lines of `ingero trace` (the capture engine's warnings: a library it
//! could not probe, a fallback to one uprobe link per function) on stderr.
//!
//! `INGERO_LOG` sets the filter (default `ingero=warn`); colours only on a
//! terminal. While the live table is drawn, lines are held and written above
//! the next frame, so the table is never torn; [`Held`] writes what is left
//! when it is dropped. The same warnings are also in the final summary.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Where log lines go: held in memory while the live table is on, else
/// straight to stderr.
#[derive(Clone, Default)]
pub struct LogSink {
    held: Arc<Mutex<Option<Vec<u8>>>>,
}

impl LogSink {
    fn lock(&self) -> MutexGuard<'_, Option<Vec<u8>>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The lines held since the last call (empty when not holding).
    pub fn take(&self) -> Vec<u8> {
        self.lock().as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Stops holding and returns what was held.
    fn release(&self) -> Vec<u8> {
        self.lock().take().unwrap_or_default()
    }
}

/// One log line on its way to a [`LogSink`].
pub struct SinkWriter(LogSink);

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut held = self.0.lock();
        match held.as_mut() {
            Some(lines) => {
                lines.extend_from_slice(buf);
                Ok(buf.len())
            }
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for LogSink {
    type Writer = SinkWriter;

    fn make_writer(&'a self) -> SinkWriter {
        SinkWriter(self.clone())
    }
}

/// Holds log lines while the live table runs; dropping it writes what is
/// still held to stderr and sends later lines straight there.
pub struct Held(LogSink);

impl Held {
    /// The sink, for taking held lines before each frame.
    pub fn sink(&self) -> &LogSink {
        &self.0
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let rest = self.0.release();
        if !rest.is_empty() {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(&rest);
            let _ = err.flush();
        }
    }
}

/// The filter: `INGERO_LOG` when set and valid, else warnings of the
/// ingero crates.
fn filter() -> EnvFilter {
    EnvFilter::try_from_env("INGERO_LOG").unwrap_or_else(|_| EnvFilter::new("ingero=warn"))
}

/// Installs the stderr logger (a no-op when one is installed already);
/// with `hold`, lines are held for the live table until the [`Held`] drops.
pub fn init(hold: bool) -> Held {
    let sink = LogSink::default();
    if hold {
        *sink.lock() = Some(Vec::new());
    }
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(sink.clone())
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .without_time()
        .try_init();
    Held(sink)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_lines_until_taken_then_releases() {
        let sink = LogSink::default();
        *sink.lock() = Some(Vec::new());
        let mut w = sink.make_writer();
        w.write_all(b"WARN one\n").expect("write");
        w.write_all(b"WARN two\n").expect("write");
        assert_eq!(sink.take(), b"WARN one\nWARN two\n");
        assert!(sink.take().is_empty());
        w.write_all(b"WARN three\n").expect("write");
        let held = Held(sink.clone());
        assert_eq!(held.sink().take(), b"WARN three\n");
        drop(held);
        // Released: nothing is held any more.
        assert!(sink.lock().is_none());
    }
}
