//! A big database for benchmarks: the dataloader-starvation mechanism on a
//! 16-core host with 16 workers building batches four times as large, so the
//! main thread and each worker behave as in the demo, simulated until a
//! target number of events has been written.

use crate::error::DemoError;
use crate::host::{EPOCH_NS, US};
use crate::output::{self, DemoSummary, Stop};
use crate::scenarios::dataloader::{self, LoaderParams};
use std::path::Path;

/// The scaled-out setup.
fn params() -> LoaderParams {
    LoaderParams {
        cores: 16,
        mem_gib: 128,
        workers: 16,
        samples: 128,
        decode_ns: 4_300 * US,
        kernels: 30,
        kernel_ns: 900 * US,
    }
}

/// Writes about `target_events` events (exactly that many unless the
/// simulation is asked for zero) to a new database at `path`; refuses to
/// overwrite an existing file.
pub fn generate_large(
    path: &Path,
    target_events: u64,
    seed: u64,
) -> Result<DemoSummary, DemoError> {
    if target_events == 0 {
        return Err(DemoError::BadOption(
            "target_events must be at least 1".into(),
        ));
    }
    output::check_target(path, false)?;
    let built = dataloader::build_with(&params(), seed, EPOCH_NS);
    output::write(built, "large", path, Stop::AfterEvents(target_events))
}
