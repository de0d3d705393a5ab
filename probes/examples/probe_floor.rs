//! Attaches do-nothing entry/return probes to functions of a library in one
//! process, until that process exits or SECONDS pass: the floor a capture's
//! cost is compared with (see `ingero_probes::probe_floor`).
//!
//! Usage: probe_floor PID LIBRARY FUNCTION[,FUNCTION...] [SECONDS] [pair|entry|session]

use anyhow::{bail, Context};
use ingero_probes::probe_floor::{FloorProbes, ProbeFloor};
use std::path::Path;
use std::time::{Duration, Instant};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        bail!(
            "usage: probe_floor PID LIBRARY FUNCTION[,FUNCTION...] [SECONDS] [pair|entry|session]"
        );
    }
    let pid: u32 = args[0].parse().context("PID")?;
    let functions: Vec<&str> = args[2].split(',').filter(|f| !f.is_empty()).collect();
    let limit = match args.get(3) {
        Some(s) => Some(Duration::from_secs_f64(s.parse().context("SECONDS")?)),
        None => None,
    };
    let probes = match args.get(4).map(String::as_str) {
        None | Some("pair") => FloorProbes::Pair,
        Some("entry") => FloorProbes::Entry,
        Some("session") => FloorProbes::Session,
        Some(other) => bail!("probe kind `{other}`: pair, entry or session"),
    };
    let floor = ProbeFloor::attach(Path::new(&args[1]), &functions, Some(pid), probes)?;
    eprintln!(
        "probe_floor: {probes:?} probes on {} function(s) of pid {pid}",
        functions.len()
    );
    let start = Instant::now();
    while Path::new(&format!("/proc/{pid}")).exists() && limit.is_none_or(|l| start.elapsed() < l) {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(floor);
    Ok(())
}
