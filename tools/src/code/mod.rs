//! GPU idle time attributed to code: for every part of the idle split, the
//! code the GPU-driving thread was in during exactly the stretches that
//! part is made of, with the share of the part each explains.
//!
//! This is the layer every finding stands on. A mechanism (a lock, a sync
//! in the loop, a page-fault storm) is a name given to some of this code
//! time when its own evidence covers it; whatever no mechanism covers is
//! still described by the code it ran, so a cause nobody wrote a rule for
//! is reported as what the stacks show rather than as the nearest known
//! mechanism.

pub mod attribute;
pub mod path;

use crate::idle_split::states::{Segment, STATES};
use attribute::{by_slot, Samples};
use ingero_store::thread_samples::ThreadSample;
pub use path::{CodePath, PyFrame};
use serde::Serialize;
use std::collections::BTreeMap;

/// A code group: whose code, and the kind of kernel wait.
type GroupKey = (String, Option<String>);
/// Its weight, stacks, heaviest path and that path's weight.
type Group = (f64, u32, CodePath, f64);

/// Code groups listed per part.
const LISTED: usize = 5;

/// One piece of code and the idle time spent in it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CodeShare {
    /// Whose code: the job's own function, else the library or native one.
    pub owner: String,
    /// The most frequent full path of the group, innermost last.
    pub path: CodePath,
    /// That path in one line.
    pub text: String,
    /// GPU idle ns spent here (off-CPU: exact; on-CPU: from samples).
    pub idle_ns: i64,
    /// Share of the part's idle time.
    pub share_of_part: f64,
    /// Stacks behind it (samples, or off-CPU stretches).
    pub samples: u32,
}

/// The code of one part of the idle split.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PartCode {
    /// The part, as the idle split labels it.
    pub part: String,
    /// The part's key (`off_cpu_blocked`, `host_compute`, ...).
    pub key: String,
    /// The part's idle time, ns (the whole the shares are of).
    pub idle_ns: i64,
    /// Share of the part's idle time for which a stack was at hand.
    pub coverage: f64,
    /// How the time was read: exact off-CPU stretches or sampled.
    pub basis: String,
    /// Idle ns of the part whose stacks are in the kernel's page-fault
    /// path (every stack, not only the groups listed).
    pub in_page_fault_ns: i64,
    /// Largest code groups first.
    pub code: Vec<CodeShare>,
}

impl PartCode {
    /// The largest group, when any stack was read.
    pub fn top(&self) -> Option<&CodeShare> {
        self.code.first()
    }
}

/// Stable key and label of each state slot.
pub fn slot_names(slot: usize) -> (&'static str, &'static str) {
    let p = crate::idle_split::parts::of_slot(slot);
    (p.key, p.label)
}

/// Code of every idle part of one thread, given its state segments, the
/// idle time per segment and state, the parts' final idle ns (by slot,
/// after the split's own corrections) and its stack samples.
pub fn attribute(
    segments: &[Segment],
    per_segment: &[(usize, [f64; STATES])],
    part_idle: &[i64; STATES],
    samples: &[ThreadSample],
) -> Vec<PartCode> {
    let samples = Samples::of(samples);
    if samples.is_empty() {
        return Vec::new();
    }
    let slots = by_slot(segments, per_segment, &samples);
    let mut out = Vec::new();
    for (slot, acc) in slots.into_iter().enumerate() {
        let whole = part_idle[slot];
        if whole <= 0 {
            continue;
        }
        let (key, label) = slot_names(slot);
        let total: f64 = acc.by_path.values().map(|v| v.0).sum();
        let scale = if total > 0.0 {
            whole as f64 / total
        } else {
            0.0
        };
        let fault: f64 = acc
            .by_path
            .iter()
            .filter(|(p, _)| p.in_page_fault())
            .map(|(_, v)| v.0)
            .sum();
        // Group by owner and kernel wait; keep each group's heaviest path.
        let mut groups: BTreeMap<GroupKey, Group> = BTreeMap::new();
        for (p, (w, n)) in acc.by_path {
            let g = groups
                .entry((p.owner(), p.kernel_kind()))
                .or_insert((0.0, 0, p.clone(), -1.0));
            g.0 += w;
            g.1 += n;
            if w > g.3 {
                g.2 = p;
                g.3 = w;
            }
        }
        let mut code: Vec<CodeShare> = groups
            .into_iter()
            .map(|((owner, _), (w, n, p, _))| {
                let idle = (w * scale).round() as i64;
                CodeShare {
                    owner: if p.is_empty() {
                        "no stack recorded".to_string()
                    } else {
                        owner
                    },
                    text: if p.is_empty() {
                        "no stack recorded".to_string()
                    } else {
                        p.text()
                    },
                    path: p,
                    idle_ns: idle,
                    share_of_part: idle as f64 / whole as f64,
                    samples: n,
                }
            })
            .collect();
        code.sort_by(|a, b| b.idle_ns.cmp(&a.idle_ns).then(a.text.cmp(&b.text)));
        code.truncate(LISTED);
        let off = matches!(
            key,
            "off_cpu_preempted" | "waiting_on_workers" | "off_cpu_blocked" | "off_cpu_unknown"
        );
        out.push(PartCode {
            part: label.to_string(),
            key: key.to_string(),
            idle_ns: whole,
            coverage: if off {
                (acc.covered / whole as f64).clamp(0.0, 1.0)
            } else if total > 0.0 {
                1.0
            } else {
                0.0
            },
            basis: if off {
                "exact: the stack of each switch-out, its idle time whole".to_string()
            } else {
                format!(
                    "sampled: {} stacks inside these stretches, weighted by idle time",
                    code.iter().map(|c| c.samples).sum::<u32>()
                )
            },
            in_page_fault_ns: (fault * scale).round() as i64,
            code,
        });
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.idle_ns));
    out
}
