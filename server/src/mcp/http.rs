//! `ingero mcp --http ADDR`: streamable HTTP under `/mcp`, in axum.
//!
//! Protection, outermost first: a request-size cap; `Origin` validation
//! against localhost plus an explicit allow-list (browsers are the attack
//! path for a local server); bearer-token authentication when a token is
//! configured, which is mandatory for a non-loopback bind. rmcp itself
//! checks `Host` (DNS rebinding) and `Origin` again, and handles sessions
//! for both the 2026-07-28 (stateless) and older (`initialize`) protocols.
//! Connections are served by [`super::http_conn`], which closes them so that
//! a refusal reaches a client still sending its request.

use super::http_auth::AuthThrottle;
use super::http_sessions::{BoundedSessions, SessionLimits};
use super::http_token::{token_weakness, TokenFileError};
use super::server::IngeroMcp;
use super::Config;
use axum::extract::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tower_http::limit::RequestBodyLimitLayer;

/// HTTP-specific settings.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// Bearer token clients must present; required off loopback.
    pub token: Option<String>,
    /// Extra browser origins allowed besides localhost, e.g. `https://app.example.com`.
    pub allow_origins: Vec<String>,
    /// Largest request body accepted, bytes.
    pub max_body_bytes: usize,
    /// Whether clients may start captures (then a token is required, even on loopback).
    pub allow_capture: bool,
    /// How many sessions may live, and how long unused.
    pub sessions: SessionLimits,
    /// Longest a client may take to send a request's head, or its body,
    /// and longest a connection may wait idle for its next request.
    pub request_timeout: Duration,
}

/// Default [`HttpOptions::request_timeout`].
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

/// Why the HTTP server refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum HttpSetupError {
    /// Binding beyond loopback without a token would expose traces to the network.
    #[error("refusing to listen on {0} without a token: set INGERO_TOKEN, --token-file or --token (or bind 127.0.0.1); make one with `head -c 32 /dev/urandom | base64`")]
    NeedsToken(SocketAddr),
    /// Any local user can reach loopback: captures need a credential there too.
    #[error("refusing to serve --allow-capture over HTTP without a token (any local user can reach a loopback port): set INGERO_TOKEN or --token-file; make one with `head -c 32 /dev/urandom | base64`")]
    CaptureNeedsToken,
    /// A token that can be guessed protects nothing.
    #[error("refusing a weak token: {0}; make one with `head -c 32 /dev/urandom | base64`")]
    WeakToken(String),
    /// `--token-file` cannot be used.
    #[error(transparent)]
    TokenFile(#[from] TokenFileError),
    /// An `--allow-origin` value is not `scheme://host[:port]`.
    #[error(
        "bad --allow-origin {0:?}: expected scheme://host[:port], e.g. https://app.example.com"
    )]
    BadOrigin(String),
}

/// What the guard middleware checks.
#[derive(Debug, Clone)]
struct Guard {
    token: Option<Arc<str>>,
    origins: Arc<Vec<Origin>>,
    /// Hosts of origins that are this machine (any port), as in an `Origin` header.
    local_hosts: Arc<Vec<String>>,
    /// Failed authentications per peer, which slow the next ones.
    throttle: Arc<AuthThrottle>,
}

/// A parsed origin: scheme, lower-case host, port (explicit or the scheme default).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    fn parse(text: &str) -> Option<Origin> {
        let text = text.trim().trim_end_matches('/');
        let (scheme, rest) = text.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if rest.is_empty() || rest.contains('/') || rest.contains('@') {
            return None;
        }
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (h, after) = v6.split_once(']')?;
            let port = match after.strip_prefix(':') {
                Some(p) => Some(p.parse().ok()?),
                None if after.is_empty() => None,
                None => return None,
            };
            (format!("[{}]", h.to_ascii_lowercase()), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_ascii_lowercase(), Some(p.parse().ok()?)),
                None => (rest.to_ascii_lowercase(), None),
            }
        };
        let default = match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        };
        Some(Origin {
            port: port.or(default),
            scheme,
            host,
        })
    }

    /// A page of this machine: http(s) on one of `local_hosts`, any port.
    fn is_local(&self, local_hosts: &[String]) -> bool {
        matches!(self.scheme.as_str(), "http" | "https") && local_hosts.contains(&self.host)
    }
}

impl Guard {
    fn origin_allowed(&self, value: &HeaderValue) -> bool {
        let Some(origin) = value.to_str().ok().and_then(Origin::parse) else {
            return false;
        };
        origin.is_local(&self.local_hosts) || self.origins.contains(&origin)
    }

    fn token_ok(&self, value: Option<&HeaderValue>) -> bool {
        let Some(expected) = self.token.as_deref() else {
            return true;
        };
        let Some(given) = value.and_then(|v| v.to_str().ok()).and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        }) else {
            return false;
        };
        constant_time_eq(given.trim().as_bytes(), expected.as_bytes())
    }
}

/// Compares two secrets in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    let mut response = (status, message).into_response();
    // The request body is left unread: tell the client not to reuse the
    // connection, which the server closes.
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"ingero\""),
        );
    }
    response
}

async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        if !guard.origin_allowed(origin) {
            tracing::warn!(origin = ?origin, "refused request from a foreign origin");
            return refuse(StatusCode::FORBIDDEN, "Forbidden: Origin not allowed");
        }
    }
    if !guard.token_ok(request.headers().get(header::AUTHORIZATION)) {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip());
        tracing::warn!(%peer, "refused a request without the right token");
        guard.throttle.penalise(peer).await;
        return refuse(
            StatusCode::UNAUTHORIZED,
            "Unauthorized: send Authorization: Bearer <token>",
        );
    }
    next.run(request).await
}

/// Checks the options before anything is bound: a token, when given, must
/// be strong; a non-loopback address, or a server that lets clients start
/// captures, needs one.
pub fn check_options(options: &HttpOptions) -> Result<(), HttpSetupError> {
    match options.token.as_deref() {
        Some(t) => match token_weakness(t) {
            Some(why) => Err(HttpSetupError::WeakToken(why)),
            None => Ok(()),
        },
        None if !options.addr.ip().is_loopback() => Err(HttpSetupError::NeedsToken(options.addr)),
        None if options.allow_capture => Err(HttpSetupError::CaptureNeedsToken),
        None => Ok(()),
    }
}

/// Hosts of the browser origins that are this machine: the local names,
/// plus the bound address when it is another loopback address.
fn local_origin_hosts(addr: &SocketAddr) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    if addr.ip().is_loopback() {
        let own = match addr.ip() {
            std::net::IpAddr::V4(ip) => ip.to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
        };
        if !hosts.contains(&own) {
            hosts.push(own);
        }
    }
    hosts
}

/// The `Host` values a loopback bind answers to: the usual local names,
/// plus the address actually bound (127.0.0.2 is loopback too).
fn loopback_hosts(addr: &SocketAddr) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    let own = addr.ip().to_string();
    if !hosts.contains(&own) {
        hosts.push(own);
    }
    hosts
}

/// Builds the axum application over `shared`, the state the caller keeps
/// (to stop its captures when the server ends).
pub fn app_with(
    shared: Arc<super::server::Shared>,
    options: &HttpOptions,
    ct: CancellationToken,
) -> anyhow::Result<Router> {
    check_options(options)?;
    let extra: Vec<Origin> = options
        .allow_origins
        .iter()
        .map(|o| Origin::parse(o).ok_or_else(|| HttpSetupError::BadOrigin(o.clone())))
        .collect::<Result<_, _>>()?;
    let local_hosts = Arc::new(local_origin_hosts(&options.addr));
    let mut rmcp_origins: Vec<String> = ["http", "https"]
        .iter()
        .flat_map(|s| local_hosts.iter().map(move |h| format!("{s}://{h}:*")))
        .collect();
    rmcp_origins.extend(extra.iter().map(|o| match o.port {
        Some(p) => format!("{}://{}:{p}", o.scheme, o.host),
        None => format!("{}://{}:*", o.scheme, o.host),
    }));
    let mut http_config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_allowed_origins(rmcp_origins)
        .with_max_request_body_bytes(options.max_body_bytes);
    if options.addr.ip().is_loopback() {
        http_config = http_config.with_allowed_hosts(loopback_hosts(&options.addr));
    } else {
        // Clients reach a public bind by names this process cannot know; the
        // token, not the Host header, protects it.
        http_config = http_config.disable_allowed_hosts();
    }
    let sessions = Arc::new(BoundedSessions::new(options.sessions));
    let service = StreamableHttpService::new(
        move || Ok(IngeroMcp::new(Arc::clone(&shared))),
        Arc::clone(&sessions),
        http_config,
    );
    let state = Guard {
        token: options.token.as_deref().map(Arc::from),
        origins: Arc::new(extra),
        local_hosts,
        throttle: Arc::new(AuthThrottle::default()),
    };
    let max_body = options.max_body_bytes;
    let body_time = options.request_timeout;
    Ok(Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn_with_state(
            sessions,
            super::http_sessions::gate,
        ))
        .layer(axum::middleware::from_fn(move |request, next| {
            super::http_edge::edge(max_body, body_time, request, next)
        }))
        .layer(axum::middleware::from_fn_with_state(state, guard))
        .layer(RequestBodyLimitLayer::new(options.max_body_bytes))
        .layer(axum::middleware::from_fn(
            super::http_conn::close_after_refusal,
        )))
}

/// Serves until Ctrl-C or SIGTERM.
pub async fn serve(config: Config, options: HttpOptions) -> anyhow::Result<()> {
    let ct = CancellationToken::new();
    let shared = IngeroMcp::shared(config)?;
    let router = app_with(Arc::clone(&shared), &options, ct.clone())?;
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    // One stable line for scripts (the port is known only now when 0 was asked).
    eprintln!("ingero mcp: listening on http://{local}/mcp");
    let stop = ct.clone();
    let signal = Arc::new(std::sync::Mutex::new("SIGTERM"));
    let got = Arc::clone(&signal);
    super::http_conn::serve_with_lingering_close(
        listener,
        router,
        options.request_timeout,
        async move {
            let name = shutdown_signal().await;
            if let Ok(mut slot) = got.lock() {
                *slot = name;
            }
            stop.cancel();
        },
    )
    .await;
    let name = signal.lock().map(|s| *s).unwrap_or("SIGTERM");
    super::finish_captures(&shared, &format!("server shutting down ({name})")).await;
    Ok(())
}

/// Waits for SIGINT, SIGTERM or SIGHUP (Ctrl-C, `timeout`, `docker stop`,
/// systemd, a closed terminal); returns the signal's name.
pub(crate) async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = match signal(SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                return "SIGINT";
            }
        };
        match signal(SignalKind::hangup()) {
            Ok(mut hup) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
                _ = hup.recv() => "SIGHUP",
            },
            Err(_) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "SIGINT"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_parse_and_match() {
        let g = Guard {
            token: Some(Arc::from("s3cret")),
            origins: Arc::new(vec![
                Origin::parse("https://app.example.com").expect("parse")
            ]),
            local_hosts: Arc::new(local_origin_hosts(&"127.0.0.2:8080".parse().expect("addr"))),
            throttle: Arc::new(AuthThrottle::default()),
        };
        let ok = |v: &str| g.origin_allowed(&HeaderValue::from_str(v).expect("header"));
        assert!(ok("http://localhost:6274"));
        assert!(ok("http://127.0.0.1"));
        assert!(ok("http://[::1]:3000"));
        assert!(ok("http://127.0.0.2:8080"));
        assert!(!ok("http://127.0.0.3:8080"));
        assert!(ok("https://app.example.com"));
        assert!(ok("https://app.example.com:443"));
        assert!(!ok("https://app.example.com:8443"));
        assert!(!ok("https://evil.example"));
        assert!(!ok("http://localhost.evil.example"));
        assert!(!ok("null"));
        let tok = |v: &str| g.token_ok(Some(&HeaderValue::from_str(v).expect("header")));
        assert!(tok("Bearer s3cret"));
        assert!(!tok("Bearer s3cre"));
        assert!(!tok("Bearer s3cret2"));
        assert!(!tok("Basic s3cret"));
        assert!(!g.token_ok(None));
    }

    #[test]
    fn non_loopback_binds_need_a_strong_token() {
        let options = |addr: &str, token: Option<&str>| HttpOptions {
            addr: addr.parse().expect("addr"),
            token: token.map(str::to_string),
            allow_origins: Vec::new(),
            max_body_bytes: 1 << 20,
            allow_capture: false,
            sessions: SessionLimits::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        };
        assert!(check_options(&options("127.0.0.1:0", None)).is_ok());
        assert!(check_options(&options("127.0.0.2:0", None)).is_ok());
        assert!(matches!(
            check_options(&options("0.0.0.0:0", None)),
            Err(HttpSetupError::NeedsToken(_))
        ));
        assert!(matches!(
            check_options(&options("0.0.0.0:0", Some("a"))),
            Err(HttpSetupError::WeakToken(_))
        ));
        let strong = "Qm9vdHN0cmFwIHRoZSB0b2tlbiBoZXJlIQ==";
        assert!(check_options(&options("0.0.0.0:0", Some(strong))).is_ok());
        assert!(matches!(
            check_options(&options("127.0.0.1:0", Some("12345678".repeat(4).as_str()))),
            Err(HttpSetupError::WeakToken(_))
        ));
        let capture = |token: Option<&str>| HttpOptions {
            allow_capture: true,
            ..options("127.0.0.1:0", token)
        };
        assert!(matches!(
            check_options(&capture(None)),
            Err(HttpSetupError::CaptureNeedsToken)
        ));
        assert!(check_options(&capture(Some(strong))).is_ok());
    }

    #[test]
    fn a_loopback_bind_answers_to_its_own_address() {
        let hosts = loopback_hosts(&"127.0.0.2:8080".parse().expect("addr"));
        assert!(hosts.contains(&"127.0.0.2".to_string()));
        assert!(hosts.contains(&"localhost".to_string()));
        assert_eq!(
            loopback_hosts(&"127.0.0.1:1".parse().expect("addr")).len(),
            3
        );
    }

    #[test]
    fn constant_time_eq_is_eq() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
    }
}
