//! The watch on a traced process's dynamic loader, which tells the
//! capture when the process has mapped new libraries (dlopen).

use super::{covered, Probes, LOADER_HOOK};
use crate::error::CaptureError;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

impl Probes {
    /// Watches the processes of the capture for libraries they map from now
    /// on (dlopen): a trap in `pid`'s dynamic loader at `path` each time it
    /// has mapped or unmapped objects, after which the capture reads the
    /// process's memory map again. Only `pid` traps (every process mapping
    /// `path` with `None`, when tracing the whole machine); other system
    /// calls and mappings cost nothing. Where this cannot be done, the mmap
    /// syscall tracepoints take over for the rest of the capture.
    pub fn watch_loader(&mut self, path: &Path, pid: Option<i32>) -> Result<(), CaptureError> {
        if self.mmap_syscalls {
            return Ok(());
        }
        let pid = pid.and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0);
        let Ok(meta) = std::fs::metadata(path) else {
            // The process has gone, or its loader is out of reach.
            return Ok(());
        };
        let key = (meta.dev(), meta.ino(), pid.unwrap_or(0));
        if covered(&self.loaders, key) {
            return Ok(());
        }
        let linked = crate::elf::function_offsets(path, &[LOADER_HOOK])
            .and_then(|o| {
                o.get(LOADER_HOOK)
                    .copied()
                    .ok_or_else(|| format!("it defines no {LOADER_HOOK}"))
            })
            .and_then(|offset| {
                let multi = self
                    .multi
                    .as_ref()
                    .ok_or("the kernel has no multi-uprobe links")?;
                multi
                    .attach_loader_watch(path, offset, pid)
                    .map_err(|e| e.to_string())
            });
        match linked {
            Ok(link) => {
                self.links.push(Box::new(link));
                self.loaders.insert(key);
                Ok(())
            }
            Err(e) => self.watch_mmap_syscalls(&format!("{}: {e}", path.display())),
        }
    }
}
