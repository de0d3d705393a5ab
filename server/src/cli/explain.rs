//! `ingero explain`: the readable (or JSON) report for a trace database.

use anyhow::Result;
use ingero_store::{TimeWindow, TraceDb};
use ingero_tools::{explain, render, Scope};
use std::path::PathBuf;

/// Arguments of `ingero explain`.
#[derive(clap::Args)]
pub struct Args {
    /// Trace database (ingero or Ingero format).
    #[arg(long)]
    db: PathBuf,
    /// Also list every process's CUDA ops in detail.
    #[arg(long)]
    per_process: bool,
    /// Only the last D of the capture (e.g. 30s, 5m), relative to its end.
    #[arg(long, value_name = "D")]
    since: Option<String>,
    /// Only up to D before the capture's end.
    #[arg(long, value_name = "D")]
    until: Option<String>,
    /// Only this process (and its children).
    #[arg(long, conflicts_with = "rank")]
    pid: Option<i32>,
    /// Only the process of this global rank (a merged file, or a capture of
    /// a node's ranks: processes.rank).
    #[arg(long)]
    rank: Option<i32>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Result<()> {
    let window = TimeWindow::parse(args.since.as_deref(), args.until.as_deref())?;
    let db = TraceDb::open(&args.db)?;
    analyse(&db, args, window).map_err(|e| super::diagnosed(&db, e))
}

/// The subcommand's work on the opened file; its errors go through
/// [`super::diagnosed`], which names a damaged value a read stopped on.
fn analyse(db: &TraceDb, args: Args, window: TimeWindow) -> Result<()> {
    let scope = Scope {
        window,
        pid: args.pid,
    }
    .for_rank(db, args.rank)?;
    let report = explain::explain(db, &scope)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print!("{}", render::report_text(&report));
    if args.per_process {
        println!("\nCUDA calls per process");
        for p in &report.processes.processes {
            if p.ops.is_empty() {
                continue;
            }
            println!("pid {} {}", p.pid, p.comm);
            let per = ingero_tools::stats::OpStatsReport {
                window: report.window.clone(),
                total_calls: p.cuda_calls,
                cuda_api_time_ns: p.cuda_time_ns,
                nested_calls: p.ops.iter().map(|o| o.nested_count).sum(),
                nested_time_ns: p.ops.iter().map(|o| o.nested_ns).sum(),
                ops: p.ops.clone(),
                host: Vec::new(),
                lost_events: 0,
                unfinished_calls: 0,
                notes: Vec::new(),
            };
            print!("{}", render::stats_text(&per));
        }
    }
    Ok(())
}
