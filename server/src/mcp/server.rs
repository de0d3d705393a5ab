//! The MCP handler: server identity and instructions, the tool router that
//! joins every tool group, prompts, and the helpers tools share (database
//! resolution, progress, result building).

use super::cache::ResultCache;
use super::capture::Capture;
use super::db::{run_job, DbPool, JobError, Pools};
use super::prompts::Prompts;
use super::sql_gate::{SessionSqlSlots, SqlGate};
use super::Config;
use ingero_store::TraceDb;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CallToolResult, CompleteRequestParams, CompleteResult, ContentBlock, CustomRequest,
    CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse, Implementation,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, Reference, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{tool_handler, ErrorData, Peer, RoleServer, ServerHandler};
use serde::Serialize;
use std::sync::{Arc, RwLock};

/// What every client is told at initialisation.
pub const INSTRUCTIONS: &str = "\
ingero explains why a GPU sat idle, from traces of CUDA calls and Linux kernel events (scheduler, \
memory, processes) stored in SQLite files. Start with get_causal_chains: how idle the GPU was, the \
idle time split by what the GPU thread was doing (and its code), and findings ranked by the idle \
time they explain, each with evidence and a fix. Then, as needed: get_stacks (which functions), \
get_trace_stats (which CUDA ops, p50/p99), get_per_process_breakdown (who waits, who works), \
get_timeline (when), get_rank_report (NCCL ranks), get_events or run_sql (one figure), \
compare_runs (before and after a change).
Arguments every analysis tool shares: `db` is a file name from list_databases (default: the \
current database, see open_database); `since`/`until` are durations counted back from the \
capture end (\"30s\", \"5m\", \"PT1M\" or seconds), the whole capture when absent; `pid` or \
`rank` keeps one process. Every answer starts with the window it covers; a window, pid or op that \
matches nothing is refused with what the file holds. Epoch-ns instants are decimal strings, with \
offsets from the capture start beside them. Cite the numbers the tools return. The `investigate` \
prompt walks through a full investigation.";

/// Told besides [`INSTRUCTIONS`] when the server allows capture.
pub const CAPTURE_INSTRUCTIONS: &str = "\
This server can record new traces on its host: list_gpu_processes finds the GPU job, start_trace \
captures it (pid or process_name, and a duration; all_processes: true for the whole machine), \
get_trace_status says when it has stopped and why, then every tool reads the new file with \
db=<output>.";

/// State shared by every session of one server.
pub struct Shared {
    /// Command-line configuration.
    pub config: Config,
    /// Open connections per database file.
    pub pools: Pools,
    /// Live capture controller.
    pub capture: Capture,
    /// Embedded prompts.
    pub prompts: Prompts,
    /// All tools, built once.
    pub router: ToolRouter<IngeroMcp>,
    /// Their full input schemas, compiled once, checked on every call
    /// (tools/list advertises the lean form, see `lean`).
    pub arguments: super::arguments::ArgumentCheck,
    /// Results of analysis tools, reused while the file is unchanged.
    pub cache: ResultCache,
    /// The server-wide cap on `run_sql` queries running at once.
    pub sql_gate: SqlGate,
}

/// One MCP session's handler (cheap to create: stateless HTTP makes one per request).
#[derive(Clone)]
pub struct IngeroMcp {
    pub(crate) shared: Arc<Shared>,
    /// The database this session reads when a tool is given no `db`.
    current: Arc<RwLock<Arc<DbPool>>>,
    /// This session's cap on `run_sql` queries running at once.
    pub(crate) sql_slots: SessionSqlSlots,
}

impl IngeroMcp {
    /// Builds the shared state from the configuration.
    pub fn shared(config: Config) -> anyhow::Result<Arc<Shared>> {
        let capture = Capture::new(
            config.allow_capture,
            config.library.root().to_path_buf(),
            config.capture_limits,
        );
        let prompts = Prompts::load()?;
        let mut router = Self::tool_router();
        super::capture_tools::state_limits(&mut router, &config.capture_limits);
        let arguments = super::tool_calls::argument_check(&router)?;
        super::tool_calls::advertise_lean(&mut router);
        Ok(Arc::new(Shared {
            pools: Pools::default(),
            capture,
            prompts,
            router,
            arguments,
            cache: ResultCache::default(),
            sql_gate: SqlGate::new(config.sql_concurrency),
            config,
        }))
    }

    /// A handler for a new session, starting on the configured database.
    pub fn new(shared: Arc<Shared>) -> IngeroMcp {
        let pool = shared.pools.get(&shared.config.default_db);
        IngeroMcp {
            sql_slots: shared.sql_gate.session_slots(),
            shared,
            current: Arc::new(RwLock::new(pool)),
        }
    }

    /// The session's current database.
    pub(crate) fn current(&self) -> Arc<DbPool> {
        match self.current.read() {
            Ok(p) => Arc::clone(&p),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Makes `pool` the session's current database.
    pub(crate) fn set_current(&self, pool: Arc<DbPool>) {
        match self.current.write() {
            Ok(mut p) => *p = pool,
            Err(poisoned) => *poisoned.into_inner() = pool,
        }
    }

    /// The database a tool should read: `db` resolved inside the allowed
    /// folder, or the session's current one.
    pub(crate) fn pick_db(&self, db: Option<&str>) -> Result<Arc<DbPool>, CallToolResult> {
        match db.map(str::trim).filter(|s| !s.is_empty()) {
            None => Ok(self.current()),
            Some(name) => match self.shared.config.library.resolve(name) {
                Ok(path) => Ok(self.shared.pools.get(&path)),
                Err(e) => Err(failure(e.to_string())),
            },
        }
    }

    /// Runs `job` against `pool` with progress notifications and
    /// cancellation, mapping failures to tool errors the model can read.
    pub(crate) async fn run_on<T, F>(
        &self,
        pool: Arc<DbPool>,
        ctx: &RequestContext<RoleServer>,
        what: &str,
        job: F,
    ) -> Result<T, CallToolResult>
    where
        T: Send + 'static,
        F: FnOnce(&TraceDb) -> T + Send + 'static,
    {
        let progress = Progress::new(ctx);
        progress
            .send(0.0, format!("{what}: reading {}", pool.path().display()))
            .await;
        let outcome = run_job(pool, ctx.ct.clone(), job, |s| {
            let p = progress.clone();
            let what = what.to_string();
            async move { p.send(s as f64, format!("{what}: running ({s} s)")).await }
        })
        .await;
        match outcome {
            Ok(v) => Ok(v),
            Err(JobError::Open(e)) => Err(failure(e.to_string())),
            Err(JobError::Cancelled) => Err(failure("cancelled by the client".to_string())),
            Err(e @ JobError::Lost(_)) => {
                tracing::error!(error = %e, "{what} failed");
                Err(failure(e.to_string()))
            }
        }
    }
}

/// A tool-level error: the request was valid, the tool could not answer.
/// The model reads `message`.
pub(crate) fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A successful result: `value` as structured content (matching the tool's
/// `outputSchema`) and `text` as its compact rendering.
pub(crate) fn structured<T: Serialize>(
    value: &T,
    text: String,
) -> Result<CallToolResult, ErrorData> {
    let json = serde_json::to_value(value)
        .map_err(|e| ErrorData::internal_error(format!("cannot serialise result: {e}"), None))?;
    let mut result = CallToolResult::structured(json);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// The answer to a request rmcp could not match to a typed MCP request:
/// either a method this server serves whose params have the wrong shape
/// (e.g. `tools/call` with `arguments` that are not an object), which is the
/// client's error (-32602, saying what was expected), or a method it does
/// not serve (-32601, saying which ones it does).
///
/// `initialize` does not exist from protocol 2026-07-28 on: asked under that
/// protocol it is a removed method (-32601), not a malformed one.
pub(crate) fn unmatched_request(method: &str, protocol: Option<&ProtocolVersion>) -> ErrorData {
    if method == "initialize" && protocol.is_some_and(|p| !p.has_initialize()) {
        return ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "initialize is not part of MCP {}: send server/discover, or initialize \
                 with an older protocolVersion (2025-11-25) for a session",
                protocol.map_or("", |p| p.as_str())
            ),
            None,
        );
    }
    let expected = match method {
        "tools/call" | "prompts/get" => Some(r#"{"name": string, "arguments": object}"#),
        "tools/list" | "prompts/list" => Some(r#"nothing or {"cursor": string}"#),
        "initialize" => Some("protocolVersion, capabilities and clientInfo"),
        "ping" => Some("nothing"),
        _ => None,
    };
    match expected {
        Some(shape) => ErrorData::invalid_params(
            format!("malformed params for {method}: expected {shape}"),
            None,
        ),
        None if method.starts_with("resources/") => no_resources(method),
        None => ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("unknown method {method:?}: this server answers tools/* and prompts/*"),
            None,
        ),
    }
}

/// This server offers no MCP resources; trace data is read through tools.
fn no_resources(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!(
            "{method}: this server offers no resources; read trace databases with the tools \
             (list_databases, open_database, run_sql, get_events)"
        ),
        None,
    )
}

/// Sends `notifications/progress` for one request when the client asked for it.
#[derive(Clone)]
pub(crate) struct Progress {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
}

impl Progress {
    /// Progress reporting for the request in `ctx`.
    pub(crate) fn new(ctx: &RequestContext<RoleServer>) -> Progress {
        Progress {
            peer: ctx.peer.clone(),
            token: ctx.meta.get_progress_token(),
        }
    }

    /// Reports `progress` (increasing) with a message; errors are only logged.
    pub(crate) async fn send(&self, progress: f64, message: String) {
        let Some(token) = self.token.clone() else {
            return;
        };
        let mut param = ProgressNotificationParam::new(token, progress);
        param.message = Some(message);
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(error = %e, "progress notification not delivered");
        }
    }
}

#[tool_handler(router = self.shared.router)]
impl ServerHandler for IngeroMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_prompts()
                .enable_completions()
                .build(),
        )
        .with_server_info(
            Implementation::new("ingero", env!("CARGO_PKG_VERSION"))
                .with_title("ingero: why is my GPU starving?"),
        )
        .with_instructions(if self.shared.config.allow_capture {
            format!("{INSTRUCTIONS}\n{CAPTURE_INSTRUCTIONS}")
        } else {
            INSTRUCTIONS.to_string()
        })
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CallToolResponse, ErrorData> {
        self.call_checked(request, context).await
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(
            self.shared.prompts.list(),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.shared
            .prompts
            .get(&request.name, request.arguments.as_ref())
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let Reference::Prompt(prompt) = &request.r#ref else {
            return Err(no_resources("completion/complete of a resource template"));
        };
        let library = self.shared.config.library.clone();
        let databases = move || {
            library
                .list()
                .map(|entries| entries.into_iter().map(|e| e.name).collect())
                .unwrap_or_default()
        };
        let completion = super::completion::complete_prompt_argument(
            &self.shared.prompts.list(),
            &prompt.name,
            &request.argument.name,
            &request.argument.value,
            databases,
        )?;
        Ok(CompleteResult::new(completion))
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(unmatched_request(
            &request.method,
            context.protocol_version().as_ref(),
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Err(no_resources("resources/list"))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Err(no_resources("resources/templates/list"))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        // No resource exists, so every URI is an unknown one (-32602 with
        // the URI, as SEP-2164 asks of resources/read).
        Err(ErrorData::invalid_params(
            format!(
                "no resource {:?}: this server offers no resources; read trace databases with \
                 the tools (list_databases, open_database, run_sql, get_events)",
                request.uri.chars().take(200).collect::<String>()
            ),
            Some(serde_json::json!({
                "uri": request.uri.chars().take(2048).collect::<String>()
            })),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_params_of_a_served_method_are_invalid_params() {
        // Found by tests/mcp/fuzz_tool_args.py: `arguments: [..]` used to be
        // answered "method not found: tools/call".
        for method in ["tools/call", "prompts/get", "tools/list", "initialize"] {
            let legacy = ProtocolVersion::V_2025_11_25;
            for protocol in [None, Some(&legacy)] {
                let e = unmatched_request(method, protocol);
                assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{method}");
                assert!(e.message.contains("expected"), "{}", e.message);
            }
            let e = unmatched_request(method, None);
            assert!(e.message.contains("expected"), "{}", e.message);
        }
    }

    #[test]
    fn initialize_under_the_stateless_protocol_is_a_removed_method() {
        let e = unmatched_request("initialize", Some(&ProtocolVersion::V_2026_07_28));
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.contains("server/discover"), "{}", e.message);
    }

    #[test]
    fn unserved_methods_say_what_is_served() {
        let e = unmatched_request("no/such", None);
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.contains("tools/*"), "{}", e.message);
        let e = unmatched_request("resources/read", None);
        assert_eq!(e.code, ErrorCode::METHOD_NOT_FOUND);
        assert!(e.message.contains("no resources"), "{}", e.message);
    }
}
