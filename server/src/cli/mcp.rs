//! `ingero mcp`: serve trace databases to AI assistants over MCP.

use crate::exit::BadArgument;
use crate::mcp::capture::limits::parse_bytes;
use crate::mcp::capture::CaptureLimits;
use crate::mcp::http_sessions::{self, SessionLimits};
use crate::mcp::sql_gate::SqlConcurrency;
use crate::mcp::{self, http::HttpOptions, Config};
use anyhow::Context;
use ingero_tools::library::Library;
use ingero_tools::sql::SqlLimits;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `ingero mcp`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trace database to serve (native or Ingero). Without it, a bundled
    /// demo investigation (dataloader starvation) is served.
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8080) under /mcp
    /// instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Folder list_databases and open_database may read [default: the folder of --db].
    #[arg(long, value_name = "DIR")]
    pub allow_dir: Option<PathBuf>,
    /// Let clients list this host's GPU processes and start live captures
    /// (list_gpu_processes, start_trace).
    #[arg(long)]
    pub allow_capture: bool,
    /// Longest a capture started by a client may run (e.g. 10m); a capture
    /// asked for without a duration stops there [default: no limit].
    #[arg(long, value_name = "DURATION", requires = "allow_capture")]
    pub capture_max_duration: Option<String>,
    /// Largest a capture's database may grow (e.g. 512M, 2G); the capture
    /// stops cleanly when it gets there [default: no limit].
    #[arg(long, value_name = "SIZE", requires = "allow_capture")]
    pub capture_max_bytes: Option<String>,
    /// Captures that may run at the same time.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        requires = "allow_capture"
    )]
    pub capture_max_concurrent: usize,
    /// Bearer token HTTP clients must send; required beyond loopback and
    /// with --allow-capture. Visible to local users in `ps`: prefer
    /// INGERO_TOKEN or --token-file.
    #[arg(long, value_name = "TOKEN", conflicts_with = "token_file")]
    pub token: Option<String>,
    /// File holding the bearer token (one line; must be readable by its
    /// owner only, e.g. mode 600).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Live MCP sessions at most over HTTP; when all are taken, the one idle
    /// the longest is closed (a new session is refused with 503 when every
    /// session is answering a request).
    #[arg(long, value_name = "N", default_value_t = http_sessions::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// An HTTP session with no request for this long is closed, seconds.
    #[arg(long, value_name = "SECS", default_value_t = http_sessions::DEFAULT_SESSION_IDLE.as_secs_f64())]
    pub session_idle: f64,
    /// Longest an HTTP client may take to send a request's head or its
    /// body, and an idle connection waits for its next request, seconds.
    #[arg(long, value_name = "SECS", default_value_t = mcp::http::DEFAULT_REQUEST_TIMEOUT.as_secs_f64())]
    pub request_timeout: f64,
    /// Extra browser Origin allowed over HTTP besides localhost (repeatable).
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// Largest HTTP request body accepted, bytes.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20)]
    pub max_body: usize,
    /// Longest a run_sql query may run, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 5.0)]
    pub sql_timeout: f64,
    /// run_sql queries that may run at once in the whole server [default:
    /// half the connections a database pool opens, so other tools find one].
    #[arg(long, value_name = "N")]
    pub sql_max_concurrent: Option<usize>,
    /// run_sql queries that may run at once in one session [default: 2, at
    /// most --sql-max-concurrent].
    #[arg(long, value_name = "N")]
    pub sql_max_per_session: Option<usize>,
    /// Longest a run_sql query waits for a place under --sql-max-concurrent
    /// before it is refused, seconds.
    #[arg(long, value_name = "SECS", default_value_t = mcp::sql_gate::DEFAULT_QUEUE_WAIT.as_secs_f64())]
    pub sql_queue_wait: f64,
}

/// Runs the server until the client (stdio) or a signal (HTTP) ends it.
pub fn run(args: Args) -> anyhow::Result<()> {
    init_logging();
    let http = match args.http {
        None => None,
        Some(addr) => {
            let options = HttpOptions {
                addr,
                token: token(&args)?,
                allow_origins: args.allow_origin.clone(),
                max_body_bytes: args.max_body,
                allow_capture: args.allow_capture,
                sessions: SessionLimits {
                    max_sessions: positive_count(args.max_sessions, "--max-sessions")?,
                    idle: seconds(args.session_idle, "--session-idle")?,
                },
                request_timeout: seconds(args.request_timeout, "--request-timeout")?,
            };
            mcp::http::check_options(&options)?;
            Some(options)
        }
    };
    let default_db = match &args.db {
        Some(p) => p
            .canonicalize()
            .map_err(|_| ingero_store::StoreError::NotFound(p.clone()))?,
        None => mcp::bundled::bundled_database()?,
    };
    // Fail early (exit 2) on a file that is not a trace database. A trace
    // with damaged rows still serves: each tool answers with the message
    // naming them, and the client can say what to do.
    match ingero_store::TraceDb::open(&default_db) {
        Ok(_) => {}
        Err(e @ ingero_store::StoreError::Unreadable { .. }) => {
            eprintln!("ingero: warning: {e}");
        }
        Err(e) => return Err(e.into()),
    }
    let allow_dir = match &args.allow_dir {
        Some(d) => d.clone(),
        None => default_db
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let library = Library::new(&allow_dir)?;
    if !(args.sql_timeout.is_finite() && args.sql_timeout > 0.0) {
        return Err(
            BadArgument("--sql-timeout must be a positive number of seconds".into()).into(),
        );
    }
    let capture_limits = capture_limits(&args)?;
    let sql_concurrency = sql_concurrency(&args)?;
    let config = Config {
        default_db,
        library,
        allow_capture: args.allow_capture,
        capture_limits,
        sql_limits: SqlLimits {
            timeout: Duration::from_secs_f64(args.sql_timeout),
            ..SqlLimits::default()
        },
        sql_concurrency,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let result = match http {
        None => runtime.block_on(mcp::stdio::serve(config)),
        Some(options) => runtime.block_on(mcp::http::serve(config, options)),
    };
    // A read of stdin still blocked in its thread (the session ended on a
    // signal while the client kept its pipe open) must not keep the process
    // alive: the captures are finalised by now.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    result
}

/// The bearer token: `--token`, `--token-file` or `INGERO_TOKEN`, in that
/// order; none when none is set (an empty value counts as unset).
fn token(args: &Args) -> anyhow::Result<Option<String>> {
    let token = match (&args.token, &args.token_file) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(path)) => {
            Some(mcp::http_token::read_token_file(path).map_err(mcp::http::HttpSetupError::from)?)
        }
        (None, None) => std::env::var("INGERO_TOKEN").ok(),
    };
    Ok(token.filter(|t| !t.is_empty()))
}

/// `value` seconds as a duration, refusing zero, negative or odd values.
fn seconds(value: f64, flag: &str) -> anyhow::Result<Duration> {
    if value.is_finite() && value > 0.0 && value < 1e9 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(BadArgument(format!("{flag} must be a positive number of seconds")).into())
    }
}

/// `value`, refusing zero.
fn positive_count(value: usize, flag: &str) -> anyhow::Result<usize> {
    if value == 0 {
        return Err(BadArgument(format!("{flag} must be at least 1")).into());
    }
    Ok(value)
}

/// The caps on concurrent run_sql queries from the command line.
fn sql_concurrency(args: &Args) -> anyhow::Result<SqlConcurrency> {
    let default = SqlConcurrency::default();
    let global = match args.sql_max_concurrent {
        Some(n) => positive_count(n, "--sql-max-concurrent")?,
        None => default.global,
    };
    let per_session = match args.sql_max_per_session {
        Some(n) => positive_count(n, "--sql-max-per-session")?,
        None => default.per_session.min(global),
    };
    Ok(SqlConcurrency {
        per_session,
        global,
        queue_wait: seconds(args.sql_queue_wait, "--sql-queue-wait")?,
    })
}

/// The operator's capture limits from the command line; a bad value exits 2
/// saying what to give.
fn capture_limits(args: &Args) -> anyhow::Result<CaptureLimits> {
    let max_duration = match &args.capture_max_duration {
        None => None,
        Some(text) => match ingero_store::parse_duration_ns(text) {
            Ok(ns) if ns > 0 => Some(Duration::from_nanos(ns as u64)),
            _ => {
                return Err(BadArgument(format!(
                    "--capture-max-duration {text:?} is not a positive duration: give e.g. 30s, 10m or 1h"
                ))
                .into())
            }
        },
    };
    let max_bytes = args
        .capture_max_bytes
        .as_deref()
        .map(parse_bytes)
        .transpose()
        .map_err(|e| BadArgument(format!("--capture-max-bytes {e}")))?;
    if args.capture_max_concurrent == 0 {
        return Err(BadArgument(
            "--capture-max-concurrent must be at least 1 (leave out --allow-capture to refuse every capture)"
                .into(),
        )
        .into());
    }
    Ok(CaptureLimits {
        max_duration,
        max_bytes,
        max_concurrent: args.capture_max_concurrent,
    })
}

/// Logs go to stderr, never stdout (stdout carries the protocol on stdio).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("INGERO_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("ingero=info,rmcp=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
