//! The HTTP/1.1 accept loop, with a lingering close on every connection.
//!
//! When the server refuses a request before reading all of it (a 431 for
//! an oversized header such as a 900 KB `Mcp-Name`, a 413 for an oversized
//! body), the client is usually still sending. Closing the socket with
//! unread bytes in its receive buffer makes the kernel answer with a reset,
//! and the reset can reach the client before the refusal does: the client
//! then sees a bare read error instead of the status, and an MCP SDK
//! session dies with it. So, as nginx does, each connection is closed in
//! two steps: our side of the stream is shut down first (the response is
//! out, the client reads EOF after it), then what the client still sends
//! is read and thrown away until it closes too, for a bounded time and
//! byte count.
//!
//! Every connection has a deadline for each request's head, counted from
//! the moment the server waits for it (the connection opened, or the
//! previous answer went out): a client that sends half a request, or keeps
//! an idle connection open, is cut off after it. The body has its own
//! deadline, at the JSON edge ([`super::http_edge`]). Each request carries
//! the peer's address as [`ConnectInfo`], for the authentication throttle.
//!
//! A refusal also says `Connection: close` when the request carried a body
//! (see [`close_after_refusal`]): the server may not have read that body,
//! and a client that reused the connection for its next request would
//! otherwise race the server's close and lose that request.

use axum::extract::{ConnectInfo, Request};
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// How long a closing connection keeps reading what the client still sends.
pub const LINGER_TIME: Duration = Duration::from_secs(2);

/// How many bytes a closing connection reads and discards at most.
pub const LINGER_BYTES: usize = 16 << 20;

/// Serves `router` on `listener` until `shutdown` completes, then lets open
/// connections finish their current request and waits for them. A request
/// head must arrive within `head_timeout` of the server waiting for it.
pub async fn serve_with_lingering_close<F>(
    listener: TcpListener,
    router: Router,
    head_timeout: Duration,
    shutdown: F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = std::pin::pin!(shutdown);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
            // Reap finished connections so the set does not grow forever.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait, do not spin.
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        // Responses are SSE streams written in several small pieces: without
        // TCP_NODELAY, Nagle's algorithm and delayed ACKs add ~40 ms per call.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        connections.spawn(serve_connection(
            stream,
            peer,
            router.clone(),
            head_timeout,
            stop_rx.clone(),
        ));
    }
    let _ = stop_tx.send(true);
    drop(listener);
    while connections.join_next().await.is_some() {}
}

/// One connection: HTTP/1.1 until either side ends it, then a lingering close.
async fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    head_timeout: Duration,
    mut stop: watch::Receiver<bool>,
) {
    let mut stopping = false;
    {
        let io = TokioIo::new(&mut stream);
        let service = TowerToHyperService::new(router.map_request(
            move |mut request: Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                request
            },
        ));
        let mut builder = http1::Builder::new();
        builder.timer(TokioTimer::new());
        builder.header_read_timeout(head_timeout);
        let mut conn = std::pin::pin!(builder.serve_connection(io, service));
        loop {
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(e) = result {
                        tracing::debug!(error = %e, "HTTP connection ended with an error");
                    }
                    break;
                }
                changed = stop.changed(), if !stopping => {
                    stopping = true;
                    if changed.is_err() || *stop.borrow() {
                        conn.as_mut().graceful_shutdown();
                    }
                }
            }
        }
    }
    // A server on its way out does not wait for clients to hang up.
    let linger_time = if stopping {
        Duration::ZERO
    } else {
        LINGER_TIME
    };
    linger(&mut stream, linger_time).await;
}

/// Shuts our side down, then drains the client's until it closes (bounded).
async fn linger(stream: &mut TcpStream, linger_time: Duration) {
    let _ = stream.shutdown().await;
    if linger_time.is_zero() {
        return;
    }
    let drain = async {
        let mut buf = vec![0u8; 64 << 10];
        let mut total = 0usize;
        while total < LINGER_BYTES {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => total += n,
            }
        }
    };
    let _ = tokio::time::timeout(linger_time, drain).await;
}

/// Middleware: a 4xx answer to a request with a body closes the connection.
pub async fn close_after_refusal(request: Request, next: Next) -> Response {
    let had_body = request.headers().contains_key(header::TRANSFER_ENCODING)
        || request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim() != "0");
    let mut response = next.run(request).await;
    if had_body && response.status().is_client_error() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
