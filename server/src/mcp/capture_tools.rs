//! `start_trace`, `get_trace_status`, `stop_trace`: adapters over
//! [`super::capture::Capture`], which holds all wiring to the capture engine.

use super::capture::{CaptureError, CaptureStatus, StartTraceArgs};
use super::server::{failure, structured, IngeroMcp};
use rmcp::handler::server::tool::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};

fn answer(outcome: Result<CaptureStatus, CaptureError>) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(s) => {
            let text = format!(
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
            structured(&s, text)
        }
        Err(e) => Ok(failure(e.to_string())),
    }
}

#[tool_router(router = capture_router, vis = "pub(crate)")]
impl IngeroMcp {
    /// Starts a live capture of CUDA calls and host events into a new database in the allowed folder (needs --allow-capture and a host that can trace).
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

    /// Reports whether a capture is running, how many events it stored and lost.
    #[tool(
        name = "get_trace_status",
        annotations(title = "Capture status", read_only_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<CaptureStatus>()
    )]
    pub(crate) async fn get_trace_status(&self) -> Result<CallToolResult, ErrorData> {
        answer(self.shared.capture.status())
    }

    /// Stops the running capture and finalises its database.
    #[tool(
        name = "stop_trace",
        annotations(title = "Stop the capture", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false),
        output_schema = schema_for_output::<CaptureStatus>()
    )]
    pub(crate) async fn stop_trace(&self) -> Result<CallToolResult, ErrorData> {
        answer(self.shared.capture.stop())
    }
}
