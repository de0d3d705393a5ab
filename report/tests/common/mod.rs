//! Shared fixtures: the recorded PyTorch DataLoader starvation trace.

#![allow(dead_code)]

use ingero_store::TraceDb;
use ingero_tools::chains::{chains_of, ChainReport};
use ingero_tools::dataset::Dataset;
use ingero_tools::Scope;
use std::path::{Path, PathBuf};

/// Path of the bundled real trace.
pub fn seed_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
}

/// Path of the bundled multi-session cluster trace.
pub fn cluster_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/sample-cluster.db")
}

/// The seed trace opened read-only.
pub fn seed_db() -> TraceDb {
    TraceDb::open(&seed_path()).expect("open the seed trace")
}

/// The whole seed trace loaded, with its chains.
pub fn seed_dataset() -> (Dataset, ChainReport) {
    let db = seed_db();
    let ds = Dataset::load(&db, &Scope::ALL).expect("load the seed trace");
    let chains = chains_of(&ds);
    (ds, chains)
}
pub mod receiver;
