//! `list_gpu_processes`, `start_trace`, `get_trace_status`, `stop_trace`:
//! adapters over [`super::capture::Capture`], which holds all wiring to the
//! capture engine and the host.

use super::capture::processes::{self, GpuProcesses};
use super::capture::{CaptureError, CaptureLimits, CaptureStatus, StartTraceArgs};
use super::server::{failure, structured, IngeroMcp};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// Which capture a status or stop is about.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct CaptureRef {
    /// Database file name of the capture (as in `captures` of a status);
    /// default: the one running, else the newest.
    pub output: Option<String>,
}

fn answer(outcome: Result<CaptureStatus, CaptureError>) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(s) => {
            let mut text = format!(
                "capture {}: {} events, {} lost, {:.1} s{}",
                if s.running { "running" } else { "stopped" },
                s.events,
                s.lost,
                s.elapsed_s,
                s.output
                    .as_deref()
                    .map(|o| format!(", writing {o}"))
                    .unwrap_or_default()
            );
            if let Some(reason) = &s.stop_reason {
                text.push_str(&format!("; ended: {reason}"));
            }
            if let Some(limit) = &s.limit_reached {
                text.push_str(&format!(" ({limit})"));
            }
            structured(&s, text)
        }
        Err(e) => Ok(failure(e.to_string())),
    }
}

/// Adds the operator's limits to the descriptions of the tools that start
/// and report captures, so a client reads them before it asks.
pub(crate) fn state_limits(router: &mut ToolRouter<IngeroMcp>, limits: &CaptureLimits) {
    for name in ["start_trace", "get_trace_status"] {
        if let Some(route) = router.map.get_mut(name) {
            let base = route.attr.description.as_deref().unwrap_or_default();
            route.attr.description = Some(format!("{base} {}", limits.sentence()).into());
        }
    }
}

#[tool_router(router = capture_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// Lists the processes using a GPU on this host (CUDA driver library mapped, or NVML compute processes): pid, command line, user, GPU memory where NVML knows it, start time, and whether a capture of this server already traces it. Pick the pid (or process_name) for start_trace here. Needs --allow-capture.
    #[tool(
        name = "list_gpu_processes",
        annotations(title = "GPU processes on this host", read_only_hint = true, open_world_hint = true),
        output_schema = schema_for_output::<GpuProcesses>()
    )]
    pub(crate) async fn list_gpu_processes(&self) -> Result<CallToolResult, ErrorData> {
        let shared = Arc::clone(&self.shared);
        let listed = tokio::task::spawn_blocking(move || shared.capture.gpu_processes()).await;
        match listed {
            Ok(Ok(list)) => {
                let text = processes::text(&list);
                structured(&list, text)
            }
            Ok(Err(e)) => Ok(failure(e.to_string())),
            Err(e) => Ok(failure(format!("listing GPU processes failed: {e}"))),
        }
    }

    /// Starts a live capture of CUDA calls and host events into a new database in the allowed folder (needs --allow-capture and a host that can trace). Say what to trace: pid (or pids with one pid) or process_name (from list_gpu_processes; its children are followed), or all_processes: true for every process on the machine. Then poll get_trace_status; the new database is ready for the analysis tools (db=<output>) once the capture has stopped.
    #[tool(
        name = "start_trace",
        annotations(title = "Start a capture", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true),
        output_schema = schema_for_output::<CaptureStatus>()
    )]
    pub(crate) async fn start_trace(
        &self,
        Parameters(args): Parameters<StartTraceArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.shared.capture.start(&args))
    }

    /// Reports a capture: running or why it ended (stop_reason, limit_reached), events stored and lost, database size, the operator's limits and every capture of this server.
    #[tool(
        name = "get_trace_status",
        annotations(title = "Capture status", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<CaptureStatus>()
    )]
    pub(crate) async fn get_trace_status(
        &self,
        Parameters(args): Parameters<CaptureRef>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.shared.capture.status(args.output.as_deref()))
    }

    /// Stops the running capture (or the one named by output) and finalises its database.
    #[tool(
        name = "stop_trace",
        annotations(title = "Stop the capture", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<CaptureStatus>()
    )]
    pub(crate) async fn stop_trace(
        &self,
        Parameters(args): Parameters<CaptureRef>,
    ) -> Result<CallToolResult, ErrorData> {
        answer(self.shared.capture.stop(args.output.as_deref()))
    }
}
