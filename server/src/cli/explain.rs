//! Placeholder for `ingero explain` (written elsewhere); keeps the binary compiling.

/// Arguments of `ingero explain`.
#[derive(clap::Args)]
pub struct Args {}

/// Not available in this build.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ingero explain` is not part of this build")
}
