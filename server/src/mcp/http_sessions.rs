//! A bounded number of live MCP sessions over HTTP.
//!
//! rmcp's [`LocalSessionManager`] keeps every session until it is closed or
//! has been idle for its keep-alive time, however many there are: a client
//! sending `initialize` in a loop makes the server hold thousands of session
//! workers. [`BoundedSessions`] wraps it, counts live sessions and the
//! requests each is answering, and when [`SessionLimits::max_sessions`] are
//! live, a new session first closes the one idle the longest (no request in
//! progress); when every session is busy, the new one is refused with a 503
//! ([`gate`]). Idle sessions end after [`SessionLimits::idle`], which drops
//! their state (the worker and the session's handler) with them.

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, LocalSessionWorker,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::WorkerTransport;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Default cap on live sessions.
pub const DEFAULT_MAX_SESSIONS: usize = 64;

/// Default time an idle session is kept.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// How many sessions may live and for how long unused.
#[derive(Debug, Clone, Copy)]
pub struct SessionLimits {
    /// Live sessions at most.
    pub max_sessions: usize,
    /// A session with no request for this long is closed.
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            idle: DEFAULT_SESSION_IDLE,
        }
    }
}

/// Marks a request whose body is an `initialize` request: without a
/// session id, it opens a session (set by the JSON edge, read by [`gate`]).
#[derive(Debug, Clone, Copy)]
pub struct OpensSession;

/// Why a session could not be created or used.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// Every session slot holds a session that is answering a request.
    #[error("all {0} MCP sessions are busy; retry later, or end unused sessions with DELETE")]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Inner(#[from] LocalSessionManagerError),
}

/// What is known of one live session.
#[derive(Debug, Clone, Copy)]
struct Activity {
    /// Requests of the session being answered now.
    busy: usize,
    /// When it last received a request or finished answering one.
    last: Instant,
}

/// The live sessions, and the slots taken by sessions being created.
#[derive(Debug, Default)]
struct Book {
    live: HashMap<SessionId, Activity>,
    pending: usize,
}

/// rmcp's local session manager with a cap on live sessions.
#[derive(Debug)]
pub struct BoundedSessions {
    inner: LocalSessionManager,
    max_sessions: usize,
    book: Arc<Mutex<Book>>,
}

fn lock(book: &Mutex<Book>) -> MutexGuard<'_, Book> {
    match book.lock() {
        Ok(b) => b,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl BoundedSessions {
    /// A manager holding at most `limits.max_sessions` sessions (at least one).
    pub fn new(limits: SessionLimits) -> BoundedSessions {
        let mut inner = LocalSessionManager::default();
        inner.session_config.keep_alive = Some(limits.idle);
        BoundedSessions {
            inner,
            max_sessions: limits.max_sessions.max(1),
            book: Arc::new(Mutex::new(Book::default())),
        }
    }

    /// Live sessions now.
    #[cfg(test)]
    fn live(&self) -> usize {
        lock(&self.book).live.len()
    }

    /// Reserves a slot for a new session, closing the longest-idle session
    /// when all are taken; fails when every session is busy.
    async fn reserve(&self) -> Result<(), SessionsError> {
        let victim = {
            let mut book = lock(&self.book);
            let victim = if book.live.len() + book.pending >= self.max_sessions {
                let oldest = book
                    .live
                    .iter()
                    .filter(|(_, a)| a.busy == 0)
                    .min_by_key(|(_, a)| a.last)
                    .map(|(id, _)| id.clone());
                match oldest {
                    Some(id) => {
                        book.live.remove(&id);
                        Some(id)
                    }
                    None => return Err(SessionsError::Full(self.max_sessions)),
                }
            } else {
                None
            };
            book.pending += 1;
            victim
        };
        if let Some(id) = victim {
            tracing::info!(session = %id, "session cap reached: closed the longest-idle session");
            if let Err(e) = self.inner.close_session(&id).await {
                tracing::warn!(session = %id, error = %e, "closing an evicted session failed");
            }
        }
        Ok(())
    }

    /// Whether a new session could be admitted now (evicting one if needed),
    /// without keeping the slot.
    pub async fn make_room(&self) -> Result<(), SessionsError> {
        self.reserve().await?;
        lock(&self.book).pending -= 1;
        Ok(())
    }

    /// Records a request of `id` starting; the guard records its end.
    fn begin(&self, id: &SessionId) -> Busy {
        if let Some(a) = lock(&self.book).live.get_mut(id) {
            a.busy += 1;
            a.last = Instant::now();
        }
        Busy {
            book: Arc::clone(&self.book),
            id: id.clone(),
        }
    }

    /// Records activity of `id` with no request left open.
    fn touch(&self, id: &SessionId) {
        if let Some(a) = lock(&self.book).live.get_mut(id) {
            a.last = Instant::now();
        }
    }
}

/// A request being answered; dropped with its response stream.
struct Busy {
    book: Arc<Mutex<Book>>,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(a) = lock(&self.book).live.get_mut(&self.id) {
            a.busy = a.busy.saturating_sub(1);
            a.last = Instant::now();
        }
    }
}

/// `stream`, marking the session busy until it is dropped.
fn while_busy<S>(stream: S, busy: Busy) -> impl Stream<Item = ServerSseMessage> + Send + Sync
where
    S: Stream<Item = ServerSseMessage> + Send + Sync,
{
    stream.map(move |message| {
        let _held = &busy;
        message
    })
}

impl SessionManager for BoundedSessions {
    type Error = SessionsError;
    type Transport = WorkerTransport<LocalSessionWorker>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.reserve().await?;
        let created = self.inner.create_session().await;
        let mut book = lock(&self.book);
        book.pending -= 1;
        let (id, transport) = created?;
        book.live.insert(
            id.clone(),
            Activity {
                busy: 0,
                last: Instant::now(),
            },
        );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let _busy = self.begin(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        let known = lock(&self.book).live.contains_key(id);
        if known {
            self.touch(id);
        }
        Ok(known && self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let emptied = {
            let mut book = lock(&self.book);
            book.live.remove(id).is_some() && book.live.is_empty()
        };
        self.inner.close_session(id).await?;
        if emptied {
            release_freed_memory();
        }
        Ok(())
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let busy = self.begin(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(while_busy(stream, busy))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // A listening stream does not make the session busy: it stays open
        // for the session's life.
        self.touch(id);
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.touch(id);
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}

/// Hands memory freed by closed sessions back to the system. The C
/// allocator keeps freed pages for reuse, so without this the RSS of a
/// server that once held many sessions stays at its peak when they are gone.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    tokio::task::spawn_blocking(|| {
        // SAFETY: malloc_trim only returns free heap pages to the kernel;
        // it has no preconditions and touches no live allocation.
        unsafe {
            libc::malloc_trim(0);
        }
    });
}

/// Middleware: an `initialize` without a session id is answered 503 when
/// every session slot is busy, before rmcp creates anything for it.
pub async fn gate(
    State(sessions): State<Arc<BoundedSessions>>,
    request: Request,
    next: Next,
) -> Response {
    let opens = request.extensions().get::<OpensSession>().is_some()
        && !request.headers().contains_key("mcp-session-id");
    if opens {
        if let Err(e) = sessions.make_room().await {
            tracing::warn!(error = %e, "refused a new session");
            let mut response = (
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Service Unavailable: {e}"),
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            return response;
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_longest_idle_session_makes_room() {
        let sessions = BoundedSessions::new(SessionLimits {
            max_sessions: 2,
            idle: Duration::from_secs(60),
        });
        let (a, _ta) = sessions.create_session().await.expect("a");
        let (b, _tb) = sessions.create_session().await.expect("b");
        let _busy_b = sessions.begin(&b);
        let (c, _tc) = sessions.create_session().await.expect("c");
        assert_eq!(sessions.live(), 2);
        assert!(!sessions.has_session(&a).await.expect("has a"));
        assert!(sessions.has_session(&b).await.expect("has b"));
        assert!(sessions.has_session(&c).await.expect("has c"));
        let _busy_c = sessions.begin(&c);
        assert!(matches!(
            sessions.create_session().await,
            Err(SessionsError::Full(2))
        ));
        drop(_busy_b);
        assert!(sessions.make_room().await.is_ok());
        assert_eq!(sessions.live(), 1);
    }
}
