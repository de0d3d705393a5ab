//! Planning a merge of several captures (`ingero merge`, MCP
//! `merge_databases`): the node name of each input and its clock offset,
//! ready for `ingero_store::merge::merge_into`.

use super::offsets::{estimate_offsets, OffsetEstimate};
use crate::error::{Result, ToolError};
use ingero_store::merge::{check_mergeable, MergeInput};
use ingero_store::TraceDb;
use rusqlite::OptionalExtension;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The inputs as the merge will place them, with the offsets estimated.
#[derive(Debug, Clone, PartialEq)]
pub struct MergePlan {
    /// Per input, in input order.
    pub inputs: Vec<MergeInput>,
    /// The offset estimates behind them, in input order.
    pub offsets: Vec<OffsetEstimate>,
}

/// Opens `paths` (ingero-rs captures), names their nodes (`nodes[i]` for
/// the i-th input where given, else the capture's host name made unique)
/// and estimates their clock offsets.
pub fn plan_merge(paths: &[PathBuf], nodes: &[String]) -> Result<MergePlan> {
    if nodes.len() > paths.len() {
        return Err(ToolError::BadArgument(format!(
            "{} node names for {} inputs: give one per input, in input order",
            nodes.len(),
            paths.len()
        )));
    }
    if let Some(empty) = nodes.iter().position(|n| n.trim().is_empty()) {
        return Err(ToolError::BadArgument(format!(
            "node name number {} is empty",
            empty + 1
        )));
    }
    let dbs: Vec<TraceDb> = paths
        .iter()
        .map(|path| -> Result<TraceDb> {
            let db = TraceDb::open(path)?;
            check_mergeable(&db)?;
            Ok(db)
        })
        .collect::<Result<_>>()?;
    let hosts: Vec<String> = dbs.iter().map(host_of).collect::<Result<_>>()?;
    let names = node_names(nodes, &hosts);
    let refs: Vec<&TraceDb> = dbs.iter().collect();
    let offsets = estimate_offsets(&refs)?;
    let inputs = paths
        .iter()
        .zip(&names)
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
    Ok(MergePlan { inputs, offsets })
}

/// The host name of an input's first session (its file name when none was
/// recorded).
fn host_of(db: &TraceDb) -> Result<String> {
    let host: Option<String> = db
        .conn()
        .query_row("SELECT host FROM sessions ORDER BY id LIMIT 1", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(|e| db.classify(e))?;
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

/// Node names in input order: the given ones first (the i-th for the i-th
/// input), the host names for the rest, made unique by appending "#2",
/// "#3", ... to a name already taken.
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
}
