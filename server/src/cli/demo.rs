//! `ingero demo`: writes a deterministic synthetic trace database for a known
//! cause of GPU starvation, so `explain` and the MCP tools can be tried
//! without a GPU, root or a live workload.

use ingero_demo::{generate, DemoOptions, Scenario, DEFAULT_SEED};
use std::path::{Path, PathBuf};

/// Write a deterministic synthetic trace database for a known starvation
/// scenario (the arguments of `ingero demo`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Scenario to simulate (see --list) [default: dataloader-starvation].
    #[arg(value_name = "SCENARIO")]
    pub scenario: Option<String>,
    /// Database to write [default: ingero-demo-<SCENARIO>.db].
    #[arg(long, value_name = "OUT")]
    pub db: Option<PathBuf>,
    /// Seed of the simulation; the same seed always gives the same rows.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Simulated seconds [default: depends on the scenario, 20-60].
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<u32>,
    /// Overwrite the database if it exists.
    #[arg(long)]
    pub force: bool,
    /// List the scenarios and the cause each one demonstrates, then exit.
    #[arg(long)]
    pub list: bool,
}

/// Runs `ingero demo`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.list {
        for s in Scenario::ALL {
            println!("{:<23} {}", s.name(), s.description());
            println!("{:<23} expected top cause: {}", "", s.expected_cause());
        }
        return Ok(());
    }
    let scenario = match args.scenario.as_deref() {
        Some(name) => Scenario::parse(name)?,
        None => Scenario::DEFAULT,
    };
    let path = args
        .db
        .unwrap_or_else(|| PathBuf::from(format!("ingero-demo-{}.db", scenario.name())));
    let opts = DemoOptions {
        seed: args.seed,
        duration_s: args.duration,
        overwrite: args.force,
    };
    let s = generate(scenario, &path, &opts)?;
    println!(
        "wrote {}: {} ({} s simulated, {} CUDA calls, {} host events, {} process{}; expected top cause: {})",
        path.display(),
        scenario.name(),
        s.duration_ns / 1_000_000_000,
        s.cuda_calls,
        s.host_events,
        s.processes,
        if s.processes == 1 { "" } else { "es" },
        scenario.expected_cause()
    );
    println!("next: ingero explain --db {}", shell_word(&path));
    Ok(())
}

/// The path as one shell word (quoted when it holds anything unusual).
fn shell_word(path: &Path) -> String {
    let text = path.display().to_string();
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./+:=@%,".contains(c));
    if plain {
        text
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
