//! Resolves exported function names of a shared library to file offsets,
//! the form uprobes are attached at. Each library file is parsed once.

use object::{Object, ObjectSection, ObjectSymbol};
use std::collections::HashMap;
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
pub fn function_offsets(path: &Path, wanted: &[&str]) -> Result<HashMap<String, u64>, String> {
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let file = object::File::parse(&*data).map_err(|e| format!("not an ELF file ({e})"))?;
    let mut out = HashMap::new();
    for sym in file.dynamic_symbols().chain(file.symbols()) {
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
        let Ok(section) = file.section_by_index(index) else {
            continue;
        };
        let Some((file_off, _)) = section.file_range() else {
            continue;
        };
        let Some(rel) = sym.address().checked_sub(section.address()) else {
            continue;
        };
        let mut off = file_off + rel;
        let start = off as usize;
        if data.get(start..start + 4) == Some(&ENDBR64[..]) {
            off += 4;
        }
        out.insert(name.to_string(), off);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_the_endbr64_landing_pad() {
        let dir = std::env::temp_dir().join(format!("ingero-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let src = dir.join("cet.c");
        let lib = dir.join("libcet.so");
        std::fs::write(&src, "int cudaFree(void *p) { return p != 0; }\n").expect("src");
        let status = std::process::Command::new("cc")
            .args(["-O2", "-shared", "-fPIC", "-fcf-protection=full", "-o"])
            .arg(&lib)
            .arg(&src)
            .status()
            .expect("cc");
        assert!(status.success());
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
}
