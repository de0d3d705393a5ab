//! `list_databases` and `open_database`: which trace databases a session may
//! read, confined to the allowed folder by `ingero_tools::library`.

use super::server::{failure, structured, IngeroMcp};
use ingero_store::{CaptureSpan, DbFormat};
use ingero_tools::library::DbEntry;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::service::RequestContext;
use rmcp::{tool, tool_router, ErrorData, RoleServer};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Result of `list_databases`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DatabaseList {
    /// The allowed folder.
    pub folder: String,
    /// The session's current database.
    pub current: String,
    /// `.db` files in the folder.
    pub databases: Vec<DbEntry>,
}

/// Arguments of `open_database`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct OpenArgs {
    /// A name from list_databases.
    pub path: String,
}

/// Result of `open_database`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OpenedDatabase {
    /// Canonical path now current for this session.
    pub path: String,
    /// Who wrote the file.
    pub format: DbFormat,
    /// First and last recorded instants, epoch ns.
    pub span: CaptureSpan,
    /// Capture length, seconds.
    pub duration_s: f64,
}

/// True for a request that came over HTTP without a session: nothing it
/// changes survives it, since each such request gets a fresh handler.
fn is_sessionless_http(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
}

#[tool_router(router = databases_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// Trace databases (.db) this server may read, and the current one.
    #[tool(
        name = "list_databases",
        annotations(title = "List trace databases", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<DatabaseList>()
    )]
    pub(crate) async fn list_databases(&self) -> Result<CallToolResult, ErrorData> {
        let library = self.shared.config.library.clone();
        let listed = tokio::task::spawn_blocking(move || library.list())
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let databases = match listed {
            Ok(d) => d,
            Err(e) => return Ok(failure(e.to_string())),
        };
        let result = DatabaseList {
            folder: self.shared.config.library.root().display().to_string(),
            current: self.current().path().display().to_string(),
            databases,
        };
        let mut text = format!("folder {} (current: {})\n", result.folder, result.current);
        for d in &result.databases {
            text.push_str(&format!(
                "{}  {:.1} MB{}\n",
                d.name,
                d.size_bytes as f64 / 1e6,
                if d.has_wal { "  (wal)" } else { "" }
            ));
        }
        if result.databases.is_empty() {
            text.push_str("no .db files\n");
        }
        structured(&result, text)
    }

    /// Makes a database from list_databases the current one (stateless HTTP: pass db to each tool instead).
    #[tool(
        name = "open_database",
        annotations(title = "Open a trace database", read_only_hint = true, idempotent_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<OpenedDatabase>()
    )]
    pub(crate) async fn open_database(
        &self,
        Parameters(args): Parameters<OpenArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let path = match self.shared.config.library.resolve(&args.path) {
            Ok(p) => p,
            Err(e) => return Ok(failure(e.to_string())),
        };
        if is_sessionless_http(&ctx) {
            return Ok(failure(format!(
                "open_database cannot hold over this connection: it is stateless HTTP (MCP \
                 2026-07-28, no session), so the next request would still read the start-up \
                 database. Pass db={:?} to each tool instead (or connect over stdio, or with \
                 a 2025-11-25 session).",
                args.path
            )));
        }
        let pool = self.shared.pools.get(&path);
        let info = self
            .run_on(pool.clone(), &ctx, "open_database", |db| {
                (db.format().clone(), db.span())
            })
            .await;
        let (format, span) = match info {
            Ok(v) => v,
            Err(r) => return Ok(r),
        };
        self.set_current(pool);
        let result = OpenedDatabase {
            path: path.display().to_string(),
            format,
            span,
            duration_s: span.duration_ns() as f64 / 1e9,
        };
        let text = format!(
            "opened {} ({:.1} s of capture)",
            result.path, result.duration_s
        );
        structured(&result, text)
    }
}
