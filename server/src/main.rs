//! `ingero`: the command-line edge. Every subcommand is a thin wrapper over the
//! library crates (store, tools, demo, probes); no analysis lives here.

mod cli;
mod exit;
mod mcp;

use clap::{Parser, Subcommand};

/// Explain why the GPU is starving: CUDA calls and host events, correlated.
#[derive(Parser)]
#[command(name = "ingero", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve trace databases to AI assistants over MCP (stdio, or HTTP with --http).
    Mcp(cli::mcp::Args),
    /// Causal chains, per-process breakdown and op statistics for a trace database.
    Explain(cli::explain::Args),
    /// Did the fix work? Compare two trace databases through their findings.
    Compare(cli::compare::Args),
    /// List recorded events, filtered and paged.
    Query(cli::query::Args),
    /// Record CUDA calls and host events of a process, a command or the whole machine.
    Trace(cli::trace::Args),
    /// Check whether this machine can capture (kernel, BTF, permissions, tracefs, libraries).
    Check(cli::check::Args),
    /// Write a deterministic synthetic trace database for a known scenario.
    Demo(cli::demo::Args),
    /// Write a self-contained HTML report: timeline, causal chains, GPU idle, histograms.
    Report(cli::report::Args),
    /// Export the trace as Perfetto/Chrome trace-event JSON or to an OTLP receiver.
    Export(cli::export::Args),
    /// Merge the captures of several nodes or ranks into one file (clocks aligned, pids kept apart).
    Merge(cli::merge::Args),
}

/// Commands that print to stdout and hold nothing to finalise end quietly
/// when the reader goes away (`ingero query ... | head`), as other Unix
/// tools do, instead of panicking on the broken pipe. `trace` and `mcp`
/// keep the broken pipe an error they handle: they have captures to finalise.
fn quiet_on_broken_pipe(command: &Command) {
    if matches!(command, Command::Trace(_) | Command::Mcp(_)) {
        return;
    }
    // SAFETY: restoring the default disposition of SIGPIPE before any other
    // thread exists; no handler is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    quiet_on_broken_pipe(&cli.command);
    let result = match cli.command {
        Command::Explain(args) => cli::explain::run(args),
        Command::Compare(args) => cli::compare::run(args),
        Command::Query(args) => cli::query::run(args),
        Command::Trace(args) => cli::trace::run(args),
        Command::Check(args) => cli::check::run(args),
        Command::Demo(args) => cli::demo::run(args),
        Command::Mcp(args) => cli::mcp::run(args),
        Command::Report(args) => cli::report::run(args),
        Command::Export(args) => cli::export::run(args),
        Command::Merge(args) => cli::merge::run(args),
    };
    exit::report(result)
}
