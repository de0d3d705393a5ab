//! Snapshots of a process's executable mappings (`/proc/PID/maps`), taken
//! while it lives, so that its stack addresses can be resolved after it
//! exited: an address becomes (file, file offset), which any later reader
//! of the file can symbolise.

use std::path::PathBuf;

/// One mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// Offset in the file of `start`.
    pub file_offset: u64,
    /// Path as the process sees it (`[vdso]`, `[anon]` and the like for
    /// mappings without a file).
    pub path: String,
}

impl Mapping {
    /// True when the mapping is backed by a file.
    pub fn is_file(&self) -> bool {
        self.path.starts_with('/')
    }

    /// File name shown as a frame's module.
    pub fn module(&self) -> &str {
        let p = self.path.trim_end_matches(" (deleted)");
        p.rsplit('/').next().unwrap_or(p)
    }
}

/// The executable mappings of one process, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct ProcMaps {
    /// Process they belong to.
    pub pid: i32,
    maps: Vec<Mapping>,
}

impl ProcMaps {
    /// Reads `/proc/PID/maps`; `None` when the process is gone.
    pub fn read(pid: i32) -> Option<ProcMaps> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        Some(ProcMaps::parse(pid, &text))
    }

    /// Parses the text of a maps file, keeping executable mappings.
    pub fn parse(pid: i32, text: &str) -> ProcMaps {
        let mut maps: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
        maps.sort_by_key(|m| m.start);
        ProcMaps { pid, maps }
    }

    /// The mapping that holds `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let i = self.maps.partition_point(|m| m.start <= addr);
        let m = self.maps.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// Number of executable mappings.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// True when no executable mapping was found.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// A path to read the file of `m` from this process's point of view:
    /// the path itself when it exists here, else through the process's
    /// root (another mount namespace), else its `map_files` entry (a
    /// deleted file, while the process lives).
    pub fn readable_path(&self, m: &Mapping) -> Option<PathBuf> {
        let plain = PathBuf::from(&m.path);
        if plain.is_file() {
            return Some(plain);
        }
        let rooted = PathBuf::from(format!("/proc/{}/root{}", self.pid, m.path));
        if rooted.is_file() {
            return Some(rooted);
        }
        let mapped = PathBuf::from(format!(
            "/proc/{}/map_files/{:x}-{:x}",
            self.pid, m.start, m.end
        ));
        mapped.exists().then_some(mapped)
    }
}

/// `start-end perms offset dev inode path`, executable mappings only.
fn parse_line(line: &str) -> Option<Mapping> {
    let mut it = line.split_ascii_whitespace();
    let range = it.next()?;
    let perms = it.next()?;
    let offset = it.next()?;
    let _dev = it.next()?;
    let _inode = it.next()?;
    let path: Vec<&str> = it.collect();
    if !perms.contains('x') {
        return None;
    }
    let (a, b) = range.split_once('-')?;
    let path = if path.is_empty() {
        "[anon]".to_string()
    } else {
        path.join(" ")
    };
    Some(Mapping {
        start: u64::from_str_radix(a, 16).ok()?,
        end: u64::from_str_radix(b, 16).ok()?,
        file_offset: u64::from_str_radix(offset, 16).ok()?,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_mapping_of_an_address() {
        let text = "\
55d0c0000000-55d0c0001000 r--p 00000000 08:01 12 /usr/bin/burn
55d0c0001000-55d0c0002000 r-xp 00001000 08:01 12 /usr/bin/burn
7f0000000000-7f0000100000 r-xp 00028000 08:01 13 /lib/libc.so.6
7fff00000000-7fff00002000 r-xp 00000000 00:00 0 [vdso]
7fff10000000-7fff10002000 rwxp 00000000 00:00 0
";
        let maps = ProcMaps::parse(1, text);
        assert_eq!(maps.len(), 4);
        let m = maps.find(0x55d0c0001010).expect("burn");
        assert_eq!((m.module(), m.file_offset), ("burn", 0x1000));
        assert!(maps.find(0x55d0c0000010).is_none(), "not executable");
        assert_eq!(
            maps.find(0x7f0000000fff).map(Mapping::module),
            Some("libc.so.6")
        );
        assert_eq!(maps.find(0x7fff00000001).map(|m| m.is_file()), Some(false));
        assert_eq!(
            maps.find(0x7fff10000001).map(|m| m.path.as_str()),
            Some("[anon]")
        );
        assert!(maps.find(0x1).is_none());
    }
}
