//! Merging the capture databases of several nodes or ranks into one file
//! (`ingero merge`): every input becomes its own sessions, its times are put
//! on the reference clock, its pids are kept apart from the other inputs',
//! and every row that has a pid gets the node and rank of its process.
//!
//! The copy is done by SQLite itself: each input is attached read-only to
//! the output's connection and every table is filled with one
//! `INSERT ... SELECT`, built from the output's column list, that maps the
//! session ids, times and pids on the way (no row passes through Rust, so
//! inputs of millions of rows merge in seconds). A column an older input
//! lacks reads as the value [`crate::compat`] shows for it
//! ([`crate::schema::ADDED_COLUMNS`]); a table it lacks is skipped. Each
//! input is one transaction; a merge that fails removes the half-written
//! output.

use crate::error::{Result, StoreError};
use crate::open::{side_files, wal_file, DbFormat, TraceDb};
use crate::schema::{migrate, ADDED_COLUMNS, AGGREGATE_BUCKET_NS, PID_TABLES};
use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};
use std::collections::{BTreeMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// One database to merge, with how to place it.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeInput {
    /// The capture file.
    pub path: PathBuf,
    /// Node name its rows get (the capture's host name unless given).
    pub node: String,
    /// Subtracted from every time of this input to put it on the reference
    /// clock, ns.
    pub clock_offset_ns: i64,
    /// Median absolute deviation of the per-collective offset estimates, ns
    /// (-1 when not estimated).
    pub offset_spread_ns: i64,
    /// Collectives matched with the reference to estimate the offset.
    pub matched: i64,
    /// How the offset was found (for `merge_sources.offset_method`).
    pub offset_method: String,
    /// True for the input whose clock the others are put on.
    pub reference: bool,
}

impl MergeInput {
    /// An input placed as it is: node `node`, no clock offset (not
    /// estimated), not the reference. For callers (tests, scripts) that set
    /// the few fields they care about.
    pub fn new(path: impl Into<PathBuf>, node: impl Into<String>) -> MergeInput {
        MergeInput {
            path: path.into(),
            node: node.into(),
            clock_offset_ns: 0,
            offset_spread_ns: -1,
            matched: 0,
            offset_method: String::new(),
            reference: false,
        }
    }
}

/// What a merge wrote.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MergeSummary {
    /// Output file.
    pub path: PathBuf,
    /// Per input: its path, the sessions it became, the pid offset given.
    pub inputs: Vec<MergedInput>,
}

/// Where one input went in the merged file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MergedInput {
    /// Input file.
    pub path: PathBuf,
    /// Node name.
    pub node: String,
    /// Session ids it has in the merged file.
    pub sessions: Vec<i64>,
    /// Added to its pids and tids.
    pub pid_offset: i64,
    /// Subtracted from its times, ns (the input's `clock_offset_ns`, kept
    /// here so that the summary says everything done to the input).
    pub clock_offset_ns: i64,
    /// Rows copied, all tables together.
    pub rows: i64,
    /// Rows copied per table (tables the input has; `cuda_ops` and
    /// `stacks` count only the rows the output did not have yet).
    pub tables: BTreeMap<String, i64>,
}

/// Stride of the pid offsets given to inputs whose pids collide: Linux pids
/// are below 2^22 (`PID_MAX_LIMIT` on 64-bit kernels), so input `k` shifted
/// by `k * PID_STRIDE` cannot meet another input's pids.
pub const PID_STRIDE: i64 = 1 << 22;

/// Epoch-ns columns: the clock offset is subtracted from them.
const TIME_COLUMNS: &[&str] = &["ts_ns", "bucket_ns", "start_ns", "end_ns", "init_ts_ns"];

/// Epoch-ns columns in which 0 means "unknown" or "not yet" (a capture still
/// running, a communicator never destroyed): shifted except where 0.
const TIME_COLUMNS_ZERO_UNKNOWN: &[&str] = &[
    "started_ns",
    "stopped_ns",
    "first_seen_ns",
    "last_seen_ns",
    "destroy_ts_ns",
];

/// Columns that hold a pid or a tid: the pid offset is added to them, except
/// to 0 (no parent, the idle task), which is the same on every node.
const PID_COLUMNS: &[&str] = &["pid", "tid", "ppid"];

/// Columns of the input's pid tables whose values are collected to find
/// whether its pids collide with those already in the output.
const ID_COLUMNS: &[&str] = &["pid", "tid"];

/// Tables filled with `INSERT OR IGNORE`: rows shared by every capture (the
/// CUDA catalogue, seeded by the migration) or interned by content (stacks,
/// whose id is a hash of their frames).
const SHARED_TABLES: &[&str] = &["cuda_ops", "stacks"];

/// Name the input is attached under.
const SRC: &str = "merge_src";

/// Refuses a file `ingero merge` cannot take: only native (ingero-rs)
/// captures have the session, pid and clock columns a merge maps; an
/// Ingero (Go) file gets an error saying so. Exists so that a caller that
/// opens the inputs itself (the CLI, to estimate the offsets) can stop
/// before any work with the same message the merge would give.
pub fn check_mergeable(db: &TraceDb) -> Result<i64> {
    match db.format() {
        DbFormat::Native { version } => Ok(*version),
        DbFormat::IngeroGo { .. } => Err(StoreError::MergeForeign(db.path().to_path_buf())),
    }
}

/// Writes a new database at `out`, at the current schema, holding every row
/// of every input: the one step that turns per-node captures of a
/// distributed job into one file the analysis reads as a whole.
///
/// Each input's sessions get new ids (the highest id so far plus its own);
/// `clock_offset_ns` is subtracted from its times; when its pids or tids
/// meet those of an earlier input, a multiple of [`PID_STRIDE`] (its index
/// times the stride, or the next free multiple) is added to its pids, tids,
/// parent pids, fork children and wakers; every row with a pid gets the
/// input's node and the global rank of its process (`processes.rank`, -1
/// unknown). `merge_sources` gets one row per input session (an input that
/// is itself a merge keeps its rows, their session ids, offsets and nodes
/// carried over). Inputs are attached read-only and never modified; `out`
/// must not exist.
pub fn merge_into(out: &Path, inputs: &[MergeInput]) -> Result<MergeSummary> {
    if inputs.is_empty() {
        return Err(StoreError::MergeNoInputs);
    }
    let checked = check_inputs(inputs)?;
    let mut output = NewFile::create(out)?;
    let mut merged = Vec::with_capacity(inputs.len());
    for (index, (input, wal_at_rest)) in inputs.iter().zip(&checked.wal_at_rest).enumerate() {
        let conn = output.conn()?;
        merged.push(copy_input(conn, index, input, *wal_at_rest)?);
    }
    let conn = output.conn()?;
    conn.execute(
        "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES ('aggregate_bucket_ns', ?1)",
        [checked.bucket_ns.to_string()],
    )?;
    // Launch rows of any input: its kept rows are weighted in the merged
    // file too; inputs with every row kept weigh 1 by the same rule.
    if let Some(keep) = checked.launch_row_keep_ns {
        conn.execute(
            "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES (?1, ?2)",
            rusqlite::params![crate::schema::META_LAUNCH_ROW_KEEP_NS, keep.to_string()],
        )?;
    }
    // Call folding of any input, by the same rule.
    if let Some(keep) = checked.call_row_keep_ns {
        conn.execute(
            "INSERT OR REPLACE INTO ingero_meta(key, value) VALUES (?1, ?2)",
            rusqlite::params![crate::schema::META_CALL_ROW_KEEP_NS, keep.to_string()],
        )?;
    }
    output.finish()?;
    Ok(MergeSummary {
        path: out.to_path_buf(),
        inputs: merged,
    })
}

/// What the inputs were found to be before anything is written.
struct Checked {
    /// Width of the aggregate buckets, common to every input.
    bucket_ns: i64,
    /// Per input: a write-ahead-log file with no log beside it (attached
    /// immutable, as [`TraceDb::open`] reads it, so that no `-wal`/`-shm`
    /// files appear next to it).
    wal_at_rest: Vec<bool>,
    /// Launch-row threshold of the first input that records one.
    launch_row_keep_ns: Option<i64>,
    /// Call-folding threshold of the first input that records one.
    call_row_keep_ns: Option<i64>,
}

/// Opens every input once, so that a missing, foreign, newer or empty file,
/// or a bucket width that differs, is refused before the output exists.
fn check_inputs(inputs: &[MergeInput]) -> Result<Checked> {
    let mut first: Option<(PathBuf, i64)> = None;
    let mut wal_at_rest = Vec::with_capacity(inputs.len());
    let mut launch_row_keep_ns = None;
    let mut call_row_keep_ns = None;
    for input in inputs {
        let db = TraceDb::open(&input.path)?;
        check_mergeable(&db)?;
        launch_row_keep_ns =
            launch_row_keep_ns.or(db.meta_i64(crate::schema::META_LAUNCH_ROW_KEEP_NS));
        call_row_keep_ns = call_row_keep_ns.or(db.meta_i64(crate::schema::META_CALL_ROW_KEEP_NS));
        let bucket = db.aggregate_bucket_ns();
        match &first {
            None => first = Some((input.path.clone(), bucket)),
            Some((path, expected)) if *expected != bucket => {
                return Err(StoreError::MergeBucketMismatch {
                    path: input.path.clone(),
                    found: bucket,
                    first: path.clone(),
                    expected: *expected,
                })
            }
            Some(_) => {}
        }
        drop(db);
        wal_at_rest.push(is_wal_at_rest(&input.path)?);
    }
    Ok(Checked {
        bucket_ns: first.map_or(AGGREGATE_BUCKET_NS, |(_, b)| b),
        wal_at_rest,
        launch_row_keep_ns,
        call_row_keep_ns,
    })
}

/// True when `path` is in write-ahead-log mode (header bytes 18 and 19 are
/// 2) and has no `-wal` file beside it: no writer has it open.
fn is_wal_at_rest(path: &Path) -> Result<bool> {
    let mut header = [0u8; 20];
    let mut file = std::fs::File::open(path).map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let n = file.read(&mut header)?;
    let wal_mode = n == header.len() && header[18] == 2 && header[19] == 2;
    Ok(wal_mode && !wal_file(path).exists())
}

/// The output being written: removed again (with SQLite's side files)
/// unless [`NewFile::finish`] is reached, so that a failed merge leaves
/// nothing that looks like a merged file.
struct NewFile {
    path: PathBuf,
    conn: Option<Connection>,
    keep: bool,
    /// The schema's own indexes, dropped while the rows are copied and made
    /// again at the end: one sort per index is faster than keeping them up
    /// to date row by row (10M calls: about 12 s instead of 16 s).
    indexes: Vec<String>,
}

impl NewFile {
    /// Claims `path` (it must not exist: created exclusively, so two merges
    /// cannot write one file) and brings it to the current schema.
    fn create(path: &Path) -> Result<NewFile> {
        for side in side_files(path).iter().skip(1) {
            // A leftover journal would be "rolled back" into the new file.
            if side.exists() {
                return Err(StoreError::MergeOutputExists(side.clone()));
            }
        }
        // Mode 0600, never through a link (a dangling one included).
        match crate::safe_open::create_new(path) {
            Ok(_) => {}
            Err(StoreError::AlreadyExists(_)) => {
                return Err(StoreError::MergeOutputExists(path.to_path_buf()))
            }
            Err(e) => return Err(e),
        }
        let mut file = NewFile {
            path: path.to_path_buf(),
            conn: None,
            keep: false,
            indexes: Vec::new(),
        };
        // URI names are on so that inputs can be attached `mode=ro`; a
        // relative output name that looks like a URI is made plainly a path.
        let name = if path.is_relative() && path.to_string_lossy().starts_with("file:") {
            Path::new(".").join(path)
        } else {
            path.to_path_buf()
        };
        let mut conn = Connection::open_with_flags(
            &name,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            detail: e.to_string(),
        })?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // Room for the index pages of large inputs (KiB, as a negative count).
        conn.pragma_update(None, "cache_size", -262_144)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        migrate(&mut conn)?;
        let indexes: Vec<(String, String)> = conn
            .prepare(
                "SELECT name, sql FROM main.sqlite_master WHERE type = 'index' AND sql IS NOT NULL",
            )?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        for (name, _) in &indexes {
            conn.execute_batch(&format!("DROP INDEX main.{}", ident(name)))?;
        }
        file.indexes = indexes.into_iter().map(|(_, sql)| sql).collect();
        conn.execute_batch(
            "CREATE TEMP TABLE merge_out_ids (id INTEGER PRIMARY KEY);
             CREATE TEMP TABLE merge_in_ids (id INTEGER PRIMARY KEY);
             CREATE TEMP TABLE merge_ranks (
                 session_id INTEGER NOT NULL,
                 pid        INTEGER NOT NULL,
                 rank       INTEGER NOT NULL,
                 PRIMARY KEY (session_id, pid)
             );",
        )?;
        file.conn = Some(conn);
        Ok(file)
    }

    /// The output's connection.
    fn conn(&mut self) -> Result<&mut Connection> {
        self.conn.as_mut().ok_or_else(|| StoreError::Open {
            path: self.path.clone(),
            detail: "the merge output was closed".into(),
        })
    }

    /// Makes the indexes again, closes the output and keeps it.
    fn finish(mut self) -> Result<()> {
        if let Some(mut conn) = self.conn.take() {
            let tx = conn.transaction()?;
            for sql in &self.indexes {
                tx.execute_batch(sql)?;
            }
            tx.commit()?;
            conn.execute_batch("DROP TABLE temp.merge_out_ids; DROP TABLE temp.merge_in_ids; DROP TABLE temp.merge_ranks;")?;
            conn.close()
                .map_err(|(_, e)| StoreError::from_sqlite(&self.path, e))?;
        }
        self.keep = true;
        Ok(())
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        drop(self.conn.take());
        if !self.keep {
            for side in side_files(&self.path) {
                // Best effort: the error that stopped the merge is the one to report.
                let _ = std::fs::remove_file(side);
            }
        }
    }
}

/// Attaches one input read-only, copies it in one transaction, detaches it.
fn copy_input(
    conn: &mut Connection,
    index: usize,
    input: &MergeInput,
    wal_at_rest: bool,
) -> Result<MergedInput> {
    let uri = crate::foreign::file_uri(&input.path, wal_at_rest);
    conn.execute(&format!("ATTACH DATABASE ?1 AS {SRC}"), [&uri])
        .map_err(|e| StoreError::from_sqlite(&input.path, e))?;
    let copied = copy_attached(conn, index, input);
    let detached = conn.execute_batch(&format!("DETACH DATABASE {SRC}"));
    let merged = copied.map_err(|e| match e {
        StoreError::Sqlite(e) => StoreError::from_sqlite(&input.path, e),
        other => other,
    })?;
    detached?;
    Ok(merged)
}

/// How the rows of one input are mapped into the output.
struct Placement<'a> {
    input: &'a MergeInput,
    /// Added to its session ids.
    session_base: i64,
    /// Added to its pids and tids.
    pid_offset: i64,
    /// Some of its processes have a known rank (`temp.merge_ranks`).
    has_ranks: bool,
    /// It is itself a merge: its sessions listed in its `merge_sources`
    /// keep the node names their rows have.
    is_merge: bool,
}

/// Copies the attached input, every table it shares with the output, in
/// one transaction.
fn copy_attached(conn: &mut Connection, index: usize, input: &MergeInput) -> Result<MergedInput> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let session_base: i64 =
        tx.query_row("SELECT COALESCE(MAX(id), 0) FROM main.sessions", [], |r| {
            r.get(0)
        })?;
    let src_tables: HashSet<String> = table_names(&tx, SRC)?.into_iter().collect();
    let has = |t: &str| src_tables.contains(t);

    let pid_offset = place_pids(&tx, index, input, &src_tables)?;
    tx.execute(
        "INSERT OR IGNORE INTO temp.merge_out_ids(id) SELECT id + ?1 FROM temp.merge_in_ids",
        [pid_offset],
    )?;

    tx.execute("DELETE FROM temp.merge_ranks", [])?;
    if has("processes") && column_names(&tx, SRC, "processes")?.contains("rank") {
        tx.execute(
            &format!(
                "INSERT OR REPLACE INTO temp.merge_ranks(session_id, pid, rank) \
                 SELECT session_id, pid, rank FROM {SRC}.processes WHERE rank >= 0"
            ),
            [],
        )?;
    }
    let has_ranks: bool =
        tx.query_row("SELECT EXISTS(SELECT 1 FROM temp.merge_ranks)", [], |r| {
            r.get(0)
        })?;
    let is_merge = has("merge_sources")
        && tx.query_row(
            &format!("SELECT EXISTS(SELECT 1 FROM {SRC}.merge_sources)"),
            [],
            |r| r.get(0),
        )?;
    if has("cuda_ops") {
        check_catalogue(&tx, input)?;
    }

    let place = Placement {
        input,
        session_base,
        pid_offset,
        has_ranks,
        is_merge,
    };
    let mut tables = BTreeMap::new();
    for table in table_names(&tx, "main")? {
        if table == "ingero_meta" || table == "merge_sources" || !has(&table) {
            continue;
        }
        let rows = copy_table(&tx, &table, &place)?;
        tables.insert(table, rows);
    }
    let carried = write_merge_sources(&tx, &place, has("merge_sources"))?;
    if carried > 0 {
        tables.insert("merge_sources".to_string(), carried);
    }
    let sessions: Vec<i64> = tx
        .prepare(&format!("SELECT id + ?1 FROM {SRC}.sessions ORDER BY id"))?
        .query_map([session_base], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    tx.commit()?;
    Ok(MergedInput {
        path: input.path.clone(),
        node: input.node.clone(),
        sessions,
        pid_offset,
        clock_offset_ns: input.clock_offset_ns,
        rows: tables.values().sum(),
        tables,
    })
}

/// The pid offset of one input: 0 when none of its pids and tids is in the
/// output yet, else the first multiple of [`PID_STRIDE`] from its index on
/// that makes them all new (the index's own one unless an earlier input is
/// itself a merge with pids that high). Leaves the input's ids in
/// `temp.merge_in_ids`.
fn place_pids(
    tx: &Connection,
    index: usize,
    input: &MergeInput,
    src_tables: &HashSet<String>,
) -> Result<i64> {
    tx.execute("DELETE FROM temp.merge_in_ids", [])?;
    for table in PID_TABLES.iter().filter(|t| src_tables.contains(**t)) {
        let have = column_names(tx, SRC, table)?;
        for column in ID_COLUMNS.iter().filter(|c| have.contains(**c)) {
            tx.execute(
                &format!(
                    "INSERT OR IGNORE INTO temp.merge_in_ids(id) \
                     SELECT DISTINCT {c} FROM {SRC}.{t} WHERE {c} != 0",
                    c = ident(column),
                    t = ident(table)
                ),
                [],
            )?;
        }
    }
    let collides = |offset: i64| -> rusqlite::Result<bool> {
        tx.query_row(
            "SELECT EXISTS(SELECT 1 FROM temp.merge_in_ids AS i \
             JOIN temp.merge_out_ids AS o ON o.id = i.id + ?1)",
            [offset],
            |r| r.get(0),
        )
    };
    if !collides(0)? {
        return Ok(0);
    }
    let highest: i64 = tx.query_row(
        "SELECT COALESCE(MAX(id), 0) FROM temp.merge_in_ids",
        [],
        |r| r.get(0),
    )?;
    let mut k = i64::try_from(index.max(1)).unwrap_or(i64::MAX);
    loop {
        let offset = k.saturating_mul(PID_STRIDE);
        if offset.saturating_add(highest) > i64::from(i32::MAX) {
            return Err(StoreError::MergeConflict {
                path: input.path.clone(),
                detail: format!(
                    "its pids collide with earlier inputs' and no offset of a multiple of {PID_STRIDE} \
                     keeps them below 2^31 (highest pid {highest}); merge fewer files at once"
                ),
            });
        }
        if !collides(offset)? {
            return Ok(offset);
        }
        k += 1;
    }
}

/// Refuses an input whose CUDA catalogue gives an op id another name than
/// the output's (its calls would be read as other functions).
fn check_catalogue(tx: &Connection, input: &MergeInput) -> Result<()> {
    let conflict: Option<(i64, String, String)> = tx
        .query_row(
            &format!(
                "SELECT s.id, s.name, m.name FROM {SRC}.cuda_ops AS s \
                 JOIN main.cuda_ops AS m ON m.id = s.id OR m.name = s.name \
                 WHERE m.id != s.id OR m.name != s.name LIMIT 1"
            ),
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
    match conflict {
        None => Ok(()),
        Some((id, theirs, ours)) => Err(StoreError::MergeConflict {
            path: input.path.clone(),
            detail: format!(
                "its CUDA catalogue has op {id} = {theirs}, this ingero's has {ours} for that op"
            ),
        }),
    }
}

/// One column of a table, as `PRAGMA table_info` gives it.
struct Column {
    name: String,
    ty: String,
    notnull: bool,
    default: Option<String>,
    pk: i64,
}

/// Copies one table of the attached input into the output with one
/// `INSERT ... SELECT`; returns the rows written.
fn copy_table(tx: &Connection, table: &str, place: &Placement) -> Result<i64> {
    let out_columns = columns(tx, "main", table)?;
    let have = column_names(tx, SRC, table)?;
    let pk_columns = out_columns.iter().filter(|c| c.pk > 0).count();
    let mut names = Vec::with_capacity(out_columns.len());
    let mut values = Vec::with_capacity(out_columns.len());
    for column in &out_columns {
        let rowid_alias =
            column.pk == 1 && pk_columns == 1 && column.ty.eq_ignore_ascii_case("INTEGER");
        if rowid_alias && table != "sessions" && !SHARED_TABLES.contains(&table) {
            // Event ids (cuda_calls, host_events, nccl_calls): SQLite numbers them.
            continue;
        }
        let value = if have.contains(&column.name) {
            format!("t.{}", ident(&column.name))
        } else {
            missing_value(table, column, &place.input.path)?
        };
        names.push(ident(&column.name));
        values.push(place.map(table, &column.name, value));
    }
    let verb = if SHARED_TABLES.contains(&table) {
        "INSERT OR IGNORE"
    } else {
        "INSERT"
    };
    let sql = format!(
        "{verb} INTO main.{t} ({}) SELECT {} FROM {SRC}.{t} AS t",
        names.join(", "),
        values.join(", "),
        t = ident(table)
    );
    let mut stmt = tx.prepare(&sql)?;
    if let Some(i) = stmt.parameter_index(":node")? {
        stmt.raw_bind_parameter(i, &place.input.node)?;
    }
    let rows = stmt.raw_execute()?;
    Ok(i64::try_from(rows).unwrap_or(i64::MAX))
}

/// The value an input without `column` reads as: the one an older file is
/// shown ([`ADDED_COLUMNS`]), else the column's default.
fn missing_value(table: &str, column: &Column, path: &Path) -> Result<String> {
    let added = ADDED_COLUMNS
        .iter()
        .flat_map(|(_, columns)| columns.iter())
        .find(|(t, c, _)| *t == table && *c == column.name)
        .map(|(_, _, value)| format!("({value})"));
    added
        .or_else(|| column.default.clone().map(|d| format!("({d})")))
        .or_else(|| (!column.notnull).then(|| "NULL".to_string()))
        .ok_or_else(|| StoreError::ForeignSchema {
            path: path.to_path_buf(),
            detail: format!("table {table} has no column {}", column.name),
        })
}

impl Placement<'_> {
    /// The expression that writes `value` (the input's column, or its
    /// stand-in) into `table.column` of the output.
    fn map(&self, table: &str, column: &str, value: String) -> String {
        let clock = self.input.clock_offset_ns;
        let pids = self.pid_offset;
        let pid_table = PID_TABLES.contains(&table);
        match column {
            "session_id" => plus(value, self.session_base),
            "id" if table == "sessions" => plus(value, self.session_base),
            c if TIME_COLUMNS.contains(&c) && clock != 0 => format!("({value} - ({clock}))"),
            c if TIME_COLUMNS_ZERO_UNKNOWN.contains(&c) && clock != 0 => {
                format!("(CASE WHEN {value} = 0 THEN 0 ELSE {value} - ({clock}) END)")
            }
            c if PID_COLUMNS.contains(&c) && pids != 0 => {
                format!("(CASE WHEN {value} = 0 THEN 0 ELSE {value} + {pids} END)")
            }
            // Fork: arg is the child's pid; wakeup: the waker's (0 = interrupt).
            "arg" if table == "host_events" && pids != 0 => format!(
                "(CASE WHEN t.kind IN (2, 4) AND {value} > 0 THEN {value} + {pids} ELSE {value} END)"
            ),
            "target_pids" if table == "sessions" && pids != 0 => format!(
                "(CASE WHEN json_valid({value}) AND json_type({value}) = 'array' THEN \
                 (SELECT json_group_array(CASE WHEN j.type = 'integer' AND j.value != 0 \
                 THEN j.value + {pids} ELSE j.value END ORDER BY j.key) FROM json_each({value}) AS j) \
                 ELSE {value} END)"
            ),
            "node" if pid_table && self.is_merge => format!(
                "(CASE WHEN {value} != '' AND t.session_id IN \
                 (SELECT session_id FROM {SRC}.merge_sources) THEN {value} ELSE :node END)"
            ),
            "node" if pid_table => ":node".to_string(),
            "rank" if pid_table && table != "processes" => {
                if self.has_ranks {
                    "COALESCE((SELECT r.rank FROM temp.merge_ranks AS r \
                     WHERE r.session_id = t.session_id AND r.pid = t.pid), -1)"
                        .to_string()
                } else {
                    "-1".to_string()
                }
            }
            _ => value,
        }
    }
}

/// `value + n`, or `value` itself when `n` is 0.
fn plus(value: String, n: i64) -> String {
    if n == 0 {
        value
    } else {
        format!("({value} + ({n}))")
    }
}

/// One `merge_sources` row per session of the input: carried over (session
/// id mapped, this merge's clock and pid offsets added to theirs) for the
/// sessions an already merged input lists, new for the others. Returns the
/// rows carried over.
fn write_merge_sources(tx: &Connection, place: &Placement, has_table: bool) -> Result<i64> {
    let input = place.input;
    let mut carried = 0;
    if has_table {
        carried = tx.execute(
            &format!(
                "INSERT INTO main.merge_sources(session_id, path, node, reference, \
                 clock_offset_ns, offset_spread_ns, matched, offset_method, pid_offset) \
                 SELECT session_id + ?1, path, node, CASE WHEN ?2 THEN reference ELSE 0 END, \
                 clock_offset_ns + ?3, offset_spread_ns, matched, offset_method, pid_offset + ?4 \
                 FROM {SRC}.merge_sources"
            ),
            params![
                place.session_base,
                input.reference,
                input.clock_offset_ns,
                place.pid_offset
            ],
        )?;
    }
    let listed = if has_table {
        format!(" WHERE id NOT IN (SELECT session_id FROM {SRC}.merge_sources)")
    } else {
        String::new()
    };
    tx.execute(
        &format!(
            "INSERT INTO main.merge_sources(session_id, path, node, reference, clock_offset_ns, \
             offset_spread_ns, matched, offset_method, pid_offset) \
             SELECT id + ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 FROM {SRC}.sessions{listed}"
        ),
        params![
            place.session_base,
            input.path.to_string_lossy(),
            input.node,
            input.reference,
            input.clock_offset_ns,
            input.offset_spread_ns,
            input.matched,
            input.offset_method,
            place.pid_offset
        ],
    )?;
    Ok(i64::try_from(carried).unwrap_or(i64::MAX))
}

/// Tables of one attached schema (`main` or the input), sqlite's own left out.
fn table_names(conn: &Connection, schema: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare(&format!(
        "SELECT name FROM {schema}.sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
    ))?
    .query_map([], |r| r.get(0))?
    .collect()
}

/// The columns of `schema.table`.
fn columns(conn: &Connection, schema: &str, table: &str) -> rusqlite::Result<Vec<Column>> {
    conn.prepare(&format!("PRAGMA {schema}.table_info({})", ident(table)))?
        .query_map([], |r| {
            Ok(Column {
                name: r.get(1)?,
                ty: r.get(2)?,
                notnull: r.get(3)?,
                default: r.get(4)?,
                pk: r.get(5)?,
            })
        })?
        .collect()
}

/// The column names of `schema.table`.
fn column_names(conn: &Connection, schema: &str, table: &str) -> rusqlite::Result<HashSet<String>> {
    Ok(columns(conn, schema, table)?
        .into_iter()
        .map(|c| c.name)
        .collect())
}

/// `name` as an SQL identifier, quoted.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Durations and other ns columns that are not instants: never shifted.
    const NOT_INSTANTS: &[&str] = &[
        "dur_ns",
        "sum_dur_ns",
        "min_dur_ns",
        "max_dur_ns",
        "nested_dur_ns",
        "estimated_dur_ns",
        "estimated_bound_ns",
        "off_cpu_ns",
        "sum_off_cpu_ns",
        "launch_ns",
        "alloc_free_ns",
        "sync_ns",
        "copy_ns",
        "other_ns",
        "init_dur_ns",
        "clock_offset_ns",
        "offset_spread_ns",
    ];

    /// Every `*_ns` column of the schema is either an instant the merge
    /// shifts or a duration it leaves: a new column must be classified.
    #[test]
    fn every_ns_column_is_an_instant_or_a_duration() {
        let mut conn = Connection::open_in_memory().expect("memory db");
        migrate(&mut conn).expect("migrate");
        let mut seen = 0;
        for table in table_names(&conn, "main").expect("tables") {
            for column in columns(&conn, "main", &table).expect("columns") {
                let name = column.name.as_str();
                if !name.ends_with("_ns") {
                    continue;
                }
                seen += 1;
                let instant =
                    TIME_COLUMNS.contains(&name) || TIME_COLUMNS_ZERO_UNKNOWN.contains(&name);
                assert!(
                    instant ^ NOT_INSTANTS.contains(&name),
                    "{table}.{name}: classify it as an instant or a duration in merge.rs"
                );
            }
        }
        assert!(seen > 30, "{seen} ns columns");
    }

    /// Every pid table has the node and rank columns the merge fills.
    #[test]
    fn pid_tables_have_node_and_rank() {
        let mut conn = Connection::open_in_memory().expect("memory db");
        migrate(&mut conn).expect("migrate");
        for table in PID_TABLES {
            let have = column_names(&conn, "main", table).expect("columns");
            assert!(have.contains("node") && have.contains("rank"), "{table}");
            assert!(have.contains("pid"), "{table}");
        }
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(ident("rank"), "\"rank\"");
        assert_eq!(ident("a\"b"), "\"a\"\"b\"");
    }
}
