//! Whether a process has the CUDA driver library in its memory map: the
//! sign that it has loaded CUDA (PyTorch and every CUDA program load
//! `libcuda.so.1`, which /proc shows under its real file name, e.g.
//! `libcuda.so.550.54.15`).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

/// What the memory map of one process says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mapped {
    /// `libcuda.so*` is mapped from this path.
    Yes(String),
    /// It is not (or the process is gone).
    No,
    /// The map could not be read (permission).
    Unreadable,
}

/// Reads `/proc/PID/maps`.
pub fn libcuda(pid: i32) -> Mapped {
    match fs::read_to_string(format!("/proc/{pid}/maps")) {
        Ok(text) => libcuda_in(&text).map_or(Mapped::No, Mapped::Yes),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => Mapped::Unreadable,
        Err(_) => Mapped::No,
    }
}

/// The first `libcuda.so*` path in a maps text; link-time stubs and deleted
/// files do not count.
pub fn libcuda_in(maps: &str) -> Option<String> {
    maps.lines().find_map(|line| {
        // address perms offset dev inode path: only the path holds a '/'.
        let path = line[line.find('/')?..].trim_end();
        let name = Path::new(path).file_name()?.to_str()?;
        let usable = name.starts_with("libcuda.so")
            && !path.contains("/stubs/")
            && !path.ends_with(" (deleted)");
        usable.then(|| path.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_library_is_found_under_any_version_suffix() {
        let maps = "\
55d0c000-55d0d000 r--p 00000000 08:01 42   /usr/bin/python3.12
7f00a000-7f00b000 r-xp 00000000 08:01 77   /venv/lib/nvidia/libcudart.so.13
7f00c000-7f00d000 r-xp 00000000 08:01 78   /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15
7ffd0000-7ffd1000 rw-p 00000000 00:00 0    [stack]
";
        assert_eq!(
            libcuda_in(maps).as_deref(),
            Some("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15")
        );
    }

    #[test]
    fn the_runtime_alone_stubs_and_deleted_files_do_not_count() {
        let maps = "\
7f00a000-7f00b000 r-xp 00000000 08:01 77   /venv/lib/nvidia/libcudart.so.13
7f00c000-7f00d000 r-xp 00000000 08:01 79   /usr/local/cuda/lib64/stubs/libcuda.so
7f00e000-7f00f000 r-xp 00000000 08:01 80   /tmp/libcuda.so.1 (deleted)
";
        assert_eq!(libcuda_in(maps), None);
        assert_eq!(libcuda_in(""), None);
    }

    #[test]
    fn this_process_has_no_cuda_driver_mapped() {
        assert_eq!(libcuda(std::process::id() as i32), Mapped::No);
        assert_eq!(libcuda(-5), Mapped::No);
    }
}
