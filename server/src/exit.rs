//! Maps errors to one-line messages and exit codes at the binary edge.

use std::process::ExitCode;

/// Exit code for bad input: a missing, corrupt, foreign or empty database, or a bad argument.
pub const BAD_INPUT: u8 = 2;

/// Exit code for internal failures.
pub const FAILURE: u8 = 1;

/// A command-line argument that cannot be used, found after clap's own
/// parsing (a value out of range, a missing companion option): exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadArgument(pub String);

/// `ingero check` found an item that stops capture on this machine: a
/// finding about the machine the user can fix (each item says how), like a
/// capture refused for want of permissions, so exit 2, not an internal failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MachineNotReady(pub String);

/// Prints the error (one line, prefixed `ingero:`) and picks the exit code.
pub fn report(result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let code = if is_bad_input(&err) {
                BAD_INPUT
            } else {
                FAILURE
            };
            let msg = err.to_string().replace('\n', " ");
            eprintln!("ingero: {msg}");
            ExitCode::from(code)
        }
    }
}

fn is_bad_input(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        if cause.is::<BadArgument>()
            || cause.is::<MachineNotReady>()
            || cause.is::<crate::mcp::http::HttpSetupError>()
        {
            return true;
        }
        if let Some(e) = cause.downcast_ref::<ingero_store::StoreError>() {
            return e.is_bad_input();
        }
        if let Some(e) = cause.downcast_ref::<ingero_tools::ToolError>() {
            return e.is_bad_input();
        }
        if let Some(e) = cause.downcast_ref::<ingero_demo::DemoError>() {
            return e.is_bad_input();
        }
        if let Some(e) = cause.downcast_ref::<ingero_report::ReportError>() {
            return e.is_bad_input();
        }
        if let Some(e) = cause.downcast_ref::<ingero_probes::CaptureError>() {
            return e.is_setup_problem();
        }
        false
    })
}
