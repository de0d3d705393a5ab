//! The size limit of a running capture: a thread that looks at the
//! database (with its write-ahead log) a few times a second and, once it
//! reaches the operator's `--capture-max-bytes`, asks the capture to stop.
//! The engine then stops as it does for stop_trace: probes detached, the
//! last batch written, the database finalised, nothing recorded lost; the
//! file ends a last batch above the limit at most.

use super::view::database_bytes;
use ingero_probes::StopHandle;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The ending a capture stopped by its size limit records.
pub const SIZE_LIMIT_REACHED: &str = "size limit reached";

/// How often the database size is looked at.
const EVERY: Duration = Duration::from_millis(100);

/// A running size watch.
pub struct SizeWatch {
    reached: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SizeWatch {
    /// Watches `db` until it reaches `max_bytes` (then stops the capture
    /// through `stopper`) or [`SizeWatch::finish`] is called.
    pub fn start(db: PathBuf, max_bytes: u64, stopper: StopHandle) -> std::io::Result<SizeWatch> {
        let reached = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (r, d) = (Arc::clone(&reached), Arc::clone(&done));
        let thread = std::thread::Builder::new()
            .name("ingero-size-watch".into())
            .spawn(move || {
                while !d.load(Ordering::Acquire) {
                    if database_bytes(&db) >= max_bytes {
                        tracing::info!(db = %db.display(), max_bytes, "capture reached its size limit; stopping it");
                        r.store(true, Ordering::Release);
                        stopper.request_stop(SIZE_LIMIT_REACHED);
                        return;
                    }
                    std::thread::sleep(EVERY);
                }
            })?;
        Ok(SizeWatch {
            reached,
            done,
            thread: Some(thread),
        })
    }

    /// Ends the watch; true when it was the size limit that stopped the
    /// capture.
    pub fn finish(mut self) -> bool {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.reached.load(Ordering::Acquire)
    }
}
