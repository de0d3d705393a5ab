//! `ingero check`: can this machine capture? Kernel, BTF, permissions,
//! tracefs, bpffs, CUDA libraries, GPU driver and NVML, each with a fix.

/// Check the machine for capture.
#[derive(clap::Args)]
pub struct Args {
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Prints the report; fails with exit 2 ([`crate::exit::MachineNotReady`])
/// when an item stops capture.
pub fn run(args: Args) -> anyhow::Result<()> {
    let report = ingero_probes::preflight();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", ingero_probes::render::check(&report));
    }
    if !report.ready {
        return Err(crate::exit::MachineNotReady(
            "capture cannot work on this machine: fix the FAIL items above".into(),
        )
        .into());
    }
    Ok(())
}
