//! Writes the SVG timeline chart of a trace: `cargo run -p ingero-report
//! --example timeline_svg -- DB OUT.svg [START_S END_S]`.

use ingero_report::svg::{timeline_svg, ChartWindow};
use ingero_store::TraceDb;
use ingero_tools::dataset::Dataset;
use ingero_tools::Scope;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(db), Some(out)) = (args.first(), args.get(1)) else {
        return Err("usage: timeline_svg DB OUT.svg [START_S END_S]".into());
    };
    let window = match (args.get(2), args.get(3)) {
        (Some(a), Some(b)) => Some(ChartWindow {
            start_offset_s: a.parse()?,
            end_offset_s: b.parse()?,
        }),
        _ => None,
    };
    let db = TraceDb::open(&PathBuf::from(db))?;
    let ds = Dataset::load(&db, &Scope::ALL)?;
    std::fs::write(out, timeline_svg(&ds, window, 1400, 520))?;
    Ok(())
}
