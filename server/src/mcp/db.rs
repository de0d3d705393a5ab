//! Pooled read-only connections to trace databases, and running analyses on
//! them off the async runtime with cancellation.
//!
//! A [`TraceDb`] is one SQLite connection: not shareable between threads at
//! once, and not free to open (an Ingero file is mapped onto views). The pool
//! keeps opened connections per file so concurrent sessions and stateless
//! requests reuse them.

use ingero_store::{StoreError, TraceDb};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Connections per file: enough to keep every core busy, few enough that a
/// burst of requests queues instead of opening (and discarding) connections.
pub(crate) fn max_connections() -> usize {
    std::thread::available_parallelism()
        .map_or(4, |n| n.get() * 2)
        .clamp(4, 32)
}

/// Open connections to one database file.
pub struct DbPool {
    path: PathBuf,
    idle: Mutex<Vec<TraceDb>>,
    permits: Arc<Semaphore>,
}

impl DbPool {
    /// The file this pool reads.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Takes an idle connection or opens a new one (blocking).
    fn checkout(self: &Arc<Self>) -> Result<Pooled, StoreError> {
        let reused = self.idle.lock().ok().and_then(|mut v| v.pop());
        let db = match reused {
            Some(db) => db,
            None => TraceDb::open(&self.path)?,
        };
        Ok(Pooled {
            pool: Arc::clone(self),
            db: Some(db),
        })
    }
}

/// A connection on loan; goes back to its pool when dropped.
struct Pooled {
    pool: Arc<DbPool>,
    db: Option<TraceDb>,
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let (Some(db), Ok(mut idle)) = (self.db.take(), self.pool.idle.lock()) {
            idle.push(db);
        }
    }
}

/// Every pool this server has opened, by canonical path.
#[derive(Default)]
pub struct Pools {
    pools: Mutex<HashMap<PathBuf, Arc<DbPool>>>,
}

impl Pools {
    /// The pool for `path` (created empty on first use; nothing is opened yet).
    pub fn get(&self, path: &Path) -> Arc<DbPool> {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let mut map = match self.pools.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        Arc::clone(map.entry(key.clone()).or_insert_with(|| {
            Arc::new(DbPool {
                path: key,
                idle: Mutex::new(Vec::new()),
                permits: Arc::new(Semaphore::new(max_connections())),
            })
        }))
    }
}

/// Why a blocking job did not produce a value.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// The database could not be opened.
    #[error(transparent)]
    Open(#[from] StoreError),
    /// The client cancelled the request.
    #[error("cancelled by the client")]
    Cancelled,
    /// The worker thread panicked or was lost.
    #[error("internal error: {0}")]
    Lost(String),
}

/// Runs `job` on a pooled connection of `pool` on the blocking thread pool.
/// When `ct` fires, the running SQLite statement is interrupted and
/// [`JobError::Cancelled`] is returned. `tick` is called about once a second
/// while the job runs (for progress notifications).
pub async fn run_job<T, F, K, Fut>(
    pool: Arc<DbPool>,
    ct: CancellationToken,
    job: F,
    mut tick: K,
) -> Result<T, JobError>
where
    T: Send + 'static,
    F: FnOnce(&TraceDb) -> T + Send + 'static,
    K: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    // Wait for a free connection slot (or for the client to give up).
    let permit = tokio::select! {
        p = Arc::clone(&pool.permits).acquire_owned() => {
            p.map_err(|e| JobError::Lost(e.to_string()))?
        }
        _ = ct.cancelled() => return Err(JobError::Cancelled),
    };
    let interrupt: Arc<Mutex<Option<rusqlite::InterruptHandle>>> = Arc::new(Mutex::new(None));
    let slot = Arc::clone(&interrupt);
    let mut handle = tokio::task::spawn_blocking(move || -> Result<T, StoreError> {
        let _permit = permit;
        let mut pooled = pool.checkout()?;
        let db = pooled
            .db
            .as_ref()
            .ok_or_else(|| StoreError::Io(std::io::Error::other("connection missing")))?;
        if let Ok(mut s) = slot.lock() {
            *s = Some(db.conn().get_interrupt_handle());
        }
        let out = job(db);
        if let Ok(mut s) = slot.lock() {
            *s = None;
        }
        // A connection interrupted mid-job is still usable; keep it.
        let _ = &mut pooled;
        Ok(out)
    });
    let mut seconds = 0u64;
    let mut interval = tokio::time::interval(Duration::from_secs(1));
    interval.tick().await;
    loop {
        tokio::select! {
            joined = &mut handle => {
                return match joined {
                    Ok(Ok(v)) => Ok(v),
                    Ok(Err(e)) => Err(JobError::Open(e)),
                    Err(e) => Err(JobError::Lost(e.to_string())),
                };
            }
            _ = ct.cancelled() => {
                if let Ok(s) = interrupt.lock() {
                    if let Some(h) = s.as_ref() {
                        h.interrupt();
                        tracing::info!("request cancelled by the client; interrupted the running query");
                    }
                }
                return Err(JobError::Cancelled);
            }
            _ = interval.tick() => {
                seconds += 1;
                tick(seconds).await;
            }
        }
    }
}
