//! Where each process of a capture ran and which rank it was: what turns
//! exports from many hosts into one fleet view in a backend. The node is the
//! capture's host name (`sessions.host`), or `processes.node` in a file that
//! `ingero merge` built from several nodes, or whatever `--node` says; the
//! ranks come from `processes.rank`, `local_rank` and `world_size` (schema 7,
//! -1 when unknown; older files read -1 through the store's compat views).

use super::attrs::{int, string};
use crate::error::{ReportError, Result};
use ingero_store::TraceDb;
use ingero_tools::ToolError;
use serde_json::Value;
use std::collections::BTreeMap;

/// Rank of one process in a distributed job; each field is `None` when the
/// capture did not learn it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ranks {
    /// Global rank (`RANK`).
    pub rank: Option<i64>,
    /// Rank within its node (`LOCAL_RANK`).
    pub local_rank: Option<i64>,
    /// Ranks in the job (`WORLD_SIZE`).
    pub world_size: Option<i64>,
}

impl Ranks {
    /// The `ingero.rank`, `ingero.local_rank` and `ingero.world_size`
    /// attributes of the values that are known.
    pub fn attributes(&self) -> Vec<Value> {
        [
            ("ingero.rank", self.rank),
            ("ingero.local_rank", self.local_rank),
            ("ingero.world_size", self.world_size),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| int(k, v)))
        .collect()
    }
}

/// Node names and ranks of a capture's processes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    /// Node of processes without their own (`sessions.host`, or the override).
    node: String,
    /// Set by `--node`: every process is on `node`, whatever the file says.
    forced: bool,
    /// Per pid: its node in a merged file ('' = the capture's) and its ranks.
    processes: BTreeMap<i32, (String, Ranks)>,
}

impl Identity {
    /// Every process on `node`, no ranks known (for data without a file).
    pub fn on_node(node: impl Into<String>) -> Identity {
        Identity {
            node: node.into(),
            ..Identity::default()
        }
    }

    /// Reads the host name and the process ranks of `db`; `node` replaces
    /// every node name the file has.
    pub fn load(db: &TraceDb, node: Option<&str>) -> Result<Identity> {
        let conn = db.conn();
        let sql = |e| ReportError::Tool(ToolError::from(db.classify(e)));
        let host: String = conn
            .query_row(
                "SELECT COALESCE((SELECT host FROM sessions WHERE host <> '' \
                 ORDER BY id DESC LIMIT 1), '')",
                [],
                |r| r.get(0),
            )
            .map_err(sql)?;
        let mut stmt = conn
            .prepare(
                "SELECT pid, node, rank, local_rank, world_size FROM processes \
                 ORDER BY session_id, pid",
            )
            .map_err(sql)?;
        let known = |v: i64| (v >= 0).then_some(v);
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i32>(0)?,
                    r.get::<_, String>(1)?,
                    Ranks {
                        rank: known(r.get(2)?),
                        local_rank: known(r.get(3)?),
                        world_size: known(r.get(4)?),
                    },
                ))
            })
            .map_err(sql)?;
        let mut processes = BTreeMap::new();
        for row in rows {
            let (pid, node, ranks) = row.map_err(sql)?;
            processes.insert(pid, (node, ranks));
        }
        Ok(Identity {
            node: node.map_or(host, str::to_string),
            forced: node.is_some(),
            processes,
        })
    }

    /// The node `pid` ran on, '' when nobody knows.
    pub fn node_of(&self, pid: i32) -> &str {
        match self.processes.get(&pid) {
            Some((node, _)) if !self.forced && !node.is_empty() => node,
            _ => &self.node,
        }
    }

    /// The node of the capture as a whole (its host, or the override).
    pub fn capture_node(&self) -> &str {
        &self.node
    }

    /// Ranks of `pid` (all unknown for a process the file does not list).
    pub fn ranks_of(&self, pid: i32) -> Ranks {
        self.processes
            .get(&pid)
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    }

    /// Resource attributes naming `node`: `host.name`, and
    /// `service.instance.id` (one instance of the exporting service per node).
    pub fn node_attributes(node: &str) -> Vec<Value> {
        if node.is_empty() {
            return Vec::new();
        }
        vec![
            string("host.name", node),
            string("service.instance.id", node),
        ]
    }
}
