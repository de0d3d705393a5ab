//! `ingero merge`: one file from the captures of several nodes (or ranks) of
//! a distributed job, so that `explain`, the MCP tools and the exports see
//! the whole job. The clock offsets between the captures are estimated from
//! the collectives they share (`ingero_tools::ranks::estimate_offsets`); the
//! copy itself is `ingero_store::merge::merge_into`.

use crate::exit::BadArgument;
use anyhow::Result;
use ingero_store::merge::{merge_into, MergeSummary};
use ingero_store::{parse_duration_ns, StoreError};
use ingero_tools::ranks::{plan_merge, MergePlan, OffsetEstimate};
use ingero_tools::ToolError;
use serde::Serialize;
use std::path::PathBuf;

/// Arguments of `ingero merge`.
#[derive(clap::Args)]
pub struct Args {
    /// The merged database to write (a new file: an existing one is refused).
    #[arg(value_name = "OUT.db")]
    out: PathBuf,
    /// The capture databases to merge (ingero-rs files, one per node or rank).
    #[arg(value_name = "IN.db", required = true, num_args = 1..)]
    inputs: Vec<PathBuf>,
    /// Node name of an input, once per input in input order (default: the
    /// capture's host name, with "#2", "#3" appended where two inputs share one).
    #[arg(long, value_name = "NAME")]
    node: Vec<String>,
    /// Warn for every input whose clock offset estimate spreads more than D.
    #[arg(long, value_name = "D", default_value = "1ms")]
    skew_threshold: String,
    /// Print the merge summary and the clock offsets as JSON.
    #[arg(long)]
    json: bool,
}

/// What `--json` prints: the merge summary with the offsets it used.
#[derive(Serialize)]
struct MergeReport<'a> {
    #[serde(flatten)]
    summary: &'a MergeSummary,
    /// Per input, in input order.
    offsets: &'a [OffsetEstimate],
}

/// Runs the subcommand.
pub fn run(args: Args) -> Result<()> {
    let threshold_ns = parse_duration_ns(&args.skew_threshold)?;
    // Refused again (atomically) by the merge; checked here before the
    // offsets are estimated.
    if args.out.exists() {
        return Err(StoreError::MergeOutputExists(args.out.clone()).into());
    }
    let MergePlan { inputs, offsets } = match plan_merge(&args.inputs, &args.node) {
        Err(ToolError::BadArgument(m)) => return Err(BadArgument(m).into()),
        other => other?,
    };
    for input in inputs.iter().filter(|i| i.offset_spread_ns > threshold_ns) {
        eprintln!(
            "ingero: warning: {} ({}): clock offset spread {} ms exceeds --skew-threshold {} ms; \
             its times are on the reference clock only to about that",
            input.node,
            input.path.display(),
            ms(input.offset_spread_ns),
            ms(threshold_ns)
        );
    }
    let summary = merge_into(&args.out, &inputs)?;
    if args.json {
        let report = MergeReport {
            summary: &summary,
            offsets: &offsets,
        };
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    print!("{}", summary_text(&summary, &offsets));
    Ok(())
}

/// Nanoseconds as milliseconds, three decimals.
fn ms(ns: i64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// The text summary: one line for the file, one per input.
fn summary_text(summary: &MergeSummary, offsets: &[OffsetEstimate]) -> String {
    let sessions: usize = summary.inputs.iter().map(|i| i.sessions.len()).sum();
    let rows: i64 = summary.inputs.iter().map(|i| i.rows).sum();
    let mut out = format!(
        "merged {} input{} into {}: {} session{}, {} rows\n",
        summary.inputs.len(),
        if summary.inputs.len() == 1 { "" } else { "s" },
        summary.path.display(),
        sessions,
        if sessions == 1 { "" } else { "s" },
        rows
    );
    for (input, offset) in summary.inputs.iter().zip(offsets) {
        let ids: Vec<String> = input.sessions.iter().map(|s| s.to_string()).collect();
        let clock = if offset.reference {
            "reference clock".to_string()
        } else if offset.spread_ns < 0 {
            format!("offset {} ms ({})", ms(offset.offset_ns), offset.method)
        } else {
            format!(
                "offset {} ± {} ms",
                ms(offset.offset_ns),
                ms(offset.spread_ns)
            )
        };
        out.push_str(&format!(
            "  {}: session{} {}, {}, {} collectives matched, pid offset {}, {} rows ({})\n",
            input.node,
            if ids.len() == 1 { "" } else { "s" },
            ids.join(","),
            clock,
            offset.matched,
            input.pid_offset,
            input.rows,
            input.path.display()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_have_three_decimals() {
        assert_eq!(ms(37_512_345), "37.512");
        assert_eq!(ms(-1_500_000), "-1.500");
    }
}
