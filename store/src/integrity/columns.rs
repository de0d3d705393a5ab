//! The columns the analyses read, with what each may hold. One list, so that
//! the check on opening a file, the documentation and the tests agree.

/// What a column may hold for the analyses to read it as they mean to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// An integer between the two bounds, inclusive.
    Int(i64, i64),
    /// A number, integer or real (the system snapshot percentages).
    Number,
    /// Text (names, JSON frames).
    Text,
}

/// Any 64-bit integer.
const ANY: Rule = Rule::Int(i64::MIN, i64::MAX);
/// An instant of a capture: nanoseconds after the epoch, before [`crate::open::LATEST_NS`].
const TIME: Rule = Rule::Int(0, crate::open::LATEST_NS);
/// A duration no capture can exceed ([`crate::open::LONGEST_SPAN_NS`]).
const DUR: Rule = Rule::Int(0, crate::open::LONGEST_SPAN_NS);
/// A process or thread id, or another value read as a 32-bit integer.
const I32: Rule = Rule::Int(i32::MIN as i64, i32::MAX as i64);
/// A `cuda_ops.id`, read as a 16-bit code.
const OP: Rule = Rule::Int(0, u16::MAX as i64);
/// A GPU index, read as an unsigned 32-bit integer.
const GPU: Rule = Rule::Int(0, u32::MAX as i64);

/// A count, byte total or summed time: never negative, and at most 2^56
/// (72 PB, or 834 days of summed time), so that the sums the analyses make
/// of many of them stay far from overflowing.
const TOTAL: Rule = Rule::Int(0, 1 << 56);

/// One table's checked columns.
pub type TableColumns = (&'static str, &'static [(&'static str, Rule)]);

/// Every column an analysis (`explain`, `report`, `export`, `query`, the
/// MCP tools) reads, by table, with its rule. Columns a file lacks are not
/// checked (the reader adds those of older schemas with fixed values).
pub const CHECKED: &[TableColumns] = &[
    (
        "sessions",
        &[("id", ANY), ("started_ns", TIME), ("stopped_ns", TIME)],
    ),
    (
        "processes",
        &[
            ("session_id", ANY),
            ("pid", I32),
            ("ppid", I32),
            ("comm", Rule::Text),
            ("cmdline", Rule::Text),
            ("first_seen_ns", ANY),
            ("last_seen_ns", ANY),
            ("rank", I32),
            ("local_rank", I32),
            ("world_size", I32),
        ],
    ),
    (
        "cuda_ops",
        &[
            ("id", OP),
            ("name", Rule::Text),
            ("api", Rule::Text),
            ("class", Rule::Text),
        ],
    ),
    (
        "cuda_calls",
        &[
            ("session_id", ANY),
            ("ts_ns", TIME),
            ("pid", I32),
            ("tid", I32),
            ("op_id", OP),
            ("dur_ns", DUR),
            ("bytes", TOTAL),
            ("copy_kind", ANY),
            ("stream", ANY),
            ("ret", ANY),
            ("grid_x", ANY),
            ("grid_y", ANY),
            ("grid_z", ANY),
            ("block_x", ANY),
            ("block_y", ANY),
            ("block_z", ANY),
            ("nested", ANY),
            ("dur_estimated", ANY),
            ("rank", I32),
        ],
    ),
    (
        "host_events",
        &[
            ("session_id", ANY),
            ("ts_ns", TIME),
            ("pid", I32),
            ("tid", I32),
            ("kind", ANY),
            ("dur_ns", DUR),
            ("arg", ANY),
            ("cpu", ANY),
            ("count", TOTAL),
            ("bytes", TOTAL),
            ("rank", I32),
        ],
    ),
    (
        "system_snapshots",
        &[
            ("ts_ns", TIME),
            ("cpu_pct", Rule::Number),
            ("mem_used_pct", Rule::Number),
            ("mem_avail_mb", ANY),
            ("swap_used_mb", ANY),
            ("load1", Rule::Number),
            ("procs_running", ANY),
        ],
    ),
    (
        "aggregates",
        &[
            ("session_id", ANY),
            ("bucket_ns", TIME),
            ("pid", I32),
            ("source", ANY),
            ("code", ANY),
            ("count", TOTAL),
            ("stored", TOTAL),
            ("sum_dur_ns", TOTAL),
            ("min_dur_ns", TOTAL),
            ("max_dur_ns", TOTAL),
            ("sum_bytes", TOTAL),
            ("sum_threads", TOTAL),
            ("small_launches", TOTAL),
            ("nested_count", TOTAL),
            ("nested_dur_ns", TOTAL),
            ("nested_bytes", TOTAL),
            ("nested_threads", TOTAL),
            ("nested_small_launches", TOTAL),
            ("estimated_count", TOTAL),
            ("estimated_dur_ns", TOTAL),
            ("estimated_bounded", TOTAL),
            ("estimated_bound_ns", TOTAL),
            ("rank", I32),
        ],
    ),
    (
        "capture_losses",
        &[("ts_ns", ANY), ("source", Rule::Text), ("lost", ANY)],
    ),
    (
        "cuda_activity",
        &[
            ("pid", I32),
            ("tid", I32),
            ("kind", ANY),
            ("start_ns", TIME),
            ("end_ns", TIME),
            ("calls", TOTAL),
            ("launch_ns", TOTAL),
            ("alloc_free_ns", TOTAL),
            ("sync_ns", TOTAL),
            ("copy_ns", TOTAL),
            ("other_ns", TOTAL),
            ("rank", I32),
        ],
    ),
    (
        "stacks",
        &[("id", ANY), ("depth", ANY), ("frames", Rule::Text)],
    ),
    (
        "stack_samples",
        &[
            ("ts_ns", TIME),
            ("pid", I32),
            ("tid", I32),
            ("kind", ANY),
            ("off_cpu_ns", ANY),
            ("state", ANY),
            ("cpu", ANY),
            ("stack_id", ANY),
        ],
    ),
    (
        "stack_counts",
        &[
            ("bucket_ns", TIME),
            ("pid", I32),
            ("tid", I32),
            ("kind", ANY),
            ("count", TOTAL),
            ("stored", TOTAL),
            ("sum_off_cpu_ns", TOTAL),
        ],
    ),
    (
        "gpu_util_samples",
        &[("ts_ns", ANY), ("gpu", GPU), ("kind", ANY), ("value", ANY)],
    ),
    (
        "gpu_process_samples",
        &[
            ("ts_ns", ANY),
            ("gpu", GPU),
            ("pid", I32),
            ("sm_pct", ANY),
            ("mem_pct", ANY),
        ],
    ),
    (
        "nccl_calls",
        &[
            ("ts_ns", ANY),
            ("pid", I32),
            ("tid", I32),
            ("op_id", ANY),
            ("dur_ns", ANY),
            ("comm", ANY),
            ("seq", ANY),
            ("bytes", ANY),
            ("rank", I32),
        ],
    ),
];

impl Rule {
    /// An SQL condition true for a value of `column` this rule refuses.
    pub fn refuses_sql(self, column: &str) -> String {
        match self {
            Rule::Int(lo, hi) if lo == i64::MIN && hi == i64::MAX => {
                format!("typeof({column}) <> 'integer'")
            }
            Rule::Int(lo, hi) => {
                format!("(typeof({column}) <> 'integer' OR {column} NOT BETWEEN {lo} AND {hi})")
            }
            Rule::Number => format!("typeof({column}) NOT IN ('integer', 'real')"),
            Rule::Text => format!("typeof({column}) <> 'text'"),
        }
    }

    /// Whether a column declared `decl` stores what this rule wants as it
    /// was written (SQLite's affinity rules: an integer column turns numeric
    /// text into integers, a text column keeps numbers as text).
    pub fn fits_declared(self, decl: &str) -> bool {
        let decl = decl.to_ascii_uppercase();
        match self {
            Rule::Int(..) => decl.contains("INT"),
            Rule::Number => {
                decl.contains("INT")
                    || decl.contains("REAL")
                    || decl.contains("FLOA")
                    || decl.contains("DOUB")
            }
            Rule::Text => decl.contains("CHAR") || decl.contains("CLOB") || decl.contains("TEXT"),
        }
    }

    /// What a refused value is not, for the message.
    pub fn wants(self) -> String {
        match self {
            Rule::Int(lo, hi) if lo == i64::MIN && hi == i64::MAX => "an integer".into(),
            Rule::Int(lo, hi) => format!("an integer from {lo} to {hi}"),
            Rule::Number => "a number".into(),
            Rule::Text => "text".into(),
        }
    }
}
