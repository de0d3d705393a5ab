//! A process named instead of numbered: which GPU process a name means,
//! and a refusal listing the candidates when it means several.
//!
//! A name matches a process's kernel command name (`comm`), its program's
//! file name, or the file name of one of its arguments (the script of
//! `python train.py`). Processes a match forked (DataLoader workers, which
//! map the CUDA library too) belong to it: tracing a process follows its
//! children, so they do not make the name ambiguous.

use super::GpuProcess;
use crate::procs;
use std::collections::HashSet;
use std::path::Path;

/// How far up the parent chain a match looks for another match.
const MAX_DEPTH: usize = 64;

/// A process a name matched, as a refusal lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its pid.
    pub pid: i32,
    /// Its command line (or `comm` when that is unreadable).
    pub command: String,
}

/// Why a name does not pick one process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// The name was empty or blank.
    #[error("the process name is empty: give a command, program or script name, or a pid")]
    Empty,
    /// No GPU process has that name.
    #[error("no GPU process is named {name:?}; GPU processes now: {}", listing(.available))]
    NoMatch {
        /// The name asked for.
        name: String,
        /// The GPU processes there are.
        available: Vec<Candidate>,
    },
    /// Several unrelated GPU processes have that name.
    #[error("{name:?} matches {} separate GPU processes: {}; give the pid of the one to trace", .candidates.len(), listing(.candidates))]
    Ambiguous {
        /// The name asked for.
        name: String,
        /// Each matching process (without the ones another match forked).
        candidates: Vec<Candidate>,
    },
}

fn listing(candidates: &[Candidate]) -> String {
    if candidates.is_empty() {
        return "none".to_string();
    }
    candidates
        .iter()
        .map(|c| format!("pid {} ({})", c.pid, c.command))
        .collect::<Vec<_>>()
        .join(", ")
}

fn candidate(p: &GpuProcess) -> Candidate {
    let command = if p.cmdline.is_empty() {
        p.comm.clone()
    } else {
        p.cmdline.clone()
    };
    Candidate {
        pid: p.pid,
        command,
    }
}

/// True when `name` is one of the names of `p`.
pub fn is_named(p: &GpuProcess, name: &str) -> bool {
    let file_name = |arg: &String| {
        Path::new(arg)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n == name)
    };
    p.comm == name || p.argv.iter().any(file_name)
}

/// The pid `name` stands for among `processes`: the one match, or the one
/// match every other match descends from.
pub fn match_name(processes: &[GpuProcess], name: &str) -> Result<i32, NameError> {
    match_name_with(processes, name, procs::parent)
}

/// [`match_name`] with the parent lookup given (tests build process trees).
fn match_name_with(
    processes: &[GpuProcess],
    name: &str,
    parent: impl Fn(i32) -> Option<i32>,
) -> Result<i32, NameError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    let matches: Vec<&GpuProcess> = processes.iter().filter(|p| is_named(p, name)).collect();
    let pids: HashSet<i32> = matches.iter().map(|p| p.pid).collect();
    let roots: Vec<&GpuProcess> = matches
        .iter()
        .copied()
        .filter(|p| !has_ancestor_in(p, &pids, &parent))
        .collect();
    match roots.as_slice() {
        [one] => Ok(one.pid),
        [] => Err(NameError::NoMatch {
            name: name.to_string(),
            available: processes.iter().map(candidate).collect(),
        }),
        several => Err(NameError::Ambiguous {
            name: name.to_string(),
            candidates: several.iter().map(|p| candidate(p)).collect(),
        }),
    }
}

/// True when a parent, grandparent... of `p` is in `pids`.
fn has_ancestor_in(
    p: &GpuProcess,
    pids: &HashSet<i32>,
    parent: &impl Fn(i32) -> Option<i32>,
) -> bool {
    let mut at = p.ppid;
    for _ in 0..MAX_DEPTH {
        if at <= 1 {
            return false;
        }
        if pids.contains(&at) {
            return true;
        }
        match parent(at) {
            Some(up) if up != at => at = up,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: i32, ppid: i32, comm: &str, argv: &[&str]) -> GpuProcess {
        GpuProcess {
            pid,
            ppid,
            comm: comm.to_string(),
            cmdline: argv.join(" "),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            user: "ml".into(),
            started_at: None,
            running_s: None,
            gpu_memory_bytes: None,
            gpus: Vec::new(),
            libcuda: None,
        }
    }

    fn no_parent(_: i32) -> Option<i32> {
        None
    }

    #[test]
    fn a_script_program_or_comm_name_picks_its_process() {
        let list = [
            process(
                100,
                1,
                "python3",
                &["/usr/bin/python3", "train.py", "--epochs", "3"],
            ),
            process(200, 1, "vllm", &["/venv/bin/vllm", "serve", "m"]),
        ];
        assert_eq!(match_name_with(&list, "train.py", no_parent), Ok(100));
        assert_eq!(match_name_with(&list, "vllm", no_parent), Ok(200));
        assert_eq!(match_name_with(&list, " python3 ", no_parent), Ok(100));
        assert_eq!(
            match_name_with(&list, "   ", no_parent),
            Err(NameError::Empty)
        );
    }

    #[test]
    fn workers_forked_by_the_match_do_not_make_it_ambiguous() {
        let list = [
            process(100, 1, "python3", &["python3", "train.py"]),
            process(101, 100, "python3", &["python3", "train.py"]),
            process(103, 102, "python3", &["python3", "train.py"]),
        ];
        // 103's parent 102 is not a GPU process; its parent is 100.
        let parent = |pid: i32| (pid == 102).then_some(100);
        assert_eq!(match_name_with(&list, "train.py", parent), Ok(100));
    }

    #[test]
    fn two_unrelated_jobs_are_refused_with_both_listed() {
        let list = [
            process(100, 1, "python3", &["python3", "train.py", "--lr", "1"]),
            process(300, 1, "python3", &["python3", "train.py", "--lr", "2"]),
        ];
        let e = match_name_with(&list, "train.py", no_parent).err();
        let Some(e) = e else {
            panic!("an ambiguous name was accepted");
        };
        assert_eq!(
            e.to_string(),
            "\"train.py\" matches 2 separate GPU processes: pid 100 (python3 train.py --lr 1), \
             pid 300 (python3 train.py --lr 2); give the pid of the one to trace"
        );
    }

    #[test]
    fn an_unknown_name_lists_what_there_is() {
        let list = [process(100, 1, "python3", &[])];
        let e = match_name_with(&list, "train", no_parent).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("no GPU process is named \"train\"; GPU processes now: pid 100 (python3)")
        );
        let e = match_name_with(&[], "train", no_parent).err();
        assert!(e.is_some_and(|e| e.to_string().ends_with("GPU processes now: none")));
    }
}
