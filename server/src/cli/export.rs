//! `ingero export`: hands a trace to the tools people already use, as
//! Chrome/Perfetto trace-event JSON or to an OpenTelemetry receiver (OTLP/HTTP).

use crate::cli::report::into_cli;
use anyhow::{Context, Result};
use ingero_report::otlp::{self, Identity, OtlpOptions, Protocol};
use ingero_report::perfetto;
use ingero_store::{TimeWindow, TraceDb};
use ingero_tools::chains::chains_of;
use ingero_tools::dataset::Dataset;
use ingero_tools::{Scope, ToolError};
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Duration;

/// Output formats of `ingero export`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing (needs --out).
    Perfetto,
    /// OTLP/HTTP with JSON bodies to a receiver (see --endpoint).
    Otlp,
    /// Folded stacks (`root;...;leaf weight`, weight in microseconds) for
    /// flamegraph.pl, inferno and speedscope: to --out, or stdout without it.
    Folded,
}

/// OTLP body encodings, named as `OTEL_EXPORTER_OTLP_PROTOCOL` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OtlpProtocol {
    /// JSON (`application/json`).
    #[value(name = "http/json")]
    HttpJson,
    /// Binary protobuf (`application/x-protobuf`), e.g. for VictoriaMetrics.
    #[value(name = "http/protobuf")]
    HttpProtobuf,
}

/// What an OTLP export sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Signal {
    /// Spans, to /v1/traces.
    Traces,
    /// Metrics, to /v1/metrics.
    Metrics,
}

/// Arguments of `ingero export`.
#[derive(clap::Args)]
pub struct Args {
    /// What to produce.
    #[arg(long, value_enum)]
    format: Format,
    /// Trace database (ingero or Ingero format).
    #[arg(long)]
    db: PathBuf,
    /// Output file (perfetto).
    #[arg(long)]
    out: Option<PathBuf>,
    /// OTLP/HTTP receiver base URL (otlp); /v1/traces and /v1/metrics are appended.
    #[arg(long, default_value = otlp::DEFAULT_ENDPOINT)]
    endpoint: String,
    /// service.name resource attribute (otlp).
    #[arg(long, default_value = "ingero")]
    service_name: String,
    /// OTLP body encoding.
    #[arg(long, value_enum, default_value = "http/json")]
    protocol: OtlpProtocol,
    /// OTLP signals to send (comma-separated); a metrics store takes
    /// `--signals metrics`.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "traces,metrics"
    )]
    signals: Vec<Signal>,
    /// Node name sent as host.name and service.instance.id (otlp), instead of
    /// the capture's host name (and a merged file's per-process nodes).
    #[arg(long, value_name = "NAME")]
    node: Option<String>,
    /// Seconds allowed for each OTLP request.
    #[arg(long, default_value_t = 10)]
    timeout_s: u64,
    /// Only the last D of the capture (e.g. 30s, 5m), relative to its end.
    #[arg(long, value_name = "D")]
    since: Option<String>,
    /// Only up to D before the capture's end.
    #[arg(long, value_name = "D")]
    until: Option<String>,
    /// Only this process (and its children).
    #[arg(long)]
    pid: Option<i32>,
    /// Folded stacks: only this thread.
    #[arg(long)]
    tid: Option<i32>,
    /// Folded stacks: which samples (python, native, on_cpu, off_cpu,
    /// call_site); Python where the trace has them, else native.
    #[arg(long, value_name = "SET")]
    stacks: Option<String>,
    /// Folded stacks: only samples of this category (on_cpu, in_cuda,
    /// blocked, preempted).
    #[arg(long, value_name = "CATEGORY")]
    category: Option<String>,
}

/// Runs the subcommand.
pub fn run(args: Args) -> Result<()> {
    let out = match (args.format, &args.out) {
        (Format::Perfetto, None) => {
            return Err(ToolError::BadArgument("--format perfetto needs --out FILE".into()).into())
        }
        (_, out) => out.clone(),
    };
    let opts = OtlpOptions {
        endpoint: args.endpoint.clone(),
        service_name: args.service_name.clone(),
        timeout: Duration::from_secs(args.timeout_s.max(1)),
        protocol: match args.protocol {
            OtlpProtocol::HttpJson => Protocol::Json,
            OtlpProtocol::HttpProtobuf => Protocol::Protobuf,
        },
        traces: args.signals.contains(&Signal::Traces),
        metrics: args.signals.contains(&Signal::Metrics),
        ..OtlpOptions::default()
    };
    if args.node.as_deref().is_some_and(|n| n.trim().is_empty()) {
        return Err(ToolError::BadArgument("--node needs a non-empty name".into()).into());
    }
    if args.format == Format::Otlp {
        // Reject a malformed endpoint before reading the database.
        otlp::urls(&opts.endpoint).map_err(into_cli)?;
    }
    let window = TimeWindow::parse(args.since.as_deref(), args.until.as_deref())?;
    let db = TraceDb::open(&args.db)?;
    analyse(&db, args, window, out, opts).map_err(|e| super::diagnosed(&db, e))
}

/// The subcommand's work on the opened file; its errors go through
/// [`super::diagnosed`], which names a damaged value a read stopped on.
fn analyse(
    db: &TraceDb,
    args: Args,
    window: TimeWindow,
    out: Option<PathBuf>,
    opts: OtlpOptions,
) -> Result<()> {
    let scope = Scope {
        window,
        pid: args.pid,
    };
    if args.format == Format::Folded {
        return export_folded(db, scope, &args, out);
    }
    let ds = Dataset::load(db, &scope)?;
    let chains = chains_of(&ds);
    match args.format {
        Format::Perfetto => {
            let Some(path) = out else {
                return Err(
                    crate::exit::BadArgument("--format perfetto needs --out FILE".into()).into(),
                );
            };
            let file = ingero_store::safe_open::create_output(&path)?;
            let mut w = BufWriter::new(file);
            perfetto::write_trace(&ds, &chains, &mut w)
                .map_err(into_cli)
                .with_context(|| format!("writing {}", path.display()))?;
            w.flush()
                .with_context(|| format!("writing {}", path.display()))?;
            println!(
                "wrote {} ({} CUDA calls, {} causal chains); open it in ui.perfetto.dev or chrome://tracing",
                path.display(),
                ds.calls.len(),
                chains.chains.len()
            );
        }
        Format::Folded => {}
        Format::Otlp => {
            let who = Identity::load(db, args.node.as_deref()).map_err(into_cli)?;
            let sent = otlp::export(&ds, &chains, &who, &opts).map_err(into_cli)?;
            let mut parts = Vec::new();
            if opts.traces {
                parts.push(format!(
                    "{} spans in {} requests to {}",
                    sent.spans, sent.trace_requests, sent.traces_url
                ));
            }
            if opts.metrics {
                parts.push(format!(
                    "{} metric points in {} requests to {}",
                    sent.data_points, sent.metric_requests, sent.metrics_url
                ));
            }
            let node = who.capture_node();
            let node = if node.is_empty() { "(none)" } else { node };
            println!("sent {} (node {node})", parts.join(" and "));
        }
    }
    Ok(())
}

/// `--format folded`: the stack samples of the scope as folded stacks.
fn export_folded(db: &TraceDb, scope: Scope, args: &Args, out: Option<PathBuf>) -> Result<()> {
    use ingero_tools::stacks::{folded, Category, SampleSet, StackQuery};
    let set = match args.stacks.as_deref() {
        None => None,
        Some(s) => Some(SampleSet::parse(s).ok_or_else(|| {
            ToolError::BadArgument(format!(
                "--stacks {s:?}: use python, native, on_cpu, off_cpu or call_site"
            ))
        })?),
    };
    let category = match args.category.as_deref() {
        None => None,
        Some(c) => Some(Category::parse(c).ok_or_else(|| {
            ToolError::BadArgument(format!(
                "--category {c:?}: use on_cpu, in_cuda, blocked or preempted"
            ))
        })?),
    };
    let query = StackQuery {
        scope,
        tid: args.tid,
        set,
        category,
        ..StackQuery::default()
    };
    let text = folded(db, &query)?;
    if text.is_empty() {
        // Nothing to fold: an empty file would only puzzle a flame-graph
        // tool; say what the file holds instead.
        return Err(crate::exit::BadArgument(format!(
            "no stack samples match this export, so nothing was written; {}",
            stacks_held(db)
        ))
        .into());
    }
    match out {
        Some(path) => {
            let mut file = ingero_store::safe_open::create_output(&path)?;
            file.write_all(text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "wrote {} ({} distinct stacks); flamegraph.pl {} > flame.svg, or open it in speedscope",
                path.display(),
                text.lines().count(),
                path.display()
            );
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(text.as_bytes())?;
        }
    }
    Ok(())
}

/// What stack samples `db` holds, by kind, in words (what a folded export
/// could draw from, or how to record them).
fn stacks_held(db: &TraceDb) -> String {
    let counts: Vec<(i64, i64)> = db
        .conn()
        .prepare("SELECT kind, COUNT(*) FROM stack_samples GROUP BY kind ORDER BY kind")
        .and_then(|mut st| {
            st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .unwrap_or_default();
    if counts.is_empty() {
        return "the file holds no stack samples at all (recorded without stacks: `ingero trace` \
                records them by default unless --stack-hz 0 or --no-offcpu-stacks is given; \
                `ingero check` says whether this machine can take them)"
            .to_string();
    }
    let held: Vec<String> = counts
        .iter()
        .map(|&(k, n)| {
            let kind = ingero_store::StackKind::from_id(k).map_or("other", |k| k.as_str());
            format!("{} {kind}", ingero_tools::format::count(n))
        })
        .collect();
    format!(
        "the file holds {} samples: widen --since/--until, or pick --stacks, --tid or --category to match them",
        held.join(", ")
    )
}
