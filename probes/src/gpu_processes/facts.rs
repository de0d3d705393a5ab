//! What /proc says about one listed process: parent, names, owner and
//! start time.

use std::collections::HashMap;
use std::fs;

/// The facts of one process; defaults where /proc did not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Parent pid, 0 when unknown.
    pub ppid: i32,
    /// Kernel command name.
    pub comm: String,
    /// Command-line arguments.
    pub argv: Vec<String>,
    /// User name or uid.
    pub user: String,
    /// Start, seconds since the epoch.
    pub started_epoch_s: Option<i64>,
}

/// User names by uid, from `/etc/passwd`.
pub struct Users {
    names: HashMap<u32, String>,
}

impl Users {
    /// Reads `/etc/passwd` (none known when it cannot be read).
    pub fn load() -> Users {
        let text = fs::read_to_string("/etc/passwd").unwrap_or_default();
        Users::parse(&text)
    }

    /// Users from a passwd text: `name:password:uid:...` per line.
    fn parse(text: &str) -> Users {
        let names = text
            .lines()
            .filter_map(|line| {
                let mut fields = line.split(':');
                let name = fields.next()?;
                let uid = fields.nth(1)?.parse().ok()?;
                (!name.is_empty()).then(|| (uid, name.to_string()))
            })
            .collect();
        Users { names }
    }

    /// The name of `uid`, or the number when it has none here (a user from
    /// a directory service, or a container's).
    pub fn name(&self, uid: u32) -> String {
        self.names
            .get(&uid)
            .cloned()
            .unwrap_or_else(|| uid.to_string())
    }
}

/// Reads the facts of `pid`.
pub fn read(pid: i32, users: &Users) -> Facts {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let (ppid, comm, start_ticks) = parse_stat(&stat).unwrap_or_default();
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let user = real_uid(&status).map_or_else(String::new, |uid| users.name(uid));
    let argv = fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| split_cmdline(&b))
        .unwrap_or_default();
    let started_epoch_s = match (start_ticks, boot_time_s(), ticks_per_second()) {
        (Some(ticks), Some(boot), Some(hz)) => Some(boot + (ticks / hz) as i64),
        _ => None,
    };
    Facts {
        ppid,
        comm,
        argv,
        user,
        started_epoch_s,
    }
}

/// (ppid, comm, start time in clock ticks after boot) from a stat line.
/// `comm` sits in parentheses and may itself hold spaces and parentheses,
/// so fields are counted from the last `)`.
fn parse_stat(text: &str) -> Option<(i32, String, Option<u64>)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); ppid is field 4, starttime field 22.
    let ppid = rest.get(1)?.parse().ok()?;
    let start = rest.get(19).and_then(|s| s.parse().ok());
    Some((ppid, comm, start))
}

/// The real uid from a status text (`Uid:\treal\teffective\t...`).
fn real_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Arguments from a NUL-separated cmdline.
fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&c| c == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// Boot time, epoch seconds, from `/proc/stat`.
fn boot_time_s() -> Option<i64> {
    fs::read_to_string("/proc/stat")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// Clock ticks per second of /proc's start times.
fn ticks_per_second() -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(hz).ok().filter(|h| *h > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (py (worker) 1) S 4000 4242 4000 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 3 0 123456 1000 10";
        assert_eq!(
            parse_stat(line),
            Some((4000, "py (worker) 1".to_string(), Some(123_456)))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn users_and_uids_come_from_passwd_and_status() {
        let users = Users::parse(
            "root:x:0:0:root:/root:/bin/bash\nml:x:1000:1000::/home/ml:/bin/sh\nbroken\n",
        );
        assert_eq!(users.name(1000), "ml");
        assert_eq!(users.name(0), "root");
        assert_eq!(users.name(4321), "4321");
        assert_eq!(
            real_uid("Name:\tpython\nUid:\t1000\t1000\t1000\t1000\n"),
            Some(1000)
        );
        assert_eq!(real_uid("Name:\tpython\n"), None);
    }

    #[test]
    fn this_process_has_a_start_time_an_owner_and_arguments() {
        let me = read(std::process::id() as i32, &Users::load());
        assert!(me.ppid > 0 && !me.comm.is_empty() && !me.argv.is_empty());
        assert!(!me.user.is_empty());
        let started = me.started_epoch_s.unwrap_or_default();
        assert!(started > 1_500_000_000, "{started}");
        assert!(started <= super::super::clock::now_epoch_s());
        assert_eq!(
            split_cmdline(b"python\0train.py\0\0--x\0"),
            ["python", "train.py", "--x"]
        );
    }
}
