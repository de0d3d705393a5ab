//! Room kept on the database's file system for the end of a capture. A
//! capture that fills the disk must still record when and why it stopped;
//! measured on small tmpfs mounts, the failed transaction alone leaves no
//! room for that update once SQLite's log has had to grow past a partial
//! checkpoint. So the writer holds a nameless file (`O_TMPFILE`, never
//! visible in the folder, gone with the process) of [`RESERVE_BYTES`] on
//! the same file system, and lets it go when that update needs the room.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Bytes held: room for the stop update (one page in the log) many times
/// over, and for part of the final checkpoint.
pub const RESERVE_BYTES: usize = 256 << 10;

/// Space held beside a database until [`Reserve::release`].
#[derive(Debug, Default)]
pub(crate) struct Reserve(Option<File>);

impl Reserve {
    /// Holds [`RESERVE_BYTES`] on the file system of `db`. Best effort: a
    /// file system without nameless files, or already full, holds nothing.
    pub(crate) fn hold(db: &Path) -> Reserve {
        let dir = match db.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let opened = std::fs::OpenOptions::new()
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_TMPFILE)
            .open(dir);
        let Ok(mut file) = opened else {
            return Reserve(None);
        };
        // Written, not sized: a sparse file would hold no room.
        let zeros = vec![0u8; RESERVE_BYTES];
        match file.write_all(&zeros) {
            Ok(()) => Reserve(Some(file)),
            Err(_) => Reserve(None),
        }
    }

    /// True while room is held.
    pub(crate) fn held(&self) -> bool {
        self.0.is_some()
    }

    /// Gives the room back to the file system.
    pub(crate) fn release(&mut self) {
        self.0 = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_held_without_a_name_and_released() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut r = Reserve::hold(&dir.path().join("trace.db"));
        let names = std::fs::read_dir(dir.path()).expect("list").count();
        assert_eq!(names, 0, "the reserve shows in the folder");
        r.release();
        assert!(!r.held());
    }
}
