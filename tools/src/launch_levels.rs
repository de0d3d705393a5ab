//! What the runtime launch functions' counts cover.
//!
//! A capture stops probing the CUDA runtime's launch functions once every
//! runtime launch it has seen reached the driver's (table
//! `launch_level_changes`); from then on a runtime launch is counted only
//! under the driver's launch functions, as an outer call. Every launch is
//! still counted once in the launch class, but `cudaLaunchKernel`'s own
//! count covers only the stretches in which it was probed. This module
//! turns the recorded changes into the stretches without the runtime level
//! and the words a reader needs beside those counts.

use crate::dataset::Dataset;
use ingero_store::LaunchLevelChange;

/// A stretch in which the runtime launch functions were not probed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnprobedStretch {
    /// Session of the stretch.
    pub session_id: i64,
    /// When the runtime launch probes went, epoch ns.
    pub from_ns: i64,
    /// When they came back, epoch ns; `None`: not before the session ended.
    pub to_ns: Option<i64>,
    /// Runtime launches the capture had probed when they went.
    pub runtime_launches: i64,
}

/// The stretches without runtime launch probes that overlap `[lo_ns, hi_ns]`,
/// by session and time. `changes` must be ordered by session and time, as
/// the store reads them.
pub fn unprobed_stretches(
    changes: &[LaunchLevelChange],
    lo_ns: i64,
    hi_ns: i64,
) -> Vec<UnprobedStretch> {
    let mut out = Vec::new();
    let mut open: Option<UnprobedStretch> = None;
    for c in changes {
        if let Some(s) = open.filter(|s| s.session_id != c.session_id) {
            out.push(s);
            open = None;
        }
        match (c.runtime_probed, open.as_mut()) {
            (false, None) => {
                open = Some(UnprobedStretch {
                    session_id: c.session_id,
                    from_ns: c.ts_ns,
                    to_ns: None,
                    runtime_launches: c.runtime_launches,
                });
            }
            (true, Some(s)) => {
                s.to_ns = Some(c.ts_ns);
                out.push(*s);
                open = None;
            }
            // A second "went" without a "came back", or a "came back"
            // without a "went": nothing changes.
            _ => {}
        }
    }
    out.extend(open);
    out.retain(|s| s.from_ns <= hi_ns && s.to_ns.is_none_or(|t| t >= lo_ns));
    out
}

/// The stretches of the dataset's window.
pub fn stretches_of(ds: &Dataset) -> Vec<UnprobedStretch> {
    unprobed_stretches(&ds.launch_level_changes, ds.window.lo_ns, ds.window.hi_ns)
}

/// `+3.54 s`: an instant as seconds after the capture began.
fn offset(ds: &Dataset, ts_ns: i64) -> String {
    format!("+{:.2} s", (ts_ns - ds.span.start_ns) as f64 / 1e9)
}

/// The stretches in words: "from +3.54 s to the end of the capture; ...".
fn stretches_text(ds: &Dataset, stretches: &[UnprobedStretch]) -> String {
    stretches
        .iter()
        .map(|s| match s.to_ns {
            Some(t) => format!("from {} to {}", offset(ds, s.from_ns), offset(ds, t)),
            None => format!("from {} to the end of the capture", offset(ds, s.from_ns)),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The caveat for a report of per-function counts, `None` when the runtime
/// launch functions were probed throughout the window.
pub fn note(ds: &Dataset) -> Option<String> {
    let stretches = stretches_of(ds);
    let first = stretches.first()?;
    Some(format!(
        "Launch levels (table launch_level_changes): the runtime's launch functions \
         (cudaLaunchKernel and its variants) were not probed {}. The capture stops probing them \
         once it has seen at least 1,000 runtime launches and 99% or more of them reached the \
         driver's launch ({} runtime launches probed when they first went). While they were not \
         probed, a runtime launch is counted only under cuLaunchKernel and its variants, as an \
         outer call: the runtime functions' counts cover the probed stretches only and are not \
         the number of launches made through the runtime. Count launches as the outer calls of \
         the launch class, both levels together: each launch is there once.",
        stretches_text(ds, &stretches),
        crate::format::count(first.runtime_launches),
    ))
}

/// What a runtime launch function's basis adds, `None` when the runtime
/// level was probed throughout the window.
pub fn runtime_basis(ds: &Dataset) -> Option<String> {
    let stretches = stretches_of(ds);
    (!stretches.is_empty()).then(|| {
        format!(
            "; not probed {} (launch_level_changes): the runtime launches of those stretches are \
             counted under the driver's launch functions, as outer calls",
            stretches_text(ds, &stretches)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(session_id: i64, ts_ns: i64, runtime_probed: bool) -> LaunchLevelChange {
        LaunchLevelChange {
            session_id,
            ts_ns,
            runtime_probed,
            runtime_launches: ts_ns * 10,
        }
    }

    #[test]
    fn a_stretch_runs_from_a_detach_to_the_next_attach_or_the_end_of_its_session() {
        let changes = [
            change(1, 100, false),
            change(1, 300, true),
            change(1, 400, false),
            change(2, 50, false),
        ];
        let all = unprobed_stretches(&changes, 0, 1_000);
        let spans: Vec<(i64, i64, Option<i64>)> = all
            .iter()
            .map(|s| (s.session_id, s.from_ns, s.to_ns))
            .collect();
        assert_eq!(spans, [(1, 100, Some(300)), (1, 400, None), (2, 50, None)]);
        assert_eq!(all[0].runtime_launches, 1_000);
    }

    #[test]
    fn only_the_stretches_that_overlap_the_window_count() {
        let changes = [
            change(1, 100, false),
            change(1, 300, true),
            change(1, 400, false),
        ];
        let within = |lo, hi| -> Vec<i64> {
            unprobed_stretches(&changes, lo, hi)
                .iter()
                .map(|s| s.from_ns)
                .collect()
        };
        assert_eq!(within(310, 390), Vec::<i64>::new(), "probed throughout");
        assert_eq!(within(0, 99), Vec::<i64>::new(), "before the first detach");
        assert_eq!(within(200, 250), [100], "inside the first stretch");
        assert_eq!(
            within(350, 10_000),
            [400],
            "the last stretch runs to the end"
        );
        assert!(unprobed_stretches(&[], 0, 10).is_empty());
    }

    #[test]
    fn a_repeated_change_does_not_open_or_close_a_stretch() {
        let changes = [
            change(1, 10, true),
            change(1, 100, false),
            change(1, 150, false),
            change(1, 300, true),
        ];
        let s = unprobed_stretches(&changes, 0, 1_000);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].from_ns, s[0].to_ns), (100, Some(300)));
    }
}
