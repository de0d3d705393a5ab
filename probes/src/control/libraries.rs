//! CUDA libraries a traced process maps after the start: found in its
//! memory map and probed, scoped to that process.

use super::Control;
use crate::discovery;
use crate::loader::AttachOutcome;

impl Control {
    /// Reads `pid`'s memory map, watches its dynamic loader and probes the
    /// CUDA libraries in it that are not probed yet (a library that failed
    /// once is not retried).
    pub(super) fn attach_from_maps(&mut self, pid: i32) {
        // The loader watch goes in before the map is read for libraries (a
        // second read): a library mapped before the link is in the map,
        // one mapped after it makes the loader trap.
        if let (Some(probes), Some(loader)) = (self.probes.as_mut(), discovery::loader_in_maps(pid))
        {
            let scope = (!self.trace_all).then_some(pid);
            if let Err(e) = probes.watch_loader(&loader, scope) {
                tracing::warn!(error = %e, pid, "no watch on libraries loaded from now on");
            }
        }
        for lib in discovery::libraries_in_maps(pid) {
            if self.failed_libs.contains(&lib) {
                continue;
            }
            let Some(probes) = self.probes.as_mut() else {
                return;
            };
            let scope = (!self.trace_all).then_some(pid);
            match probes.attach_library(&lib, scope) {
                Ok(AttachOutcome::Attached(n)) => {
                    tracing::info!(library = %lib.display(), functions = n, pid, "probing CUDA library");
                    if let Ok(mut l) = self.shared.libraries.lock() {
                        let name = lib.display().to_string();
                        if !l.contains(&name) {
                            l.push(name);
                        }
                    }
                }
                Ok(AttachOutcome::AlreadyAttached) => {}
                Err(e) => {
                    self.shared.warnings.library_not_probed(&lib, &e);
                    self.failed_libs.insert(lib);
                }
            }
        }
    }
}
