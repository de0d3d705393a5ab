//! Finding and initialising NVML (`libnvidia-ml.so.1`) at run time, so the
//! binary runs on machines without the NVIDIA driver and a capture there
//! only loses the measured GPU side.

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};

/// Environment variable naming the NVML library file to load instead of
/// searching for it (a driver installed outside the loader path, a
/// stand-in in tests).
pub const NVML_LIB_ENV: &str = "INGERO_NVML_LIB";

/// Name the dynamic loader resolves through its usual path.
pub const NVML_SONAME: &str = "libnvidia-ml.so.1";

/// Where container images of NVIDIA's (and the H200 host) put the driver
/// libraries, often not on the loader path.
pub const NVML_FALLBACK: &str = "/usr/local/nvidia/lib64/libnvidia-ml.so.1";

/// Libraries to try, in order: only `explicit` when one is given (a path
/// the user chose is not second-guessed with another driver), else the
/// loader's `libnvidia-ml.so.1`, then [`NVML_FALLBACK`].
pub fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    match explicit {
        Some(p) => vec![p.to_path_buf()],
        None => vec![PathBuf::from(NVML_SONAME), PathBuf::from(NVML_FALLBACK)],
    }
}

/// The library named by [`NVML_LIB_ENV`], when set and not empty.
pub fn library_from_env() -> Option<PathBuf> {
    std::env::var_os(NVML_LIB_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// An initialised NVML and the library it came from.
pub struct Loaded {
    /// The library handle; dropping it shuts NVML down.
    pub nvml: Nvml,
    /// The candidate that worked, as given to the loader.
    pub library: String,
}

/// Why NVML could not be used: every candidate tried, with its error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct NvmlUnavailable {
    /// `(library, error)` for each candidate, in the order tried.
    pub attempts: Vec<(String, String)>,
}

impl fmt::Display for NvmlUnavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.attempts.is_empty() {
            return f.write_str("no NVML library to try");
        }
        for (i, (lib, err)) in self.attempts.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{lib}: {err}")?;
        }
        if cfg!(target_env = "musl") {
            // A static musl binary cannot dlopen anything: no path will help.
            f.write_str(
                " (this ingero binary is statically linked with musl, which cannot load \
                 shared libraries; use a build for the glibc target, x86_64-unknown-linux-gnu)",
            )?;
        }
        Ok(())
    }
}

/// One attempt's error in a few words: the loader's own message for a
/// library that cannot be opened (without the library name it repeats),
/// NVML's for an init that failed.
fn describe(lib: &str, e: &NvmlError) -> String {
    let text = match e {
        NvmlError::LibloadingError(inner) => inner.to_string(),
        other => format!("nvmlInit failed: {other}"),
    };
    match text.strip_prefix(lib).and_then(|t| t.strip_prefix(": ")) {
        Some(rest) => rest.to_string(),
        None => text,
    }
}

/// Loads and initialises the first candidate that works.
pub fn open(explicit: Option<&Path>) -> Result<Loaded, NvmlUnavailable> {
    let mut attempts = Vec::new();
    for lib in candidates(explicit) {
        let name = lib.display().to_string();
        match Nvml::builder().lib_path(OsStr::new(lib.as_os_str())).init() {
            Ok(nvml) => {
                return Ok(Loaded {
                    nvml,
                    library: name,
                })
            }
            Err(e) => {
                let why = describe(&name, &e);
                attempts.push((name, why));
            }
        }
    }
    Err(NvmlUnavailable { attempts })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_explicit_library_is_the_only_candidate() {
        let p = Path::new("/opt/x/libnvidia-ml.so.1");
        assert_eq!(candidates(Some(p)), vec![p.to_path_buf()]);
        assert_eq!(
            candidates(None),
            vec![PathBuf::from(NVML_SONAME), PathBuf::from(NVML_FALLBACK)]
        );
    }

    #[test]
    fn a_missing_library_names_each_attempt() {
        let missing = Path::new("/nonexistent/libnvidia-ml.so.1");
        let err = match open(Some(missing)) {
            Ok(_) => panic!("a missing file loaded"),
            Err(e) => e,
        };
        assert_eq!(err.attempts.len(), 1);
        let text = err.to_string();
        assert_eq!(
            text,
            "/nonexistent/libnvidia-ml.so.1: cannot open shared object file: No such file or directory"
        );
    }
}
