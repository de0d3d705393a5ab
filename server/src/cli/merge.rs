//! `ingero merge`: one file from the captures of several nodes (or ranks) of
//! a distributed job, so that `explain`, the MCP tools and the exports see
//! the whole job. The clock offsets between the captures are estimated from
//! the collectives they share (`ingero_tools::ranks::estimate_offsets`); the
//! copy itself is `ingero_store::merge::merge_into`.

use crate::exit::BadArgument;
use anyhow::{Context, Result};
use ingero_store::merge::{check_mergeable, merge_into, MergeInput, MergeSummary};
use ingero_store::{parse_duration_ns, StoreError, TraceDb};
use ingero_tools::ranks::{estimate_offsets, OffsetEstimate};
use serde::Serialize;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

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
    if args.node.len() > args.inputs.len() {
        return Err(BadArgument(format!(
            "--node given {} times for {} inputs: give it once per input, in input order",
            args.node.len(),
            args.inputs.len()
        ))
        .into());
    }
    if let Some(empty) = args.node.iter().position(|n| n.trim().is_empty()) {
        return Err(BadArgument(format!("--node number {} is empty", empty + 1)).into());
    }
    // Refused again (atomically) by the merge; checked here before the
    // offsets are estimated.
    if args.out.exists() {
        return Err(StoreError::MergeOutputExists(args.out.clone()).into());
    }
    let dbs: Vec<TraceDb> = args
        .inputs
        .iter()
        .map(|path| -> Result<TraceDb> {
            let db = TraceDb::open(path)?;
            check_mergeable(&db)?;
            Ok(db)
        })
        .collect::<Result<_>>()?;
    let hosts: Vec<String> = dbs
        .iter()
        .map(|db| host_of(db).with_context(|| format!("reading {}", db.path().display())))
        .collect::<Result<_>>()?;
    let nodes = node_names(&args.node, &hosts);
    let refs: Vec<&TraceDb> = dbs.iter().collect();
    let offsets = estimate_offsets(&refs)?;
    drop(refs);
    drop(dbs);
    if offsets.len() != args.inputs.len() {
        anyhow::bail!(
            "clock offsets estimated for {} of {} inputs",
            offsets.len(),
            args.inputs.len()
        );
    }
    let inputs: Vec<MergeInput> = args
        .inputs
        .iter()
        .zip(&nodes)
        .zip(&offsets)
        .map(|((path, node), o)| MergeInput {
            path: path.clone(),
            node: node.clone(),
            clock_offset_ns: o.offset_ns,
            offset_spread_ns: o.spread_ns,
            matched: o.matched,
            offset_method: o.method.clone(),
            reference: o.reference,
        })
        .collect();
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

/// The host name of an input's first session ('' when it has none).
fn host_of(db: &TraceDb) -> Result<String> {
    let host: Option<String> = db
        .conn()
        .query_row("SELECT host FROM sessions ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .map(Some)
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(db.classify(e)),
        })?;
    let host = host.unwrap_or_default();
    if host.trim().is_empty() {
        return Ok(stem(db.path()));
    }
    Ok(host)
}

/// A name for an input whose capture did not record its host: its file name.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "node".to_string())
}

/// Node names in input order: the given ones first (the i-th `--node` for
/// the i-th input), the host names for the rest, made unique by appending
/// "#2", "#3", ... to a name already taken.
fn node_names(given: &[String], hosts: &[String]) -> Vec<String> {
    let mut used: HashSet<String> = given.iter().cloned().collect();
    let mut names = Vec::with_capacity(hosts.len());
    for (i, host) in hosts.iter().enumerate() {
        if let Some(name) = given.get(i) {
            names.push(name.clone());
            continue;
        }
        let mut name = host.clone();
        let mut k = 2;
        while used.contains(&name) {
            name = format!("{host}#{k}");
            k += 1;
        }
        used.insert(name.clone());
        names.push(name);
    }
    names
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

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn host_names_are_made_unique_in_order() {
        assert_eq!(
            node_names(&[], &s(&["vm", "vm", "gpu-1", "vm"])),
            s(&["vm", "vm#2", "gpu-1", "vm#3"])
        );
    }

    #[test]
    fn given_names_win_in_input_order() {
        assert_eq!(
            node_names(&s(&["a", "vm"]), &s(&["vm", "x", "vm"])),
            s(&["a", "vm", "vm#2"])
        );
    }

    #[test]
    fn milliseconds_have_three_decimals() {
        assert_eq!(ms(37_512_345), "37.512");
        assert_eq!(ms(-1_500_000), "-1.500");
    }
}
