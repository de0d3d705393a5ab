//! `compare_runs`: did the fix work? Two databases compared through their
//! findings (`ingero_tools::compare`), so an assistant answers from one call
//! instead of lining up two sets of tool results by hand.

use super::readable;
use super::server::{failure, structured, IngeroMcp};
use ingero_tools::compare::{self, text, Comparison, WindowChoice};
use ingero_tools::explain::{explain, Report};
use ingero_tools::ToolError;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `compare_runs`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CompareArgs {
    /// Database before the change.
    pub base: String,
    /// Database after the change.
    pub new: String,
    /// "steady" (default: first to last CUDA call) or "whole".
    pub window: Option<WindowChoice>,
    /// "brief" (default) or "full".
    pub detail: Option<String>,
}

/// One run's report and command lines, read on the database pool.
type Side = Result<(Report, compare::processes::Commands), ToolError>;

#[tool_router(router = compare_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// Did a change help? Compares a baseline database with a later one: findings kept, gone or new with their idle time, idle share, per-op and rate figures per step, and a verdict judged against each run's own noise.
    #[tool(
        name = "compare_runs",
        annotations(title = "Compare two runs", read_only_hint = true, open_world_hint = false),
        output_schema = readable::output_schema::<Comparison>()
    )]
    pub(crate) async fn compare_runs(
        &self,
        Parameters(args): Parameters<CompareArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let full = match args.detail.as_deref().map(str::trim) {
            None | Some("") | Some("brief") => false,
            Some("full") => true,
            Some(other) => {
                return Ok(failure(format!(
                    "detail must be \"brief\" or \"full\", got {other:?}"
                )))
            }
        };
        let window = args.window.unwrap_or_default();
        let comparison = match self
            .compare_pair(&args.base, Some(&args.new), window, &ctx, "compare_runs")
            .await?
        {
            Ok(c) => c,
            Err(result) => return Ok(result),
        };
        let mut json = serde_json::to_value(&comparison).map_err(|e| {
            ErrorData::internal_error(format!("cannot serialise result: {e}"), None)
        })?;
        readable::annotate(&mut json);
        let text = if full {
            text::full(&comparison)
        } else {
            text::brief(&comparison)
        };
        structured(&json, text)
    }
}

impl IngeroMcp {
    /// Explains `base` and `new` (a database name; the session's current
    /// database when `None`) over `window` and compares them: what
    /// `compare_runs` answers and `get_causal_chains` appends when given
    /// `compare_with`. A database that cannot be read comes back as the
    /// tool result to return, naming it.
    pub(crate) async fn compare_pair(
        &self,
        base: &str,
        new: Option<&str>,
        window: WindowChoice,
        ctx: &RequestContext<RoleServer>,
        tool: &str,
    ) -> Result<Result<Comparison, CallToolResult>, ErrorData> {
        let mut sides = Vec::with_capacity(2);
        for name in [Some(base), new] {
            let pool = match self.pick_db(name) {
                Ok(p) => p,
                Err(result) => return Ok(Err(result)),
            };
            let side: Side = match self
                .run_on(pool, ctx, tool, move |db| -> Side {
                    let report = explain(db, &compare::window::scope_for(db, window)?)?;
                    Ok((report, compare::processes::commands_of(db)))
                })
                .await
            {
                Ok(side) => side,
                Err(result) => return Ok(Err(result)),
            };
            match side {
                Ok(side) => sides.push(side),
                Err(e) => {
                    let name = name.unwrap_or("the current database");
                    return Ok(Err(failure(format!("{name}: {e}"))));
                }
            }
        }
        let (Some((rn, cn)), Some((rb, cb))) = (sides.pop(), sides.pop()) else {
            return Err(ErrorData::internal_error("two runs expected", None));
        };
        Ok(Ok(compare::compare(&rb, &rn, (&cb, &cn), window)))
    }
}
