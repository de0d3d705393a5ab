//! `ingero mcp`: the Model Context Protocol server that lets AI assistants
//! investigate trace databases, over stdio or streamable HTTP.
//!
//! Every tool delegates to `ingero-tools`; this module only adapts MCP
//! requests (arguments, progress, cancellation, errors) and transports.

mod analysis;
mod arguments;
pub mod bundled;
mod cache;
pub mod capture;
mod capture_tools;
mod chains_compare;
mod chains_view;
mod compare_tool;
mod completion;
mod databases;
mod db;
mod error_text;
pub mod http;
mod http_auth;
mod http_conn;
mod http_edge;
pub mod http_sessions;
pub mod http_token;
mod lean;
mod merge_tool;
pub mod prompts;
mod readable;
mod schema;
#[cfg(test)]
mod schema_lint;
pub mod server;
mod sql;
mod sql_cells;
pub mod sql_gate;
pub mod stdio;
mod tool_calls;

use ingero_tools::library::Library;
use ingero_tools::sql::SqlLimits;
use std::path::PathBuf;

/// Server configuration resolved from the command line.
#[derive(Debug, Clone)]
pub struct Config {
    /// Database every new session starts on.
    pub default_db: PathBuf,
    /// Folder `list_databases` and `open_database` are confined to.
    pub library: Library,
    /// Whether `start_trace` may start a live capture (and
    /// `list_gpu_processes` list the host's GPU processes).
    pub allow_capture: bool,
    /// What captures started over MCP may take.
    pub capture_limits: capture::CaptureLimits,
    /// Limits for `run_sql`.
    pub sql_limits: SqlLimits,
    /// How many `run_sql` queries may run at once.
    pub sql_concurrency: sql_gate::SqlConcurrency,
}

/// Finalises every capture the server started (the way `stop_trace` does)
/// before it exits, however the session ended: a stdio client's EOF, a
/// signal, the HTTP server's shutdown. `reason` is what their files record
/// as the ending. Says on stderr which it stopped.
pub(crate) async fn finish_captures(shared: &std::sync::Arc<server::Shared>, reason: &str) {
    let shared = std::sync::Arc::clone(shared);
    let reason = reason.to_string();
    let stopped = tokio::task::spawn_blocking(move || shared.capture.stop_all(&reason))
        .await
        .unwrap_or_default();
    for name in stopped {
        eprintln!("ingero mcp: stopped and finalised the capture {name} before exiting");
    }
}
