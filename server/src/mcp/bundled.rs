//! The database served when `ingero mcp` is given none, so a newcomer's
//! first command works: the recorded H200 investigation of the PyTorch
//! DataLoader starvation benchmark, embedded in the binary and written once
//! into the user's cache folder (the demo scenario is the fallback when no
//! folder is writable).

use anyhow::Context;
use std::path::{Path, PathBuf};

/// File name of the bundled investigation in the cache folder.
const CACHE_NAME: &str = "pytorch-dataloader-starvation-h200.db";

/// The recorded investigation (see investigations/README.md).
static RECORDED: &[u8] =
    include_bytes!("../../../investigations/pytorch-dataloader-starvation-h200.db");

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

/// Path of the bundled database, written on first use.
pub fn bundled_database() -> anyhow::Result<PathBuf> {
    let mut why = Vec::new();
    let dirs = cache_dir()
        .into_iter()
        .chain(std::iter::once(std::env::temp_dir().join("ingero")));
    for dir in dirs {
        let path = dir.join(CACHE_NAME);
        if std::fs::metadata(&path).is_ok_and(|m| m.len() == RECORDED.len() as u64) {
            return Ok(path);
        }
        match write_atomically(&dir, &path, RECORDED) {
            Ok(()) => {
                tracing::info!(path = %path.display(), "serving the bundled H200 investigation");
                return Ok(path);
            }
            Err(e) => why.push(format!("{}: {e:#}", dir.display())),
        }
    }
    if let Some(dir) = cache_dir() {
        let path = dir.join("dataloader-starvation-demo.db");
        let options = ingero_demo::DemoOptions {
            overwrite: true,
            ..ingero_demo::DemoOptions::default()
        };
        if ingero_demo::generate(ingero_demo::Scenario::DataloaderStarvation, &path, &options)
            .is_ok()
        {
            return Ok(path);
        }
    }
    anyhow::bail!(
        "no database given and the bundled one could not be written ({}); pass --db FILE",
        why.join("; ")
    )
}

/// Writes through a temporary file and a rename, so a crash never leaves a
/// half-written cache entry.
fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let tmp = dir.join(format!(".{CACHE_NAME}.{}.tmp", std::process::id()));
    let mut file = ingero_store::safe_open::create_output(&tmp)?;
    std::io::Write::write_all(&mut file, bytes)
        .with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("move into {}", path.display()))?;
    Ok(())
}
