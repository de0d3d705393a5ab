//! What one run is, for a comparison: its window, loop length, steps and
//! the main GPU process whose idle time the findings share, so every figure
//! can be normalised per second and per step when the runs differ in length.

use super::noise::Spread;
use crate::explain::Report;
use crate::idle::ProcessIdle;
use serde::Serialize;

/// One run as the comparison sees it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RunInfo {
    /// Database file.
    pub path: String,
    /// Window start, seconds after the capture began.
    pub window_start_s: f64,
    /// Window length, seconds.
    pub window_s: f64,
    /// Command line of the main GPU process (its command name when the
    /// file has no command line), empty without one.
    pub main_command: String,
    /// The main GPU process's loop, first to last CUDA call, seconds.
    pub loop_s: f64,
    /// Steps in the loop (loop over step period), when the loop has a period.
    pub steps: Option<f64>,
    /// Step period, ns (median time between synchronisations).
    pub step_period_ns: Option<i64>,
    /// GPU idle inside the loop, ns (the whole findings' shares are of).
    pub loop_idle_ns: i64,
    /// How much the idle share varies within this run, chunk to chunk.
    pub spread: Spread,
}

/// The main GPU process of a report: the breakdown's main pid, else the
/// GPU-driving process with the most CUDA time.
pub fn main_idle(report: &Report) -> Option<&ProcessIdle> {
    let idle = &report.chains.gpu_idle;
    report
        .processes
        .main_pid
        .and_then(|pid| idle.iter().find(|p| p.pid == pid))
        .or_else(|| idle.first())
}

impl RunInfo {
    /// The run's facts, with `command` the main process's command line.
    pub fn of(report: &Report, command: String) -> RunInfo {
        let main = main_idle(report);
        RunInfo {
            path: report.capture.path.clone(),
            window_start_s: report.window.start_offset_s,
            window_s: report.window.duration_s,
            main_command: command,
            loop_s: main.map_or(0.0, |p| p.active_span_ns as f64 / 1e9),
            steps: main.and_then(|p| p.per_step.as_ref()).map(|s| s.steps),
            step_period_ns: main.and_then(|p| p.step_period_ns),
            loop_idle_ns: main.map_or(0, ProcessIdle::loop_idle_ns),
            spread: main.map(Spread::of).unwrap_or_default(),
        }
    }

    /// `ns` of the loop as a share of the loop's wall time (idle seconds
    /// per second of loop), `None` without a loop.
    pub fn per_loop_s(&self, ns: i64) -> Option<f64> {
        super::pair::ratio(ns as f64 / 1e9, self.loop_s)
    }

    /// `ns` per step of the loop, `None` without steps.
    pub fn per_step(&self, ns: i64) -> Option<f64> {
        self.steps.and_then(|s| super::pair::ratio(ns as f64, s))
    }

    /// `count` per second of the window.
    pub fn per_window_s(&self, count: f64) -> Option<f64> {
        super::pair::ratio(count, self.window_s)
    }
}
