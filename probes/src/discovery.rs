//! Finds CUDA and NCCL library files: in the memory maps of processes
//! (including copies shipped inside Python wheels) and in the usual install
//! locations.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Directories where CUDA toolkits and drivers usually put their libraries.
const WELL_KNOWN_DIRS: &[&str] = &[
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/wsl/lib",
];

/// True for file names ingero probes: `libcudart.so*`, `libcuda.so*` and
/// `libnccl.so*`.
pub fn is_cuda_library_name(name: &str) -> bool {
    name.starts_with("libcudart.so")
        || name.starts_with("libcuda.so")
        || name.starts_with("libnccl.so")
}

fn is_cuda_library_path(path: &str) -> bool {
    !path.contains("/stubs/")
        && Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(is_cuda_library_name)
}

/// CUDA library paths mapped by `pid`, as seen from our mount namespace
/// (through `/proc/PID/root` when the process lives in another one).
pub fn libraries_in_maps(pid: i32) -> Vec<PathBuf> {
    let Ok(maps) = fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return Vec::new();
    };
    let mut found = BTreeSet::new();
    for line in maps.lines() {
        // address perms offset dev inode path: only the path contains '/'.
        let Some(start) = line.find('/') else {
            continue;
        };
        let path = line[start..].trim_end();
        if !path.ends_with(" (deleted)") && is_cuda_library_path(path) {
            found.insert(path.to_string());
        }
    }
    found.into_iter().map(|p| visible_path(pid, &p)).collect()
}

/// The dynamic loader file `pid` maps (`ld-linux-x86-64.so.2`,
/// `ld-musl-x86_64.so.1`, ...), reachable from here; `None` for a static
/// program or a process gone.
pub fn loader_in_maps(pid: i32) -> Option<PathBuf> {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    maps.lines().find_map(|line| {
        let path = line[line.find('/')?..].trim_end();
        let name = Path::new(path).file_name()?.to_str()?;
        let loader = name.starts_with("ld-linux") || name.starts_with("ld-musl");
        (loader && name.contains(".so") && !path.ends_with(" (deleted)"))
            .then(|| visible_path(pid, path))
    })
}

/// `path` as mapped by `pid`, reachable from here: the plain path when it is
/// the same file, else through the process's root directory.
fn visible_path(pid: i32, path: &str) -> PathBuf {
    let through_root = PathBuf::from(format!("/proc/{pid}/root{path}"));
    let same_root = match (
        fs::metadata(format!("/proc/{pid}/root/")),
        fs::metadata("/"),
    ) {
        (Ok(a), Ok(b)) => {
            use std::os::unix::fs::MetadataExt;
            a.dev() == b.dev() && a.ino() == b.ino()
        }
        _ => true,
    };
    if same_root {
        PathBuf::from(path)
    } else {
        through_root
    }
}

/// Library paths named in the dynamic linker cache (`/etc/ld.so.cache`): its
/// string table holds full paths, NUL separated.
fn from_ld_cache(cache: &Path) -> Vec<PathBuf> {
    let Ok(bytes) = fs::read(cache) else {
        return Vec::new();
    };
    let mut out = BTreeSet::new();
    for s in bytes.split(|&b| b == 0) {
        if s.first() != Some(&b'/') {
            continue;
        }
        if let Ok(text) = std::str::from_utf8(s) {
            if is_cuda_library_path(text) {
                out.insert(PathBuf::from(text));
            }
        }
    }
    out.into_iter().collect()
}

fn cuda_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = WELL_KNOWN_DIRS.iter().map(PathBuf::from).collect();
    if let Ok(entries) = fs::read_dir("/usr/local") {
        let mut toolkits: Vec<PathBuf> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("cuda"))
            })
            .collect();
        toolkits.sort();
        for t in toolkits {
            dirs.push(t.join("lib64"));
            dirs.push(t.join("targets/x86_64-linux/lib"));
        }
    }
    dirs
}

/// CUDA libraries in the linker cache and well-known directories; real files
/// only (symlinks resolved), so each file appears once.
pub fn well_known_libraries() -> Vec<PathBuf> {
    well_known_in(Path::new("/etc/ld.so.cache"), &cuda_dirs())
}

fn well_known_in(cache: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut candidates = from_ld_cache(cache);
    for dir in dirs {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for e in entries.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.to_str().is_some_and(is_cuda_library_path) {
                candidates.push(p);
            }
        }
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for c in candidates {
        if let Ok(real) = fs::canonicalize(&c) {
            if real.is_file() && seen.insert(real.clone()) {
                out.push(real);
            }
        }
    }
    out
}

/// Places searched, for error messages.
pub fn searched_description() -> String {
    "process memory maps, /etc/ld.so.cache, /usr/local/cuda*/lib64, /usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/local/nvidia/lib64".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_library_names() {
        assert!(is_cuda_library_name("libcudart.so.13"));
        assert!(is_cuda_library_name("libcuda.so.1"));
        assert!(is_cuda_library_name("libcudart.so"));
        assert!(!is_cuda_library_name("libcudnn.so.9"));
        assert!(is_cuda_library_name("libnccl.so.2"));
        assert!(!is_cuda_library_name("libcudart_static.a"));
        assert!(!is_cuda_library_path(
            "/usr/local/cuda/lib64/stubs/libcuda.so"
        ));
        assert!(is_cuda_library_path(
            "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcudart.so.13"
        ));
    }

    #[test]
    fn finds_the_dynamic_loader_of_a_process() {
        // This test binary is dynamically linked: its loader is mapped, and
        // it defines the debugger hook the loader watch traps on.
        let pid = std::process::id() as i32;
        let loader = loader_in_maps(pid).expect("a dynamically linked test binary maps its loader");
        let name = loader.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(name.starts_with("ld-"), "{}", loader.display());
        let hook = crate::elf::function_offsets(&loader, &["_dl_debug_state"]).expect("ELF");
        assert!(hook.contains_key("_dl_debug_state"), "{}", loader.display());
        // No such process: nothing, not an error.
        assert!(loader_in_maps(i32::MAX).is_none());
    }

    #[test]
    fn reads_paths_from_a_linker_cache_and_dirs() {
        let dir = tempfile::tempdir().expect("tmp");
        let lib = dir.path().join("libcuda.so.1");
        fs::write(&lib, b"x").expect("write");
        let link = dir.path().join("libcuda.so");
        std::os::unix::fs::symlink(&lib, &link).expect("symlink");
        let cache = dir.path().join("ld.so.cache");
        let mut bytes = b"glibc-ld.so.cache1.1\0\0libcuda.so.1\0".to_vec();
        bytes.extend_from_slice(lib.to_str().expect("utf8").as_bytes());
        bytes.extend_from_slice(b"\0/usr/lib/libz.so.1\0");
        fs::write(&cache, bytes).expect("write");
        let found = well_known_in(&cache, &[dir.path().to_path_buf()]);
        assert_eq!(found, vec![fs::canonicalize(&lib).expect("canon")]);
    }
}
