//! `merge_databases`: one database from the captures of several nodes or
//! ranks of a job, written as a new file in the allowed folder, so that an
//! assistant holding one file per node can compare the ranks
//! (`get_rank_report`) on one clock. Writing is allowed only where the
//! server may write captures (`--allow-capture`).

use super::capture::output;
use super::server::{failure, structured, IngeroMcp};
use ingero_store::merge::merge_into;
use ingero_tools::ranks::{plan_merge, MergePlan};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Arguments of `merge_databases`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct MergeArgs {
    /// Names from list_databases, one per node or rank (two or more).
    pub inputs: Vec<String>,
    /// New file name ending in .db (default merged-<unix time>.db).
    pub output: Option<String>,
    /// Node name per input (default: host names).
    pub nodes: Option<Vec<String>>,
}

/// One input as merged.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MergedDatabase {
    /// Input database.
    pub input: String,
    /// Node name its rows carry.
    pub node: String,
    /// Session ids it has in the merged file.
    pub sessions: Vec<i64>,
    /// Subtracted from its times, ns (its clock's offset from the reference).
    pub clock_offset_ns: i64,
    /// Spread of that estimate, ns (-1: not estimated).
    pub offset_spread_ns: i64,
    /// Collectives the estimate matched.
    pub matched: i64,
    /// How the offset was found.
    pub method: String,
    /// Added to its pids and tids.
    pub pid_offset: i64,
    /// Rows copied.
    pub rows: i64,
}

/// Result of `merge_databases`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MergeResult {
    /// The new database: pass it as db to the analysis tools.
    pub output: String,
    /// Per input, in input order.
    pub inputs: Vec<MergedDatabase>,
}

#[tool_router(router = merge_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// Merges one job's per-node or per-rank captures into a new database on one clock (offsets from shared NCCL collectives; needs --allow-capture). Then get_rank_report with db=<output>.
    #[tool(
        name = "merge_databases",
        annotations(title = "Merge node databases", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false),
        output_schema = schema_for_output::<MergeResult>()
    )]
    pub(crate) async fn merge_databases(
        &self,
        Parameters(args): Parameters<MergeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if !self.shared.config.allow_capture {
            return Ok(failure(
                "merge_databases writes a new database into the allowed folder, which this \
                 server does not do: it was started without --allow-capture. Merge with \
                 `ingero merge OUT.db IN1.db IN2.db` on the host instead."
                    .to_string(),
            ));
        }
        if args.inputs.len() < 2 {
            return Ok(failure(format!(
                "merge_databases needs at least two inputs, got {}",
                args.inputs.len()
            )));
        }
        let library = &self.shared.config.library;
        let mut paths = Vec::with_capacity(args.inputs.len());
        for name in &args.inputs {
            match library.resolve(name) {
                Ok(p) => paths.push(p),
                Err(e) => return Ok(failure(e.to_string())),
            }
        }
        let default_name = format!(
            "merged-{}.db",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        );
        let (name, out) = match output::path(
            library.root(),
            Some(args.output.as_deref().unwrap_or(&default_name)),
        ) {
            Ok(p) => p,
            Err(e) => return Ok(failure(e.to_string())),
        };
        let nodes = args.nodes.clone().unwrap_or_default();
        let inputs = args.inputs.clone();
        let done = tokio::task::spawn_blocking(move || -> Result<MergeResult, String> {
            let MergePlan {
                inputs: planned,
                offsets,
            } = plan_merge(&paths, &nodes).map_err(|e| e.to_string())?;
            let summary = merge_into(&out, &planned).map_err(|e| e.to_string())?;
            Ok(MergeResult {
                output: name,
                inputs: summary
                    .inputs
                    .iter()
                    .zip(&offsets)
                    .zip(&inputs)
                    .map(|((m, o), input)| MergedDatabase {
                        input: input.clone(),
                        node: m.node.clone(),
                        sessions: m.sessions.clone(),
                        clock_offset_ns: o.offset_ns,
                        offset_spread_ns: o.spread_ns,
                        matched: o.matched,
                        method: o.method.clone(),
                        pid_offset: m.pid_offset,
                        rows: m.rows,
                    })
                    .collect(),
            })
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        match done {
            Err(e) => Ok(failure(e)),
            Ok(result) => {
                let mut text = format!("merged into {}\n", result.output);
                for i in &result.inputs {
                    text.push_str(&format!(
                        "  {} as {}: offset {:.3} ms (spread {:.3} ms, {} collectives), {} rows\n",
                        i.input,
                        i.node,
                        i.clock_offset_ns as f64 / 1e6,
                        i.offset_spread_ns as f64 / 1e6,
                        i.matched,
                        i.rows
                    ));
                }
                structured(&result, text)
            }
        }
    }
}
