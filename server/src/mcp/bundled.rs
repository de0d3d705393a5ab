//! The database served when `ingero mcp` is given none, so a newcomer's
//! first command works: the built-in `dataloader-starvation` demo, generated
//! once into the user's cache folder, or a recorded investigation shipped in
//! `investigations/`.

use anyhow::Context;
use std::path::{Path, PathBuf};

/// File name of the cached demo database.
const CACHE_NAME: &str = "dataloader-starvation.db";

/// `$XDG_CACHE_HOME/ingero` or `~/.cache/ingero`.
pub fn cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("ingero"))
}

/// Path of a usable bundled database, generating the demo on first use.
pub fn bundled_database() -> anyhow::Result<PathBuf> {
    let mut why = Vec::new();
    if let Some(dir) = cache_dir() {
        let path = dir.join(CACHE_NAME);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() > 0) {
            return Ok(path);
        }
        match generate_demo(&dir, &path) {
            Ok(()) => return Ok(path),
            Err(e) => why.push(format!("demo: {e:#}")),
        }
    } else {
        why.push("no cache folder (set XDG_CACHE_HOME or HOME)".to_string());
    }
    if let Some(recorded) = recorded_investigation() {
        tracing::info!(path = %recorded.display(), "serving the recorded investigation");
        return Ok(recorded);
    }
    anyhow::bail!(
        "no database given and no bundled one available ({}); pass --db FILE",
        why.join("; ")
    )
}

/// Writes the demo scenario to `path` through a temporary file, so a crash
/// never leaves a half-written cache entry.
fn generate_demo(dir: &Path, path: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let tmp = dir.join(format!(".{CACHE_NAME}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    if let Err(e) = generate_dataloader_starvation(&tmp) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, path).with_context(|| format!("move into {}", path.display()))?;
    tracing::info!(path = %path.display(), "generated the dataloader-starvation demo database");
    Ok(())
}

/// The single call into the demo generator.
fn generate_dataloader_starvation(path: &Path) -> anyhow::Result<()> {
    let options = ingero_demo::DemoOptions {
        overwrite: true,
        ..ingero_demo::DemoOptions::default()
    };
    ingero_demo::generate(ingero_demo::Scenario::DataloaderStarvation, path, &options)?;
    Ok(())
}

/// A recorded database under `investigations/` (next to the working folder
/// or the source tree), preferring the data-loader starvation one.
fn recorded_investigation() -> Option<PathBuf> {
    let source_tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let candidates = [
        PathBuf::from("investigations"),
        source_tree.join("investigations"),
        // Ingero's own recorded investigations, vendored with the sources.
        source_tree.join("tests/data/ingero-investigations"),
    ];
    for dir in candidates {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut dbs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "db") && p.is_file())
            .collect();
        dbs.sort_by_key(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (!name.contains("dataloader"), name)
        });
        if let Some(first) = dbs.into_iter().next() {
            return first.canonicalize().ok();
        }
    }
    None
}
