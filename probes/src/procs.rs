//! Process facts from /proc: identity for the `processes` table, existence,
//! and the descendants of a target.

use ingero_store::ProcessInfo;
use std::collections::HashMap;
use std::fs;

/// (ppid, comm) from /proc/PID/stat; comm may contain spaces and parentheses.
fn stat(pid: i32) -> Option<(i32, String)> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let ppid = rest.get(1)?.parse().ok()?;
    Some((ppid, comm))
}

/// The parent of `pid`, while it exists.
pub fn parent(pid: i32) -> Option<i32> {
    stat(pid).map(|(ppid, _)| ppid)
}

/// Command line with NULs turned into spaces; empty for kernel threads.
pub fn cmdline(pid: i32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            let s: Vec<String> = b
                .split(|&c| c == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            s.join(" ")
        })
        .unwrap_or_default()
}

/// Where `pid` sits in a distributed job, from its environment
/// (`/proc/PID/environ`: the environment it was started or exec'd with).
pub fn job_place(pid: i32) -> Option<ingero_store::JobPlace> {
    let bytes = fs::read(format!("/proc/{pid}/environ")).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    ingero_store::JobPlace::from_env(text.split('\0').filter_map(|kv| kv.split_once('=')))
}

/// What /proc says about `pid` right now, seen at `ts_ns`.
pub fn process_info(pid: i32, ts_ns: i64) -> Option<ProcessInfo> {
    let (ppid, comm) = stat(pid)?;
    Some(ProcessInfo {
        pid,
        ppid,
        comm,
        cmdline: cmdline(pid),
        first_seen_ns: ts_ns,
        last_seen_ns: ts_ns,
    })
}

/// True while `pid` exists (zombies included).
pub fn exists(pid: i32) -> bool {
    pid > 0 && fs::metadata(format!("/proc/{pid}")).is_ok()
}

/// Every process id currently in /proc.
pub fn all_pids() -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// `root` and all its live descendants.
pub fn tree(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for pid in all_pids() {
        if let Some((ppid, _)) = stat(pid) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        if let Some(kids) = children.get(&out[i]) {
            out.extend(kids.iter().copied().filter(|k| *k != root));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_own_process() {
        let me = std::process::id() as i32;
        let info = process_info(me, 5).expect("self");
        assert!(info.ppid > 0 && !info.comm.is_empty() && !info.cmdline.is_empty());
        assert!(exists(me) && !exists(-1));
        assert_eq!(tree(me)[0], me);
    }
}
