//! The `run_sql` tool: read-only SQL through the guard in `ingero_tools::sql`.

use super::server::{failure, structured, IngeroMcp};
use super::sql_cells;
use ingero_tools::sql::{run_sql, SqlLimits, SqlResult, Truncation};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

/// Rows shown in the text rendering (all rows are in the structured result).
const TEXT_ROWS: usize = 50;

/// Arguments of `run_sql`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct SqlArgs {
    /// One SELECT. Count and time calls from aggregates(pid, source = 1 for CUDA, code = cuda_ops.id, count, sum_dur_ns, per second bucket_ns); cuda_ops(id, name, class); cuda_calls(ts_ns, pid, tid, op_id, dur_ns) keeps only some raw rows. More tables in sqlite_master. Times epoch ns.
    pub sql: String,
    /// Most rows (default 1000).
    #[schemars(range(min = 1))]
    pub max_rows: Option<u32>,
    /// Database to read (a name from list_databases); the session's current database when absent.
    pub db: Option<String>,
}

/// Compact table rendering of a result.
fn render(r: &SqlResult) -> String {
    let mut out = r.columns.join(" | ");
    out.push('\n');
    for row in r.rows.iter().take(TEXT_ROWS) {
        let cells: Vec<String> = row
            .iter()
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect();
        out.push_str(&cells.join(" | "));
        out.push('\n');
    }
    if r.rows.len() > TEXT_ROWS {
        out.push_str(&format!(
            "... {} more rows in the structured result\n",
            r.rows.len() - TEXT_ROWS
        ));
    }
    out.push_str(&format!("({} rows, {:.1} ms", r.row_count, r.elapsed_ms));
    match r.truncated {
        Some(Truncation::Rows) => out.push_str(", truncated at the row cap"),
        Some(Truncation::Bytes) => out.push_str(", truncated at the byte cap"),
        None => {}
    }
    out.push(')');
    out
}

#[tool_router(router = sql_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// One read-only SELECT on the trace database: columns and rows, capped. Integers beyond 2^53 (epoch ns) come back as decimal strings.
    #[tool(
        name = "run_sql",
        annotations(title = "Read-only SQL", read_only_hint = true, open_world_hint = false),
        output_schema = sql_cells::output_schema()
    )]
    pub(crate) async fn run_sql(
        &self,
        Parameters(args): Parameters<SqlArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let base = self.shared.config.sql_limits;
        let limits = SqlLimits {
            max_rows: args
                .max_rows
                .map_or(base.max_rows, |m| (m as usize).clamp(1, base.max_rows)),
            ..base
        };
        let pool = match self.pick_db(args.db.as_deref()) {
            Ok(p) => p,
            Err(r) => return Ok(r),
        };
        let permit = tokio::select! {
            started = self.shared.sql_gate.start(&self.sql_slots) => match started {
                Ok(p) => p,
                Err(busy) => return Ok(failure(busy.to_string())),
            },
            () = ctx.ct.cancelled() => return Ok(failure("cancelled by the client".to_string())),
        };
        let sql = args.sql;
        let out = self
            .run_on(pool, &ctx, "run_sql", move |db| {
                run_sql(db, &sql, &limits, None)
            })
            .await;
        drop(permit);
        match out {
            Err(r) => Ok(r),
            Ok(Err(e)) => Ok(failure(e.to_string())),
            Ok(Ok(mut result)) => {
                sql_cells::make_exact(&mut result);
                structured(&result, render(&result))
            }
        }
    }
}
