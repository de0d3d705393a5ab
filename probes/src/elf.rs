//! Resolves exported function names of a shared library to file offsets,
//! the form uprobes are attached at. Each library file is parsed once, and
//! only the parts the lookup needs are read: the driver and NCCL libraries
//! run to hundreds of megabytes, and reading them whole took most of a
//! capture's start.

use object::read::ReadCache;
use object::{Object, ObjectSection, ObjectSymbol, ReadRef};
use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

/// `endbr64`: the indirect-branch landing pad that CET-enabled builds put
/// first in every exported function.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];

/// Function name -> file offset, for the functions a library defines.
///
/// When a function starts with `endbr64`, the offset points just past it: the
/// kernel cannot emulate that instruction and would single-step every probe
/// hit (about ten times slower), while the instruction after it (a `push` or
/// `mov` of the prologue) is emulated. The landing pad has no effect on the
/// stack, so entry and return probes see the same arguments and return
/// address there.
///
/// The dynamic symbol table is searched first; the full symbol table (absent
/// from stripped libraries) only for names the dynamic one lacks.
pub fn function_offsets(path: &Path, wanted: &[&str]) -> Result<HashMap<String, u64>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let cache = ReadCache::new(BufReader::new(file));
    let elf = object::File::parse(&cache).map_err(|e| format!("not an ELF file ({e})"))?;
    let mut out = HashMap::new();
    collect(&elf, &cache, elf.dynamic_symbols(), wanted, &mut out);
    if out.len() < wanted.len() {
        collect(&elf, &cache, elf.symbols(), wanted, &mut out);
    }
    Ok(out)
}

/// Adds to `out` the file offset of each symbol of `symbols` named in
/// `wanted` and not found yet.
fn collect<'data, R: ReadRef<'data>>(
    elf: &object::File<'data, R>,
    data: R,
    symbols: object::SymbolIterator<'data, '_, R>,
    wanted: &[&str],
    out: &mut HashMap<String, u64>,
) {
    for sym in symbols {
        if sym.is_undefined() || sym.address() == 0 {
            continue;
        }
        let Ok(raw) = sym.name() else { continue };
        let name = raw.split('@').next().unwrap_or(raw);
        if !wanted.contains(&name) || out.contains_key(name) {
            continue;
        }
        let Some(index) = sym.section_index() else {
            continue;
        };
        let Ok(section) = elf.section_by_index(index) else {
            continue;
        };
        let Some((file_off, _)) = section.file_range() else {
            continue;
        };
        let Some(rel) = sym.address().checked_sub(section.address()) else {
            continue;
        };
        let mut off = file_off + rel;
        if data.read_bytes_at(off, 4) == Ok(&ENDBR64[..]) {
            off += 4;
        }
        out.insert(name.to_string(), off);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// Compiles C `code` into a shared library with `flags` in a fresh
    /// folder named after `name`; returns the folder, the source and the
    /// library.
    fn shared_library(name: &str, code: &str, flags: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("ingero-elf-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let src = dir.join("lib.c");
        let lib = dir.join(format!("lib{name}.so"));
        std::fs::write(&src, code).expect("src");
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC"])
            .args(flags)
            .arg("-o")
            .arg(&lib)
            .arg(&src)
            .status()
            .expect("cc");
        assert!(status.success());
        (dir, src, lib)
    }

    #[test]
    fn skips_the_endbr64_landing_pad() {
        let (dir, _, lib) = shared_library(
            "cet",
            "int cudaFree(void *p) { return p != 0; }\n",
            &["-O2", "-fcf-protection=full"],
        );
        let data = std::fs::read(&lib).expect("read");
        let offs = function_offsets(&lib, &["cudaFree"]).expect("offsets");
        let off = *offs.get("cudaFree").expect("symbol") as usize;
        assert_eq!(
            &data[off - 4..off],
            &ENDBR64[..],
            "offset lands after endbr64"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn finds_exported_and_local_functions_and_says_what_is_not_elf() {
        // cudaMalloc is exported (dynamic symbol table); cudaFree is hidden,
        // so only the full symbol table names it.
        let (dir, src, lib) = shared_library(
            "local",
            "__attribute__((visibility(\"hidden\"))) int cudaFree(void *p) { return p != 0; }\n\
             int cudaMalloc(void **p, unsigned long n) { return cudaFree(*p) + (int)n; }\n",
            &["-O0", "-fcf-protection=none"],
        );
        let offs =
            function_offsets(&lib, &["cudaFree", "cudaMalloc", "cudaMemcpy"]).expect("offsets");
        assert!(offs.contains_key("cudaMalloc"), "{offs:?}");
        assert!(offs.contains_key("cudaFree"), "{offs:?}");
        assert!(!offs.contains_key("cudaMemcpy"));
        assert_ne!(offs["cudaFree"], offs["cudaMalloc"]);
        let err = function_offsets(&src, &["cudaFree"]).expect_err("a C source is no ELF file");
        assert!(err.contains("not an ELF file"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
