//! The HTTP server's bounds and credentials, against the built binary over
//! plain HTTP: sessions are capped and their memory comes back, slow or
//! idle clients are cut off, captures need a strong private token even on
//! loopback, failed authentications are slowed, and run_sql cannot take
//! every connection from the other tools.
//!
//! Timings are generous: the machine running them may be small and busy.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A strong token, only for these tests.
const TOKEN: &str = "aHR0cC1ib3VuZHMgdGVzdHMgb25seTogbm90IGEgc2VjcmV0";
const MIB: u64 = 1 << 20;
const PROTOCOL: &str = "2025-06-18";

fn seed_db(dir: &Path) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db");
    let to = dir.join("trace.db");
    std::fs::copy(&from, &to).expect("copy the seed database");
    to
}

/// `ingero mcp --http 127.0.0.1:0` on a copy of the seed database.
struct Server {
    child: Child,
    url: String,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start(extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = seed_db(dir.path());
        let mut child = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["mcp", "--http", "127.0.0.1:0", "--db"])
            .arg(&db)
            .args(extra)
            .env("INGERO_TOKEN", TOKEN)
            .env(
                "INGERO_LOG",
                std::env::var("HB_LOG").unwrap_or_else(|_| "ingero=warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start ingero mcp --http");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let url = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(url) = line.strip_prefix("ingero mcp: listening on ") {
                        break url.trim().to_string();
                    }
                }
                _ => {
                    let _ = child.kill();
                    panic!("the server exited before listening");
                }
            }
        };
        // Keep reading its log so that it never blocks on a full pipe.
        std::thread::spawn(move || {
            for l in lines.by_ref().map_while(Result::ok) {
                if std::env::var_os("HB_LOG").is_some() {
                    eprintln!("LOG {l}");
                }
            }
        });
        let addr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string();
        Server {
            child,
            url,
            addr,
            _dir: dir,
        }
    }

    fn rss(&self) -> u64 {
        rss_of(self.child.id())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// VmRSS of `pid`, bytes.
fn rss_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn new_agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(120)))
        .http_status_as_error(false)
        .build()
        .into()
}

/// What a POST got back.
struct Answer {
    status: u16,
    session: Option<String>,
    body: String,
}

impl Answer {
    /// The JSON-RPC response in the (SSE or JSON) body.
    fn message(&self) -> serde_json::Value {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .chain(std::iter::once(self.body.as_str()))
            .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC response in {:?}", self.body))
    }
}

fn post(agent: &ureq::Agent, url: &str, token: &str, session: Option<&str>, body: &str) -> Answer {
    let mut request = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .header("Authorization", &format!("Bearer {token}"));
    if let Some(s) = session {
        request = request
            .header("Mcp-Session-Id", s)
            .header("MCP-Protocol-Version", PROTOCOL);
    }
    let mut response = request
        .send(body)
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.body_mut().read_to_string().unwrap_or_default();
    Answer {
        status,
        session,
        body,
    }
}

fn initialize_body() -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": PROTOCOL, "capabilities": {},
                   "clientInfo": {"name": "http-bounds", "version": "1"}}
    })
    .to_string()
}

/// A new initialised session's id.
fn open_session(agent: &ureq::Agent, url: &str) -> String {
    let answer = post(agent, url, TOKEN, None, &initialize_body());
    assert_eq!(answer.status, 200, "initialize: {}", answer.body);
    let id = answer.session.expect("Mcp-Session-Id");
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let noted = post(agent, url, TOKEN, Some(&id), note);
    assert_eq!(noted.status, 202, "initialized: {}", noted.body);
    id
}

/// Calls `tool` in `session`: its result object.
fn call(
    agent: &ureq::Agent,
    url: &str,
    session: &str,
    tool: &str,
    args: serde_json::Value,
) -> serde_json::Value {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": tool, "arguments": args}
    })
    .to_string();
    let answer = post(agent, url, TOKEN, Some(session), &body);
    assert_eq!(answer.status, 200, "{tool}: {}", answer.body);
    answer.message()["result"].clone()
}

fn text_of(result: &serde_json::Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A query that runs until the SQL time limit stops it.
const ENDLESS: &str =
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c";

/// Starts an endless run_sql in `session` on its own thread.
fn endless_query(url: &str, session: &str) {
    let (url, session) = (url.to_string(), session.to_string());
    std::thread::spawn(move || {
        let agent = new_agent();
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 9, "method": "tools/call",
            "params": {"name": "run_sql", "arguments": {"sql": ENDLESS}}
        })
        .to_string();
        // Reads the answer, which comes when the time limit stops the
        // query or the server ends.
        let sent = agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream")
            .header("Authorization", &format!("Bearer {TOKEN}"))
            .header("Mcp-Session-Id", &session)
            .header("MCP-Protocol-Version", PROTOCOL)
            .send(&body);
        if let Ok(mut response) = sent {
            let _ = response.body_mut().read_to_string();
        }
    });
    // Let it take its place under the caps.
    std::thread::sleep(Duration::from_secs(3));
}

/// Samples `pid`'s RSS every 100 ms until stopped; the peak.
struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start(pid: u32) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let (s, p) = (Arc::clone(&stop), Arc::clone(&peak));
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(rss_of(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Sampler { stop, peak, thread }
    }

    fn finish(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.peak.load(Ordering::Relaxed)
    }
}

/// Sessions opened by the flood.
const FLOOD: usize = 3000;
/// Growth of RSS over start-up allowed while the flood runs.
const FLOOD_GROWTH_MIB: u64 = 48;
/// Growth of RSS over start-up allowed once the sessions have expired.
const SETTLED_GROWTH_MIB: u64 = 16;

#[test]
fn a_session_flood_keeps_memory_bounded_and_returns_it() {
    let server = Server::start(&["--max-sessions", "64", "--session-idle", "5"]);
    let agent = new_agent();
    // Start-up: one session served and closed, so first-use allocations count.
    let first = open_session(&agent, &server.url);
    let stats = call(
        &agent,
        &server.url,
        &first,
        "get_trace_stats",
        serde_json::json!({}),
    );
    assert_eq!(stats["isError"], serde_json::json!(false), "{stats}");
    let start = server.rss();
    let sampler = Sampler::start(server.child.id());
    let t0 = Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let url = server.url.clone();
            std::thread::spawn(move || {
                let agent = new_agent();
                for _ in 0..FLOOD / 4 {
                    let a = post(&agent, &url, TOKEN, None, &initialize_body());
                    assert_eq!(a.status, 200, "initialize in the flood: {}", a.body);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("flood thread");
    }
    let flood_time = t0.elapsed();
    let peak = sampler.finish();
    // The first session, idle the longest, was closed to make room.
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let gone = post(&agent, &server.url, TOKEN, Some(&first), ping);
    assert_eq!(
        gone.status, 404,
        "an evicted session still answers: {}",
        gone.body
    );
    // The sessions left expire after 5 s idle; give them generous time.
    let t1 = Instant::now();
    let last = post(&agent, &server.url, TOKEN, None, &initialize_body())
        .session
        .expect("a session");
    std::thread::sleep(Duration::from_secs(12));
    let settled = server.rss();
    let expired = post(&agent, &server.url, TOKEN, Some(&last), ping);
    eprintln!(
        "session flood: {FLOOD} sessions in {:.1} s; RSS MiB start {:.1}, peak {:.1}, after expiry ({:.0} s) {:.1}",
        flood_time.as_secs_f64(),
        start as f64 / MIB as f64,
        peak as f64 / MIB as f64,
        t1.elapsed().as_secs_f64(),
        settled as f64 / MIB as f64
    );
    assert_eq!(
        expired.status, 404,
        "an idle session outlived its time: {}",
        expired.body
    );
    assert!(
        peak <= start + FLOOD_GROWTH_MIB * MIB,
        "RSS grew from {start} to {peak} bytes during the flood"
    );
    assert!(
        settled <= start + SETTLED_GROWTH_MIB * MIB,
        "RSS {settled} bytes after the sessions expired, {start} at start"
    );
    // Still serving.
    let again = open_session(&agent, &server.url);
    assert!(!again.is_empty());
}

#[test]
fn a_new_session_is_refused_with_503_when_every_session_is_busy() {
    let server = Server::start(&[
        "--max-sessions",
        "2",
        "--sql-timeout",
        "60",
        "--sql-max-concurrent",
        "2",
    ]);
    let agent = new_agent();
    for _ in 0..2 {
        let s = open_session(&agent, &server.url);
        endless_query(&server.url, &s);
    }
    let refused = post(&agent, &server.url, TOKEN, None, &initialize_body());
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert!(
        refused.body.contains("sessions are busy"),
        "unclear refusal: {}",
        refused.body
    );
}

/// Reads from `stream` until the server closes it: what it sent, and when.
fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Duration) {
    stream.set_read_timeout(Some(limit)).expect("read timeout");
    let t0 = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!(
                "the server kept the connection open {:?}: {e}",
                t0.elapsed()
            ),
        }
    }
    (got, t0.elapsed())
}

#[test]
fn a_slow_or_idle_client_is_disconnected_after_the_request_timeout() {
    let server = Server::start(&["--request-timeout", "3"]);
    let limit = Duration::from_secs(30);
    // Half a request head.
    let mut half_head = TcpStream::connect(&server.addr).expect("connect");
    half_head
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
        .expect("send");
    let (_, after) = read_until_closed(&mut half_head, limit);
    assert!(
        after >= Duration::from_millis(2500),
        "cut off too early: {after:?}"
    );
    // A whole head, half a body.
    let mut half_body = TcpStream::connect(&server.addr).expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: 100\r\n\r\n{{\"jsonrpc\":"
    );
    half_body.write_all(head.as_bytes()).expect("send");
    let (got, after) = read_until_closed(&mut half_body, limit);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        after >= Duration::from_millis(2500),
        "cut off too early: {after:?}"
    );
    // An idle connection, never used, then one idle after a request.
    let mut idle = TcpStream::connect(&server.addr).expect("connect");
    let (_, after) = read_until_closed(&mut idle, limit);
    assert!(
        after >= Duration::from_millis(2500),
        "cut off too early: {after:?}"
    );
    let mut reused = TcpStream::connect(&server.addr).expect("connect");
    reused
        .write_all(b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .expect("send");
    let (got, _) = read_until_closed(&mut reused, limit);
    assert!(String::from_utf8_lossy(&got).starts_with("HTTP/1.1 "));
}

/// `ingero mcp --http` with `args` and `token_env` for INGERO_TOKEN: exit
/// code and stderr (the server is stopped if it starts after all).
fn start_up(args: &[&str], token_env: Option<&str>) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = seed_db(dir.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ingero"));
    cmd.args(["mcp", "--http", "127.0.0.1:0", "--db"])
        .arg(&db)
        .args(args)
        .env_remove("INGERO_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(t) = token_env {
        cmd.env("INGERO_TOKEN", t);
    }
    let mut child = cmd.spawn().expect("start ingero mcp");
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            return (status.code(), err);
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            return (None, String::from("still running after 10 s"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn capture_over_http_without_a_token_is_refused() {
    let (code, err) = start_up(&["--allow-capture"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--allow-capture") && err.contains("token"),
        "unclear refusal: {err}"
    );
}

#[test]
fn weak_tokens_are_refused_even_on_loopback() {
    let repeated = "12345678".repeat(6);
    for (args, env) in [
        (vec!["--token", repeated.as_str()], None),
        (vec![], Some("short-token")),
        (
            vec!["--allow-capture"],
            Some("abcdefghijklmnopqrstuvwxyz0123456789"),
        ),
    ] {
        let (code, err) = start_up(&args, env);
        assert_eq!(code, Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains("weak token"), "unclear refusal: {err}");
    }
}

#[cfg(unix)]
#[test]
fn a_token_file_others_can_read_is_refused_and_a_private_one_works() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("token");
    std::fs::write(&path, format!("{TOKEN}\n")).expect("write the token");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let file = path.display().to_string();
    let (code, err) = start_up(&["--allow-capture", "--token-file", &file], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("chmod 600"), "unclear refusal: {err}");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // Readable by its owner only: the server starts and wants that token
    // (its trailing newline dropped).
    let server = Server::start(&["--token-file", &file]);
    let agent = new_agent();
    open_session(&agent, &server.url);
    let wrong = post(
        &agent,
        &server.url,
        "not-the-token",
        None,
        &initialize_body(),
    );
    assert_eq!(wrong.status, 401);
}

#[test]
fn failed_authentications_are_slowed_but_valid_requests_are_not() {
    let server = Server::start(&[]);
    let agent = new_agent();
    let mut waits = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let a = post(&agent, &server.url, "wrong-token", None, &initialize_body());
        assert_eq!(a.status, 401);
        waits.push(t0.elapsed());
    }
    // 100, 200, 400, 800, 1600 ms: each wait longer than the one before.
    assert!(
        waits[4] >= Duration::from_millis(1500) && waits[4] > waits[0] * 4,
        "failures not slowed: {waits:?}"
    );
    // While a sixth failure waits (3.2 s), the right token is answered at once.
    let url = server.url.clone();
    let slow = std::thread::spawn(move || {
        let t0 = Instant::now();
        let a = post(&new_agent(), &url, "wrong-token", None, &initialize_body());
        (a.status, t0.elapsed())
    });
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    open_session(&agent, &server.url);
    let valid = t0.elapsed();
    let (status, failed) = slow.join().expect("thread");
    assert_eq!(status, 401);
    assert!(
        valid < Duration::from_secs(2) && valid < failed,
        "a valid request waited {valid:?} (the failure {failed:?})"
    );
}

#[test]
fn run_sql_beyond_its_caps_is_refused_while_get_trace_stats_stays_fast() {
    let server = Server::start(&[
        "--sql-timeout",
        "60",
        "--sql-max-concurrent",
        "2",
        "--sql-max-per-session",
        "1",
        "--sql-queue-wait",
        "2",
    ]);
    let agent = new_agent();
    let url = &server.url;
    let (a, b, c) = (
        open_session(&agent, url),
        open_session(&agent, url),
        open_session(&agent, url),
    );
    endless_query(url, &a);
    let second = call(
        &agent,
        url,
        &a,
        "run_sql",
        serde_json::json!({"sql": "SELECT 1"}),
    );
    assert_eq!(second["isError"], serde_json::json!(true), "{second}");
    assert!(
        text_of(&second).contains("this session already runs 1"),
        "unclear refusal: {second}"
    );
    endless_query(url, &b);
    let third = call(
        &agent,
        url,
        &c,
        "run_sql",
        serde_json::json!({"sql": "SELECT 1"}),
    );
    assert_eq!(third["isError"], serde_json::json!(true), "{third}");
    assert!(
        text_of(&third).contains("the server has run 2 queries"),
        "unclear refusal: {third}"
    );
    let t0 = Instant::now();
    let stats = call(&agent, url, &c, "get_trace_stats", serde_json::json!({}));
    let took = t0.elapsed();
    assert_eq!(stats["isError"], serde_json::json!(false), "{stats}");
    assert!(
        took < Duration::from_secs(15),
        "get_trace_stats took {took:?} beside two endless queries"
    );
    eprintln!(
        "get_trace_stats beside two endless run_sql queries: {:.0} ms",
        took.as_secs_f64() * 1000.0
    );
}
