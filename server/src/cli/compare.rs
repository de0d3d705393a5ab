//! `ingero compare`: did the fix work? Two trace databases compared through
//! their findings, as text or JSON.

use anyhow::Result;
use ingero_store::TraceDb;
use ingero_tools::compare::{compare_dbs, text, WindowChoice};
use std::path::PathBuf;

/// Arguments of `ingero compare`.
#[derive(clap::Args)]
pub struct Args {
    /// Baseline trace database (before the change).
    #[arg(value_name = "BASE")]
    base: PathBuf,
    /// Trace database of the run to judge (after the change).
    #[arg(value_name = "NEW")]
    new: PathBuf,
    /// Read the whole captures, not just each run's steady phase (first to
    /// last CUDA call).
    #[arg(long)]
    whole: bool,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Result<()> {
    let base = TraceDb::open(&args.base)?;
    let new = TraceDb::open(&args.new)?;
    let window = if args.whole {
        WindowChoice::Whole
    } else {
        WindowChoice::Steady
    };
    let comparison = compare_dbs(&base, &new, window)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        print!("{}", text::full(&comparison));
    }
    Ok(())
}
