//! Writes demo databases without the full CLI, and times them:
//! `generate all DIR`, `generate SCENARIO OUT`, or `generate large OUT EVENTS`.

use ingero_demo::{generate, generate_large, DemoOptions, DemoSummary, Scenario};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn show(s: &DemoSummary, secs: f64) {
    println!(
        "{:<24} {:>9} events ({:>7} cuda, {:>8} host) {:>4} s simulated, GPU busy {:>5.1}%, {:>7.2} MB, {:.2} s",
        s.scenario,
        s.events(),
        s.cuda_calls,
        s.host_events,
        s.duration_ns / 1_000_000_000,
        s.gpu_busy_pct,
        s.file_bytes as f64 / 1e6,
        secs
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = DemoOptions {
        overwrite: true,
        ..DemoOptions::default()
    };
    match args.as_slice() {
        [all, dir] if all == "all" => {
            for s in Scenario::ALL {
                let path = Path::new(dir).join(format!("{}.db", s.name()));
                let t = Instant::now();
                let sum = generate(s, &path, &opts)?;
                show(&sum, t.elapsed().as_secs_f64());
            }
        }
        [large, out, n] if large == "large" => {
            let t = Instant::now();
            let sum = generate_large(&PathBuf::from(out), n.parse()?, opts.seed)?;
            show(&sum, t.elapsed().as_secs_f64());
        }
        [name, out] => {
            let t = Instant::now();
            let sum = generate(Scenario::parse(name)?, &PathBuf::from(out), &opts)?;
            show(&sum, t.elapsed().as_secs_f64());
        }
        _ => eprintln!("usage: generate all DIR | SCENARIO OUT | large OUT EVENTS"),
    }
    Ok(())
}
