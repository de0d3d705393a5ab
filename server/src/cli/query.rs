//! Placeholder for `ingero query` (written elsewhere); keeps the binary compiling.

/// Arguments of `ingero query`.
#[derive(clap::Args)]
pub struct Args {}

/// Not available in this build.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ingero query` is not part of this build")
}
