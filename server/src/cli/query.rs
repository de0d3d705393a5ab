//! `ingero query`: raw events, filtered and paged.

use anyhow::Result;
use ingero_store::{parse_duration_ns, TimeWindow, TraceDb};
use ingero_tools::events::{query_events, EventQuery};
use ingero_tools::teach::{self, Asked};
use ingero_tools::{render, Scope};
use std::path::PathBuf;

/// Arguments of `ingero query`.
#[derive(clap::Args)]
pub struct Args {
    /// Trace database (ingero or Ingero format).
    #[arg(long)]
    db: PathBuf,
    /// CUDA function (cudaMemcpyAsync) or host event (sched_switch, mm_page_alloc, process_fork...).
    #[arg(long)]
    op: Option<String>,
    /// Only this process.
    #[arg(long)]
    pid: Option<i32>,
    /// Only the last D of the capture (e.g. 30s), relative to its end.
    #[arg(long, value_name = "D")]
    since: Option<String>,
    /// Only up to D before the capture's end.
    #[arg(long, value_name = "D")]
    until: Option<String>,
    /// Only events lasting at least D (e.g. 1ms).
    #[arg(long, value_name = "D")]
    min_dur: Option<String>,
    /// Rows to print (1-5000).
    #[arg(long, default_value_t = 50)]
    limit: u32,
    /// Rows to skip.
    #[arg(long, default_value_t = 0)]
    offset: u64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Result<()> {
    let window = TimeWindow::parse(args.since.as_deref(), args.until.as_deref())?;
    let min_dur_ns = args.min_dur.as_deref().map(parse_duration_ns).transpose()?;
    let db = TraceDb::open(&args.db)?;
    analyse(&db, args, window, min_dur_ns).map_err(|e| super::diagnosed(&db, e))
}

/// The subcommand's work on the opened file; its errors go through
/// [`super::diagnosed`], which names a damaged value a read stopped on.
fn analyse(db: &TraceDb, args: Args, window: TimeWindow, min_dur_ns: Option<i64>) -> Result<()> {
    // A window, pid or op that matches nothing in the file is refused with
    // what the file does hold, as the MCP tools do.
    let asked = Asked {
        since: args.since.clone(),
        until: args.until.clone(),
        pid: args.pid,
        rank: None,
        op: None,
        needs_cuda: false,
    };
    let scope: Scope = teach::check(db, &asked, window)?;
    let query = EventQuery {
        scope,
        op: args.op,
        min_dur_ns,
        limit: args.limit,
        offset: args.offset,
    };
    let op = query.op.clone();
    let page = match query_events(db, &query) {
        Ok(page) => page,
        Err(e) if op.is_some() && e.is_bad_input() => {
            // An op unknown to the query: say what the file holds.
            teach::check(db, &Asked { op, ..asked }, window)?;
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    if page.total == 0 && op.is_some() {
        // Nothing matched the op (a name or a part of one): say what the
        // file holds instead of an empty page.
        teach::check(db, &Asked { op, ..asked }, window)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&page)?);
    } else {
        print!("{}", render::events_text(&page));
    }
    Ok(())
}
