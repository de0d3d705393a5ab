//! `ingero report`: one self-contained HTML page to look at a trace (timeline,
//! causal chains, GPU-idle breakdown, processes, latency histograms), opening
//! with the comparison with a baseline run when `--base` names one.

use anyhow::{Context, Result};
use ingero_report::{html, ReportData, ReportError};
use ingero_store::{TimeWindow, TraceDb};
use ingero_tools::compare::WindowChoice;
use ingero_tools::{Scope, ToolError};
use std::io::Write;
use std::path::PathBuf;

/// Arguments of `ingero report`.
#[derive(clap::Args)]
pub struct Args {
    /// Trace database (ingero or Ingero format).
    #[arg(long)]
    db: PathBuf,
    /// Where to write the page.
    #[arg(long, default_value = "report.html")]
    out: PathBuf,
    /// Only the last D of the capture (e.g. 30s, 5m), relative to its end.
    #[arg(long, value_name = "D")]
    since: Option<String>,
    /// Only up to D before the capture's end.
    #[arg(long, value_name = "D")]
    until: Option<String>,
    /// Only this process (and its children).
    #[arg(long)]
    pid: Option<i32>,
    /// Baseline trace database: the page opens with how this run compares
    /// with it (did the fix work?), as `ingero compare BASE DB` says.
    #[arg(long, value_name = "BASE")]
    base: Option<PathBuf>,
    /// With --base: compare the whole captures, not each run's steady phase.
    #[arg(long, requires = "base")]
    whole: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Result<()> {
    let window = TimeWindow::parse(args.since.as_deref(), args.until.as_deref())?;
    let db = TraceDb::open(&args.db)?;
    let base = args.base.as_deref().map(TraceDb::open).transpose()?;
    analyse(&db, base.as_ref(), args, window).map_err(|e| super::diagnosed(&db, e))
}

/// The subcommand's work on the opened file; its errors go through
/// [`super::diagnosed`], which names a damaged value a read stopped on.
fn analyse(db: &TraceDb, base: Option<&TraceDb>, args: Args, window: TimeWindow) -> Result<()> {
    let scope = Scope {
        window,
        pid: args.pid,
    };
    let mut data = ReportData::load(db, &scope).map_err(into_cli)?;
    if let Some(base) = base {
        let choice = if args.whole {
            WindowChoice::Whole
        } else {
            WindowChoice::Steady
        };
        data = data.with_baseline(base, db, choice).map_err(into_cli)?;
    }
    let page = html::report_html(&data).map_err(into_cli)?;
    let mut file = ingero_store::safe_open::create_output(&args.out)?;
    file.write_all(page.as_bytes())
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "wrote {} ({} CUDA spans, {} off-CPU intervals, {} causal chains, {} processes)",
        args.out.display(),
        data.span_count(),
        data.off_cpu_count(),
        data.chains.len(),
        data.process_table.len()
    );
    if let Some(c) = &data.comparison {
        println!("compared with {}: {}", c.base.path, c.verdict.sentence);
    }
    Ok(())
}

/// Hands library errors to the exit-code mapping: input faults surface as the
/// analysis engine's errors, which the binary already classifies as bad input.
pub(crate) fn into_cli(err: ReportError) -> anyhow::Error {
    match err {
        ReportError::Tool(e) => e.into(),
        ReportError::BadArgument(msg) => ToolError::BadArgument(msg).into(),
        other => other.into(),
    }
}
