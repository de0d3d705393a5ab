//! Warnings raised while a capture runs (a CUDA library that could not be
//! probed, a fallback to one uprobe link per function), kept as data so the
//! status, the final summary and the MCP server list them, and logged once
//! through `tracing` as they happen.

use crate::error::CaptureError;
use crate::status::{CaptureWarning, WarningKind};
use std::path::Path;
use std::sync::Mutex;

/// Most warnings kept; once full, new ones are only counted (a machine-wide
/// capture can meet many unprobeable copies of a library).
pub const MAX_WARNINGS: usize = 64;

/// The warnings of one capture, shared by the threads that raise them.
#[derive(Debug, Default)]
pub struct Warnings {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    list: Vec<CaptureWarning>,
    omitted: u64,
}

impl Warnings {
    /// Records a warning and logs it, unless the same one is recorded
    /// already. Past [`MAX_WARNINGS`] it is counted, not kept.
    pub fn record(&self, kind: WarningKind, library: Option<&Path>, message: String) {
        let warning = CaptureWarning {
            kind,
            library: library.map(|l| l.display().to_string()),
            message,
        };
        let mut kept = match self.inner.lock() {
            Ok(k) => k,
            Err(poisoned) => poisoned.into_inner(),
        };
        if kept.list.contains(&warning) {
            return;
        }
        tracing::warn!("{}", warning.message);
        if kept.list.len() < MAX_WARNINGS {
            kept.list.push(warning);
        } else {
            kept.omitted += 1;
        }
    }

    /// A library found by discovery that could not be probed.
    pub fn library_not_probed(&self, library: &Path, error: &CaptureError) {
        let reason = match error {
            CaptureError::LibraryNotUsable { detail, .. } => detail.clone(),
            other => other.to_string(),
        };
        self.record(
            WarningKind::LibraryNotProbed,
            Some(library),
            format!(
                "{}: not probed, so its CUDA calls are not recorded ({reason})",
                library.display()
            ),
        );
    }

    /// The warnings kept so far, in the order they were raised, and how
    /// many more were only counted.
    pub fn snapshot(&self) -> (Vec<CaptureWarning>, u64) {
        match self.inner.lock() {
            Ok(k) => (k.list.clone(), k.omitted),
            Err(poisoned) => {
                let k = poisoned.into_inner();
                (k.list.clone(), k.omitted)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn keeps_each_warning_once_and_counts_past_the_cap() {
        let w = Warnings::default();
        let lib = PathBuf::from("/x/libcuda.so.1");
        let err = CaptureError::LibraryNotUsable {
            path: lib.clone(),
            detail: "it defines none of the CUDA functions ingero traces".into(),
        };
        w.library_not_probed(&lib, &err);
        w.library_not_probed(&lib, &err);
        let (list, omitted) = w.snapshot();
        assert_eq!(list.len(), 1);
        assert_eq!(omitted, 0);
        assert_eq!(list[0].kind, WarningKind::LibraryNotProbed);
        assert_eq!(list[0].library.as_deref(), Some("/x/libcuda.so.1"));
        assert!(
            list[0]
                .message
                .starts_with("/x/libcuda.so.1: not probed, so its CUDA calls are not recorded"),
            "{}",
            list[0].message
        );
        assert!(list[0].message.contains("defines none"));
        for i in 0..MAX_WARNINGS + 5 {
            w.record(WarningKind::PerFunctionFallback, None, format!("w{i}"));
        }
        let (list, omitted) = w.snapshot();
        assert_eq!(list.len(), MAX_WARNINGS);
        assert_eq!(omitted, 6);
    }
}
