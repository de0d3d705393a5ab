//! Placeholder for `ingero demo` (written elsewhere); keeps the binary compiling.

/// Arguments of `ingero demo`.
#[derive(clap::Args)]
pub struct Args {}

/// Not available in this build.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ingero demo` is not part of this build")
}
