//! Memoised tool results. A finished capture never changes, and assistants
//! often repeat a call (re-reading stats while following a chain), so a
//! result is reused while the database file, and its `-wal` side file, keep
//! the same size and modification time. A capture still being written
//! changes them on every batch, which invalidates its entries.

use rmcp::model::CallToolResult;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// Entries kept before the cache is emptied and starts again.
const MAX_ENTRIES: usize = 512;

/// What a database file looked like when a result was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    wal_len: u64,
    wal_modified: Option<SystemTime>,
}

impl Stamp {
    /// Current stamp of `path`, `None` when it cannot be read.
    pub fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        let wal_meta = std::fs::metadata(ingero_store::wal_file(path)).ok();
        Some(Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            wal_len: wal_meta.as_ref().map_or(0, |m| m.len()),
            wal_modified: wal_meta.and_then(|m| m.modified().ok()),
        })
    }
}

type Key = (PathBuf, &'static str, String);

/// Results by (database, tool, arguments).
#[derive(Default)]
pub struct ResultCache {
    entries: Mutex<HashMap<Key, (Stamp, CallToolResult)>>,
}

impl ResultCache {
    /// A stored result still valid for `stamp`.
    pub fn get(
        &self,
        db: &Path,
        tool: &'static str,
        args: &str,
        stamp: Stamp,
    ) -> Option<CallToolResult> {
        let map = self.entries.lock().ok()?;
        let (s, r) = map.get(&(db.to_path_buf(), tool, args.to_string()))?;
        (*s == stamp).then(|| r.clone())
    }

    /// Stores a successful result.
    pub fn put(
        &self,
        db: &Path,
        tool: &'static str,
        args: String,
        stamp: Stamp,
        result: &CallToolResult,
    ) {
        if result.is_error == Some(true) {
            return;
        }
        if let Ok(mut map) = self.entries.lock() {
            if map.len() >= MAX_ENTRIES {
                map.clear();
            }
            map.insert((db.to_path_buf(), tool, args), (stamp, result.clone()));
        }
    }
}
