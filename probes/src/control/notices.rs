//! The poller's lifecycle notices (a process seen, forked, exec'd, exited,
//! or mapping new code), turned into process rows for the database and
//! into the processes the samplers follow.

use super::Control;
use crate::poller::Notice;
use crate::procs;
use crate::writer::WriterMsg;
use ingero_store::ProcessInfo;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// What the control thread knows of the traced processes: which it has
/// seen and which have exited (at the stop, the others get a last row),
/// and which to look at for new libraries, from when.
#[derive(Debug, Default)]
pub(super) struct SeenProcesses {
    /// Processes seen in events or forked.
    pub(super) known: HashSet<i32>,
    /// Processes whose exit was seen.
    pub(super) exited: HashSet<i32>,
    /// Processes whose memory map to read for new libraries, and when.
    rescans: BTreeMap<i32, Instant>,
}

impl SeenProcesses {
    /// Takes the processes whose rescan is due at `now`.
    pub(super) fn due_rescans(&mut self, now: Instant) -> Vec<i32> {
        let due: Vec<i32> = self
            .rescans
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(p, _)| *p)
            .collect();
        for pid in &due {
            self.rescans.remove(pid);
        }
        due
    }
}

impl Control {
    /// Acts on one notice from the poller.
    pub(super) fn on_notice(&mut self, n: Notice, seen: &mut SeenProcesses) {
        match n {
            Notice::Seen { pid, ts_ns } => self.on_seen(pid, ts_ns, seen),
            Notice::Fork {
                parent,
                child,
                comm,
                ts_ns,
            } => self.on_fork(parent, child, comm, ts_ns, seen),
            Notice::Exec { pid, comm, ts_ns } => self.on_exec(pid, comm, ts_ns, seen),
            Notice::Exit { pid, ts_ns } => self.on_exit(pid, ts_ns, seen),
            Notice::Rescan { pid } => {
                seen.rescans.entry(pid).or_insert_with(Instant::now);
            }
        }
    }

    /// A process first seen in events: followed from now on, and recorded
    /// with what `/proc` says of it (bare when it is gone already).
    fn on_seen(&mut self, pid: i32, ts_ns: i64, seen: &mut SeenProcesses) {
        seen.known.insert(pid);
        if let Some(l) = &self.threads.live_pids {
            l.insert(pid);
        }
        self.shared.traced.insert(pid);
        let info = procs::process_info(pid, ts_ns).unwrap_or(ProcessInfo {
            pid,
            first_seen_ns: ts_ns,
            last_seen_ns: ts_ns,
            ..ProcessInfo::default()
        });
        self.send(WriterMsg::Process(info));
        if let Some(place) = procs::job_place(pid) {
            self.send(WriterMsg::Place(pid, place));
        }
    }

    /// A traced process forked: the child is followed and recorded.
    fn on_fork(
        &mut self,
        parent: i32,
        child: i32,
        comm: String,
        ts_ns: i64,
        seen: &mut SeenProcesses,
    ) {
        seen.known.insert(child);
        self.shared.traced.insert(child);
        if let Some(l) = &self.threads.live_pids {
            l.insert(child);
        }
        self.send(WriterMsg::Process(ProcessInfo {
            pid: child,
            ppid: parent,
            comm,
            cmdline: procs::cmdline(child),
            first_seen_ns: ts_ns,
            last_seen_ns: ts_ns,
        }));
    }

    /// A traced process exec'd: it gets its new name and command line, and
    /// its memory map is read again for the libraries of the new program.
    fn on_exec(&mut self, pid: i32, comm: String, ts_ns: i64, seen: &mut SeenProcesses) {
        if let Some(l) = &self.threads.live_pids {
            l.exec(pid);
        }
        let ppid = procs::process_info(pid, ts_ns).map(|p| p.ppid).unwrap_or(0);
        self.send(WriterMsg::Process(ProcessInfo {
            pid,
            ppid,
            comm,
            cmdline: procs::cmdline(pid),
            first_seen_ns: ts_ns,
            last_seen_ns: ts_ns,
        }));
        if let Some(place) = procs::job_place(pid) {
            self.send(WriterMsg::Place(pid, place));
        }
        seen.rescans.insert(pid, Instant::now());
    }

    /// A traced process exited: its last row is stamped now.
    fn on_exit(&mut self, pid: i32, ts_ns: i64, seen: &mut SeenProcesses) {
        seen.exited.insert(pid);
        if let Some(l) = &self.threads.live_pids {
            l.remove(pid);
        }
        self.send(WriterMsg::Process(ProcessInfo {
            pid,
            first_seen_ns: ts_ns,
            last_seen_ns: ts_ns,
            ..ProcessInfo::default()
        }));
    }
}
