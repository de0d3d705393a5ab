//! The same file gives the same report, byte for byte: on recordings with
//! stack samples (where the code behind each idle part is chosen among
//! paths of equal weight) `explain` run several times in one process, each
//! run with fresh hash seeds, serialises identically.

use ingero_store::TraceDb;
use ingero_tools::explain::explain;
use ingero_tools::Scope;
use std::io::BufReader;
use std::path::PathBuf;

/// A committed recording, unpacked into a temporary folder.
fn unpack(rel: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::TempDir::new().expect("temp dir");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(rel);
    let file = std::fs::File::open(&src).expect("committed database");
    let out = tmp.path().join("case.db");
    let mut dst = std::fs::File::create(&out).expect("create");
    lzma_rs::xz_decompress(&mut BufReader::new(file), &mut dst).expect("xz");
    (tmp, out)
}

#[test]
fn explain_is_the_same_on_every_run() {
    for rel in [
        "investigations/zoo-h200/stacks-getitem_transform-s50.db.xz",
        "investigations/zoo-h200/zoo-compile_stall-s50.db.xz",
        "investigations/zoo2-standin/zoo2-lock_contention.db.xz",
    ] {
        let (_tmp, path) = unpack(rel);
        let db = TraceDb::open(&path).expect("open");
        let first =
            serde_json::to_string(&explain(&db, &Scope::ALL).expect("explain")).expect("json");
        for run in 1..4 {
            let again =
                serde_json::to_string(&explain(&db, &Scope::ALL).expect("explain")).expect("json");
            assert!(first == again, "{rel}: run {run} differs from the first");
        }
    }
}
