//! The catalogue of traced CUDA functions (`store/src/catalog.rs`) cannot
//! drift from what the probes read (`bpf/cuda.h`) or from the libraries of
//! a real GPU host: the exported names of the H200's libcudart.so.13 and
//! libcuda.so.1, as `investigations/scripts/gpu_facts_h200.sh` listed them,
//! and every `nccl*` name of the libnccl.so.2 PyTorch ships there, are
//! committed in `tests/data/h200-symbols`.

use ingero_store::catalog::{CudaApi, CUDA_OPS};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The `grep -E` pattern the listing script kept names by: a name that
/// matches none of these cannot be in the lists, whether exported or not.
const LISTED_PATTERN: &[&str] = &[
    "Launch",
    "Graph",
    "MallocAsync",
    "FreeAsync",
    "MemPool",
    "Event",
    "StreamWait",
    "Memcpy",
    "Memset",
    "Synchronize",
    "StreamQuery",
    "Malloc",
    "Free",
    "_pt",
];

/// Catalogue names the lists cannot show, each with why; every other name
/// must be in the list of its library.
const NOT_IN_LISTS: &[(&str, &str)] = &[
    ("cudaHostAlloc", "outside the listing pattern"),
    ("cuMemAlloc_v2", "outside the listing pattern"),
    ("cuMemAllocManaged", "outside the listing pattern"),
    ("cuMemAllocAsync", "outside the listing pattern"),
    ("cuMemAllocFromPoolAsync", "outside the listing pattern"),
];

fn listed(file: &str) -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/h200-symbols")
        .join(file);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn symbols(api: CudaApi) -> BTreeSet<String> {
    match api {
        CudaApi::Runtime => listed("libcudart.so.13.txt"),
        CudaApi::Driver => listed("libcuda.so.1.txt"),
        CudaApi::Nccl => listed("libnccl.so.2.txt"),
    }
}

#[test]
fn every_catalogue_name_is_exported_by_the_h200_libraries() {
    let runtime = symbols(CudaApi::Runtime);
    let driver = symbols(CudaApi::Driver);
    let nccl = symbols(CudaApi::Nccl);
    let mut missing = Vec::new();
    for op in CUDA_OPS {
        let list = match op.api {
            CudaApi::Runtime => &runtime,
            CudaApi::Driver => &driver,
            CudaApi::Nccl => &nccl,
        };
        // The NCCL list has every exported nccl* name.
        let matches = op.api == CudaApi::Nccl || LISTED_PATTERN.iter().any(|p| op.name.contains(p));
        let excused = NOT_IN_LISTS.iter().any(|(n, _)| *n == op.name);
        if excused {
            // An exception only where the list could not have shown it.
            assert!(
                !matches && !list.contains(op.name),
                "{}: listed, so it needs no exception",
                op.name
            );
        } else if !list.contains(op.name) {
            missing.push(op.name);
        }
    }
    assert!(
        missing.is_empty(),
        "catalogue names the H200 libraries do not export: {missing:?}"
    );
    for (name, _) in NOT_IN_LISTS {
        assert!(
            CUDA_OPS.iter().any(|o| o.name == *name),
            "{name}: exception for a name the catalogue lacks"
        );
    }
}

#[test]
fn per_thread_variants_of_catalogued_functions_are_catalogued() {
    let names: BTreeSet<&str> = CUDA_OPS.iter().map(|o| o.name).collect();
    for op in CUDA_OPS.iter().filter(|o| !o.per_thread_stream()) {
        for suffix in ["_ptsz", "_ptds"] {
            let variant = format!("{}{suffix}", op.name);
            if symbols(op.api).contains(&variant) {
                assert!(
                    names.contains(variant.as_str()),
                    "{variant} is exported but not catalogued"
                );
            }
        }
    }
}

/// The rows of `CUDA_FUNCTIONS` in `bpf/cuda.h`: name -> catalogue id.
fn probed_functions() -> BTreeMap<String, u16> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("bpf/cuda.h");
    let text = std::fs::read_to_string(&path).expect("read bpf/cuda.h");
    let start = text
        .find("#define CUDA_FUNCTIONS(X)")
        .expect("CUDA_FUNCTIONS table");
    let mut rows = BTreeMap::new();
    for line in text[start..].lines().skip(1) {
        let line = line.trim();
        let Some(body) = line.strip_prefix("X(") else {
            break;
        };
        let mut fields = body.split(',').map(str::trim);
        let name = fields.next().expect("name").to_string();
        let id: u16 = fields.next().expect("id").parse().expect("numeric id");
        assert!(rows.insert(name.clone(), id).is_none(), "{name} twice");
    }
    rows
}

#[test]
fn the_probes_read_exactly_the_catalogue() {
    let probed = probed_functions();
    let catalogued: BTreeMap<String, u16> = CUDA_OPS
        .iter()
        .map(|o| (o.name.to_string(), o.id))
        .collect();
    assert_eq!(probed, catalogued);
}
