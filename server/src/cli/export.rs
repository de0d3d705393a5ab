//! `ingero export`: hands a trace to other tools.
use anyhow::Result;
/// Arguments of `ingero export`.
#[derive(clap::Args)]
pub struct Args {}
/// Runs the subcommand.
pub fn run(_args: Args) -> Result<()> {
    Ok(())
}
