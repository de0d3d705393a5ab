//! Export to an OpenTelemetry backend over OTLP/HTTP with JSON bodies:
//! spans for CUDA calls and off-CPU intervals ([`traces`]), sums and gauges
//! for the per-bucket aggregates and system samples ([`metrics`]). Fleets
//! then see GPU starvation in the tracing and metrics stack they already run.

pub mod attrs;
pub mod http;
pub mod identity;
pub mod ids;
pub mod metrics;
pub mod proto;
pub mod traces;

pub use identity::{Identity, Ranks};

use crate::error::{ReportError, Result};
use ingero_tools::chains::ChainReport;
use ingero_tools::dataset::Dataset;
use serde::Serialize;
use serde_json::{json, Value};
use std::time::Duration;

/// The OTLP/HTTP port receivers listen on by default.
pub const DEFAULT_ENDPOINT: &str = "http://127.0.0.1:4318";

/// How request bodies are encoded (the values of OpenTelemetry's
/// `OTEL_EXPORTER_OTLP_PROTOCOL` for HTTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// `http/json`: the protobuf JSON mapping, `application/json`.
    #[default]
    Json,
    /// `http/protobuf`: binary protobuf, `application/x-protobuf` (the one
    /// encoding every OTLP receiver takes).
    Protobuf,
}

impl Protocol {
    /// The HTTP `Content-Type` of its bodies.
    pub fn content_type(self) -> &'static str {
        match self {
            Protocol::Json => "application/json",
            Protocol::Protobuf => "application/x-protobuf",
        }
    }
}

/// Where and how to export.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpOptions {
    /// Receiver base URL; `/v1/traces` and `/v1/metrics` are appended.
    pub endpoint: String,
    /// `service.name` resource attribute.
    pub service_name: String,
    /// Most spans (or metric data points) per request.
    pub batch: usize,
    /// Time allowed for each request.
    pub timeout: Duration,
    /// Body encoding.
    pub protocol: Protocol,
    /// Send spans (to `/v1/traces`).
    pub traces: bool,
    /// Send metrics (to `/v1/metrics`); a metrics-only store takes no spans.
    pub metrics: bool,
}

impl Default for OtlpOptions {
    fn default() -> OtlpOptions {
        OtlpOptions {
            endpoint: DEFAULT_ENDPOINT.to_string(),
            service_name: "ingero".to_string(),
            batch: 2000,
            timeout: Duration::from_secs(10),
            protocol: Protocol::Json,
            traces: true,
            metrics: true,
        }
    }
}

/// What an export sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExportSummary {
    /// URL the traces went to.
    pub traces_url: String,
    /// Trace requests sent.
    pub trace_requests: usize,
    /// Spans sent.
    pub spans: usize,
    /// URL the metrics went to.
    pub metrics_url: String,
    /// Metric requests sent.
    pub metric_requests: usize,
    /// Metric data points sent.
    pub data_points: usize,
}

/// The traces and metrics URLs for a base endpoint, checked.
pub fn urls(endpoint: &str) -> Result<(String, String)> {
    let base = endpoint.trim().trim_end_matches('/');
    let rest = if let Some(r) = base.strip_prefix("http://") {
        r
    } else if let Some(r) = base.strip_prefix("https://") {
        if !cfg!(feature = "tls") {
            return Err(ReportError::BadArgument(format!(
                "endpoint {endpoint}: https needs ingero built with the `tls` feature; use an http:// receiver (e.g. a local collector)"
            )));
        }
        r
    } else {
        return Err(ReportError::BadArgument(format!(
            "endpoint {endpoint:?} must start with http:// (e.g. {DEFAULT_ENDPOINT})"
        )));
    };
    if rest.is_empty() || rest.starts_with('/') || rest.contains(char::is_whitespace) {
        return Err(ReportError::BadArgument(format!(
            "endpoint {endpoint:?} has no host"
        )));
    }
    Ok((format!("{base}/v1/traces"), format!("{base}/v1/metrics")))
}

/// Sends the dataset's spans, then its metrics, to the receiver in `opts`,
/// each resource naming the node and ranks `who` gives its processes.
pub fn export(
    ds: &Dataset,
    chains: &ChainReport,
    who: &Identity,
    opts: &OtlpOptions,
) -> Result<ExportSummary> {
    let (traces_url, metrics_url) = urls(&opts.endpoint)?;
    let trace_bodies = if opts.traces {
        traces::trace_requests(ds, chains, who, opts)
    } else {
        Vec::new()
    };
    let metric_bodies = if opts.metrics {
        metrics::metric_requests(ds, who, opts)
    } else {
        Vec::new()
    };
    let sender = http::Sender::new(opts.timeout);
    let send = |url: &str, request: proto::Request, body: &Value| -> Result<()> {
        let bytes = match opts.protocol {
            Protocol::Json => serde_json::to_vec(body)?,
            Protocol::Protobuf => proto::encode(request, body).map_err(ReportError::Protobuf)?,
        };
        sender.post(url, opts.protocol.content_type(), &bytes)
    };
    for body in &trace_bodies {
        send(&traces_url, proto::Request::Traces, body)?;
    }
    for body in &metric_bodies {
        send(&metrics_url, proto::Request::Metrics, body)?;
    }
    Ok(ExportSummary {
        spans: traces::span_count(&trace_bodies),
        trace_requests: trace_bodies.len(),
        traces_url,
        data_points: metrics::point_count(&metric_bodies),
        metric_requests: metric_bodies.len(),
        metrics_url,
    })
}

/// Resource attributes shared by every request of `node`.
fn resource(ds: &Dataset, opts: &OtlpOptions, node: &str) -> Vec<Value> {
    let mut attrs = vec![
        attrs::string("service.name", opts.service_name.clone()),
        attrs::string("telemetry.sdk.name", "ingero"),
        attrs::string("telemetry.sdk.version", env!("CARGO_PKG_VERSION")),
        attrs::int("ingero.capture.start_ns", ds.span.start_ns),
    ];
    attrs.extend(Identity::node_attributes(node));
    if !ds.gpu_model.is_empty() {
        attrs.push(attrs::string("ingero.gpu.model", ds.gpu_model.clone()));
    }
    if ds.cpu_cores > 0 {
        attrs.push(attrs::int("host.cpu.count", ds.cpu_cores));
    }
    attrs
}

/// The instrumentation scope naming this exporter.
fn scope() -> Value {
    json!({ "name": "ingero", "version": env!("CARGO_PKG_VERSION") })
}
