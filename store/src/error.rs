//! Errors raised while creating, writing or opening a trace database.

use std::path::PathBuf;

/// Everything that can go wrong in the trace store.
///
/// Each variant carries enough context for a one-line message that tells the
/// user what to do next; the CLI maps the "bad input" family to exit code 2.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The path does not exist.
    #[error(
        "{0}: no such file (give the path of a trace database, or run `ingero demo` to make one)"
    )]
    NotFound(PathBuf),
    /// The file exists but is not an SQLite database at all.
    #[error("{0}: not an SQLite database (expected a trace database written by ingero or Ingero)")]
    NotSqlite(PathBuf),
    /// SQLite reports the file as damaged.
    #[error("{path}: database is corrupt ({detail}); recover what you can with `sqlite3 {path} .recover`", path = .path.display())]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// SQLite's own description.
        detail: String,
    },
    /// The database has no tables or no recorded data.
    #[error("{0}: database holds no trace data (record one with `ingero trace` or make one with `ingero demo`)")]
    Empty(PathBuf),
    /// An SQLite database whose tables are neither ours nor Ingero's.
    #[error("{path}: not a trace database ({detail})", path = .path.display())]
    ForeignSchema {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        detail: String,
    },
    /// A native database written by a newer ingero than this one.
    #[error("{path}: schema version {found} is newer than this ingero understands ({known}); upgrade ingero", path = .path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Version stored in the file.
        found: i64,
        /// Newest version this build knows.
        known: i64,
    },
    /// The file cannot be opened for a reason other than the above (permissions, locks).
    #[error("{path}: cannot open ({detail})", path = .path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Reason reported by the OS or SQLite.
        detail: String,
    },
    /// A time-window or duration argument could not be understood (the
    /// message quotes a long text only in part).
    #[error("bad duration {}: use a number with a unit, e.g. 250ms, 30s, \"60 s\", 1.5m, \"2 minutes\", 1h30m, or ISO 8601 (PT1M30S), or a bare number of seconds (60)", crate::clip::clip_quoted(.0))]
    BadDuration(String),
    /// `ingero merge` was given no input.
    #[error("nothing to merge: give at least one trace database")]
    MergeNoInputs,
    /// The merge output exists already: a merge writes a new file and never
    /// adds to or replaces one.
    #[error("{0}: already exists; `ingero merge` writes a new file (give a path that does not exist, or remove it first)")]
    MergeOutputExists(PathBuf),
    /// A merge input written by Ingero (Go): only ingero-rs captures carry
    /// the session, pid and clock columns a merge maps.
    #[error("{0}: an Ingero (Go) database; `ingero merge` merges ingero-rs captures (record each node with `ingero trace`)")]
    MergeForeign(PathBuf),
    /// Merge inputs whose `aggregates` rows are of different widths: their
    /// per-bucket totals cannot share one table.
    #[error("{path}: aggregate buckets of {found} ns, but {first} has {expected} ns; merge captures recorded with the same bucket width", path = .path.display(), first = .first.display())]
    MergeBucketMismatch {
        /// The input that differs.
        path: PathBuf,
        /// Its bucket width, ns.
        found: i64,
        /// The first input.
        first: PathBuf,
        /// The first input's bucket width, ns.
        expected: i64,
    },
    /// A merge input that cannot be placed in the output (its catalogue
    /// disagrees with this build's, or no pid offset fits its pids).
    #[error("{path}: cannot merge ({detail})", path = .path.display())]
    MergeConflict {
        /// The input.
        path: PathBuf,
        /// What is in the way.
        detail: String,
    },
    /// A symbolic link where ingero was to write: a tool run as root must
    /// not be steered into overwriting the file a link points at.
    #[error("{0}: is a symbolic link; ingero does not write through links (give the real path, or a new file name)")]
    Symlink(PathBuf),
    /// Something already exists where a new file was to be created.
    #[error("{0}: already exists; give a new file name")]
    AlreadyExists(PathBuf),
    /// A directory, device, pipe or socket where a file was expected.
    #[error("{0}: not a regular file; give the path of a trace file, or a new file name")]
    NotRegularFile(PathBuf),
    /// An existing file owned by another user: ingero adds only to files of
    /// the user it runs as, so that root cannot be made to write into
    /// someone else's file.
    #[error("{path}: owned by uid {owner}, but ingero runs as uid {uid}; it adds captures only to its own files (give a new path, or `chown {uid} {path}` if the file is yours)", path = .path.display())]
    NotOwned {
        /// The file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The effective uid of this process.
        uid: u32,
    },
    /// An existing file that is not an ingero trace: a capture is never
    /// added to another application's database.
    #[error("{path}: not an ingero trace ({detail}); a capture is added only to a trace ingero wrote, so give a new path", path = .path.display())]
    NotATrace {
        /// The file.
        path: PathBuf,
        /// What it holds instead.
        detail: String,
    },
    /// A journal, write-ahead log or shared-memory file of an earlier
    /// database beside a new one: SQLite would apply it to the new file.
    #[error("{0}: left over from an earlier database of that name; remove it, or give a new path")]
    LeftoverSideFile(PathBuf),
    /// Rows an analysis cannot read: a value of the wrong type, or out of
    /// the range a capture writes, in a column the analyses read
    /// ([`crate::integrity`]). Refused rather than skipped, so that no
    /// analysis of the file looks complete while rows are missing from it.
    #[error("{path}: {damage}; an analysis without those rows would be wrong, so none is made. Record the capture again, or look at the rows with `sqlite3 {path} \"SELECT quote({column}), COUNT(*) FROM {table} GROUP BY typeof({column})\"`", path = .path.display(), column = .damage.column, table = .damage.table)]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The first damaged column found.
        damage: crate::integrity::Damage,
    },
    /// Any other SQLite failure while reading or writing.
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// I/O failure outside SQLite.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl StoreError {
    /// True when the error is caused by what the user gave us (a bad path or a
    /// file that is not a usable trace database), as opposed to an internal fault.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, StoreError::Sqlite(_) | StoreError::Io(_))
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;
