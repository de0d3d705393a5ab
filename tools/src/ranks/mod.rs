//! Several ranks of one distributed job, in one file (a capture of a node's
//! ranks, or `ingero merge` of several nodes' captures): where each rank's
//! clock stood ([`offsets`]), how the ranks arrived at their collectives and
//! which one made the others wait ([`stragglers`]).

pub mod late_stacks;
pub mod members;
pub mod offsets;
pub mod plan;
pub mod stragglers;

use crate::dataset::Dataset;
use crate::error::Result;
pub use crate::scope::pid_of_rank;
use ingero_store::TraceDb;
pub use offsets::{estimate_offsets, OffsetEstimate};
pub use plan::{plan_merge, MergePlan};
use serde::Serialize;
pub use stragglers::{RankArrivals, Straggler};

/// How one input of a merged file was placed on the common clock
/// (`merge_sources`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MergedClock {
    /// Session in the merged file.
    pub session_id: i64,
    /// Node name.
    pub node: String,
    /// The input whose clock the others are on.
    pub reference: bool,
    /// Subtracted from its times, ns.
    pub clock_offset_ns: i64,
    /// Spread of the estimate, ns (-1: not estimated).
    pub offset_spread_ns: i64,
    /// Collectives the estimate used.
    pub matched: i64,
    /// How it was found.
    pub method: String,
}

/// Everything the file says about ranks.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RankReport {
    /// Inputs of a merged file and their clock offsets (empty for a capture).
    pub clocks: Vec<MergedClock>,
    /// Per rank and communicator: collectives, time inside, arrivals.
    pub arrivals: Vec<RankArrivals>,
    /// Ranks that made the others wait.
    pub stragglers: Vec<Straggler>,
    /// What the figures rest on.
    pub basis: Vec<String>,
}

impl RankReport {
    /// True when the file holds nothing about ranks.
    pub fn is_empty(&self) -> bool {
        self.clocks.is_empty() && self.arrivals.is_empty() && self.basis.is_empty()
    }
}

/// The rank report of a file, with the dataset loaded for its other analyses.
pub fn rank_report(db: &TraceDb, ds: &Dataset) -> Result<RankReport> {
    let members = members::members(db)?;
    let (arrivals, stragglers) = stragglers::judge(db, ds, &members)?;
    let clocks = merged_clocks(db)?;
    let mut basis = Vec::new();
    if !arrivals.is_empty() {
        basis.push(format!(
            "arrival = entry of the collective call on each rank; collectives matched by their \
             order on the communicator, same function and element count; a straggler arrives last \
             at >= {:.0}% of them by a median >= {:.1} ms after the next latest",
            stragglers::LAST_SHARE * 100.0,
            stragglers::MIN_LATENESS_NS as f64 / 1e6
        ));
    }
    let unmatched: i64 = db
        .conn()
        .query_row(
            "SELECT COUNT(*) FROM (SELECT DISTINCT n.session_id, n.pid, n.comm FROM nccl_calls n \
             WHERE n.seq >= 0 AND NOT EXISTS (SELECT 1 FROM nccl_comms m WHERE \
             m.session_id = n.session_id AND m.pid = n.pid AND m.comm = n.comm AND m.comm_key != 0))",
            [],
            |r| r.get(0),
        )
        .map_err(|e| db.classify(e))?;
    if unmatched > 0 {
        basis.push(format!(
            "{unmatched} communicator(s) carried collectives but their creation was not recorded              (made before the probes attached, or a split): they cannot be matched across ranks"
        ));
    }
    if clocks.iter().any(|c| !c.reference) {
        basis.push(
            "ranks of different inputs are compared on the reference clock (merge_sources): \
             arrival differences smaller than an input's offset spread are not meaningful"
                .to_string(),
        );
    }
    Ok(RankReport {
        clocks,
        arrivals,
        stragglers,
        basis,
    })
}

fn merged_clocks(db: &TraceDb) -> Result<Vec<MergedClock>> {
    let conn = db.conn();
    let q = |e| db.classify(e);
    let mut stmt = conn
        .prepare(
            "SELECT session_id, node, reference, clock_offset_ns, offset_spread_ns, matched, \
             offset_method FROM merge_sources ORDER BY session_id",
        )
        .map_err(q)?;
    let rows = stmt
        .query_map([], |r| {
            Ok(MergedClock {
                session_id: r.get(0)?,
                node: r.get(1)?,
                reference: r.get::<_, i64>(2)? != 0,
                clock_offset_ns: r.get(3)?,
                offset_spread_ns: r.get(4)?,
                matched: r.get(5)?,
                method: r.get(6)?,
            })
        })
        .map_err(q)?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r.map_err(q)?);
    }
    Ok(out)
}
