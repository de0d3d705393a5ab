//! Ways to look at an ingero trace instead of reading it.
//!
//! [`html`] writes one self-contained HTML page (timeline per process with
//! the causal chains shaded on it, GPU-idle breakdown, per-process table,
//! latency histograms, and a [`flame`] graph of stack samples); [`svg`] draws a time window as an SVG picture for
//! assistants; [`perfetto`] converts the trace to Chrome trace-event JSON for
//! ui.perfetto.dev and chrome://tracing; [`compare`] adds the answer to
//! "did the fix work?" when a baseline run is given; [`otlp`] sends it to an
//! OpenTelemetry backend. All of them start from a [`data::ReportData`] or a
//! loaded [`ingero_tools::dataset::Dataset`].

#![warn(missing_docs)]

pub mod compare;
pub mod data;
pub mod error;
pub mod flame;
pub mod histogram;
pub mod html;
pub mod otlp;
pub mod perfetto;
pub mod svg;

pub use data::ReportData;
pub use error::{ReportError, Result};
