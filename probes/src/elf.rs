//! Resolves exported function names of a shared library to file offsets,
//! the form uprobes are attached at. Each library file is parsed once.

use object::{Object, ObjectSection, ObjectSymbol};
use std::collections::HashMap;
use std::path::Path;

/// Function name -> file offset, for the functions a library defines.
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
        out.insert(name.to_string(), file_off + rel);
    }
    Ok(out)
}
