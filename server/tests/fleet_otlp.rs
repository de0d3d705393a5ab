//! A fleet view of two hosts through a real OpenTelemetry engine, on
//! loopback: VictoriaMetrics (Debian's `victoria-metrics`, installed by
//! `tests/fleet/install-engine`, found through `INGERO_FLEET_ENGINE`) receives
//! `ingero export --format otlp --protocol http/protobuf --signals metrics`
//! of two committed H200 captures, sent as `--node node-a` and
//! `--node node-b`; its own query API (PromQL/MetricsQL at /api/v1/query)
//! must then show both nodes, each with the CUDA call count, CUDA time, host
//! event count and duration, per-function call counts, process count and
//! system-sample count that SQL on that node's file gives.
//!
//! No trace store in the registries reachable here keeps resource
//! attributes, so the spans of the same two exports, in binary protobuf, go
//! to `tests/fleet/otlp_sink.py`, which decodes them with the official
//! OpenTelemetry protobuf bindings (`opentelemetry-proto`, in the Python
//! that `INGERO_FLEET_PYTHON` names) and counts them per `host.name`.
//!
//! Without the engine (or that Python) a test skips with its reason; with
//! `INGERO_FLEET_TESTS=require` (set by .ci/run) it fails instead.

use ingero_store::TraceDb;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The file that environment variable `var` names, or why there is none.
fn tool(var: &str, what: &str) -> Result<PathBuf, String> {
    let path =
        std::env::var_os(var).ok_or(format!("{var} is not set ({what}; .ci/run sets it)"))?;
    let path = PathBuf::from(path);
    if !path.is_file() {
        return Err(format!("{var}={} is not a file", path.display()));
    }
    Ok(path)
}

/// `tool(var)`, or `None` after saying why the test skips; a panic when
/// `INGERO_FLEET_TESTS=require`.
fn tool_or_skip(var: &str, what: &str) -> Option<PathBuf> {
    match tool(var, what) {
        Ok(p) => Some(p),
        Err(why) if std::env::var("INGERO_FLEET_TESTS").as_deref() == Ok("require") => {
            panic!("INGERO_FLEET_TESTS=require but {why}")
        }
        Err(why) => {
            eprintln!("skipping the fleet test: {why}");
            None
        }
    }
}

/// The two nodes: name and capture.
fn nodes() -> [(&'static str, PathBuf); 2] {
    [
        (
            "node-a",
            repo("investigations/pytorch-dataloader-starvation-h200.db"),
        ),
        (
            "node-b",
            repo("investigations/launch-storm-cpu-contention-h200.db"),
        ),
    ]
}

/// `ingero export --format otlp` of `db` as `node` in binary protobuf.
fn export(db: &Path, node: &str, endpoint: &str, signals: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["export", "--format", "otlp", "--db"])
        .arg(db)
        .args(["--endpoint", endpoint])
        .args(["--protocol", "http/protobuf", "--signals", signals])
        .args(["--node", node])
        .output()
        .expect("run ingero export");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "export {node}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("(node {node})")), "{stdout}");
}

/// A running VictoriaMetrics on a loopback port, stopped on drop.
struct Engine {
    child: Child,
    base: String,
    _data: tempfile::TempDir,
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(20)))
        .http_status_as_error(false)
        .build()
        .into()
}

/// GET `url`: status and body.
fn get(url: &str) -> Result<(u16, String), String> {
    let mut resp = agent().get(url).call().map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let body = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    Ok((status, body))
}

impl Engine {
    /// Starts the engine on a free loopback port (another try on a port taken
    /// in between), keeping its data in a temporary folder.
    fn start(bin: &Path) -> Engine {
        let mut last = String::new();
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("free port")
                .port();
            let data = tempfile::tempdir().expect("tempdir");
            let child = Command::new(bin)
                .arg(format!("-httpListenAddr=127.0.0.1:{port}"))
                .arg(format!("-storageDataPath={}", data.path().display()))
                // The captures are older than the default month of retention.
                .arg("-retentionPeriod=100y")
                .arg("-loggerLevel=ERROR")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
            let mut engine = Engine {
                child,
                base: format!("http://127.0.0.1:{port}"),
                _data: data,
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if let Ok(Some(status)) = engine.child.try_wait() {
                    let mut err = String::new();
                    if let Some(mut e) = engine.child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut e, &mut err);
                    }
                    last = format!("exited with {status}: {err}");
                    break;
                }
                if matches!(get(&format!("{}/health", engine.base)), Ok((200, _))) {
                    return engine;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            if last.is_empty() {
                last = "not healthy within 60 s".into();
            }
        }
        panic!("VictoriaMetrics did not start: {last}");
    }

    /// Makes everything received so far searchable.
    fn flush(&self) {
        let (status, body) =
            get(&format!("{}/internal/force_flush", self.base)).expect("force_flush");
        assert_eq!(status, 200, "force_flush: {body}");
    }

    /// An instant query at `time` (Unix seconds): each series' labels and value.
    fn query(&self, promql: &str, time: i64) -> Vec<(BTreeMap<String, String>, f64)> {
        let mut resp = agent()
            .get(format!("{}/api/v1/query", self.base))
            .query("query", promql)
            .query("time", time.to_string())
            .call()
            .unwrap_or_else(|e| panic!("query {promql}: {e}"));
        let text = resp.body_mut().read_to_string().expect("query body");
        let v: Value = serde_json::from_str(&text).expect("query JSON");
        assert_eq!(v["status"], "success", "{promql}: {text}");
        v["data"]["result"]
            .as_array()
            .expect("result")
            .iter()
            .map(|r| {
                let labels = r["metric"]
                    .as_object()
                    .expect("labels")
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect();
                let value = r["value"][1]
                    .as_str()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("{promql}: value of {r}"));
                (labels, value)
            })
            .collect()
    }

    /// `query` grouped by `host.name`: node -> value.
    fn per_node(&self, promql: &str, time: i64) -> BTreeMap<String, f64> {
        self.query(promql, time)
            .into_iter()
            .map(|(l, v)| (l.get("host.name").cloned().unwrap_or_default(), v))
            .collect()
    }
}

/// What SQL on one capture says the engine must show for its node.
#[derive(Debug)]
struct Expected {
    cuda_calls: i64,
    cuda_ns: i64,
    host_events: i64,
    host_ns: i64,
    cuda_pids: i64,
    snapshots: i64,
    per_function: BTreeMap<String, i64>,
    first_ns: i64,
    last_ns: i64,
}

fn expected(path: &Path) -> Expected {
    let db = TraceDb::open(path).expect("open capture");
    let conn = db.conn();
    let one = |sql: &str| -> i64 {
        conn.query_row(sql, [], |r| r.get(0))
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    let mut stmt = conn
        .prepare(
            "SELECT o.name, SUM(a.count) FROM aggregates a JOIN cuda_ops o ON o.id = a.code \
             WHERE a.source = 1 GROUP BY o.name",
        )
        .expect("prepare");
    let per_function = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
        .expect("per function")
        .collect::<Result<_, _>>()
        .expect("rows");
    Expected {
        cuda_calls: one("SELECT COALESCE(SUM(count), 0) FROM aggregates WHERE source = 1"),
        cuda_ns: one("SELECT COALESCE(SUM(sum_dur_ns), 0) FROM aggregates WHERE source = 1"),
        host_events: one("SELECT COALESCE(SUM(count), 0) FROM aggregates WHERE source = 2"),
        host_ns: one("SELECT COALESCE(SUM(sum_dur_ns), 0) FROM aggregates WHERE source = 2"),
        cuda_pids: one("SELECT COUNT(DISTINCT pid) FROM aggregates WHERE source = 1"),
        snapshots: one("SELECT COUNT(*) FROM system_snapshots"),
        per_function,
        first_ns: one(
            "SELECT MIN(t) FROM (SELECT MIN(started_ns) AS t FROM sessions \
             UNION ALL SELECT MIN(bucket_ns) FROM aggregates)",
        ),
        last_ns: one(
            "SELECT MAX(t) FROM (SELECT MAX(stopped_ns) AS t FROM sessions \
             UNION ALL SELECT MAX(bucket_ns) FROM aggregates \
             UNION ALL SELECT MAX(ts_ns) FROM system_snapshots)",
        ),
    }
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

#[test]
fn two_nodes_in_one_victoriametrics() {
    let Some(bin) = tool_or_skip(
        "INGERO_FLEET_ENGINE",
        "the victoria-metrics binary tests/fleet/install-engine prints",
    ) else {
        return;
    };
    let nodes = nodes();
    let want: BTreeMap<&str, Expected> = nodes.iter().map(|(n, p)| (*n, expected(p))).collect();
    for (node, w) in &want {
        assert!(w.cuda_calls > 0 && w.snapshots > 0, "{node}: {w:?}");
    }
    assert_ne!(
        want["node-a"].cuda_calls, want["node-b"].cuda_calls,
        "two different captures"
    );

    let engine = Engine::start(&bin);
    for (node, path) in &nodes {
        export(
            path,
            node,
            &format!("{}/opentelemetry", engine.base),
            "metrics",
        );
    }
    engine.flush();

    // One instant query after both captures, looking back past both starts.
    let first = want.values().map(|w| w.first_ns).min().unwrap_or_default() / 1_000_000_000;
    let last = want.values().map(|w| w.last_ns).max().unwrap_or_default() / 1_000_000_000;
    let at = last + 600;
    let window = format!("[{}s]", at - first + 600);
    let m = |name: &str| format!("{{__name__=\"{name}\"}}");
    // A cumulative series' last point is its total.
    let total = |name: &str| {
        engine.per_node(
            &format!("sum by (host.name) (last_over_time({}{window}))", m(name)),
            at,
        )
    };

    let (status, body) = get(&format!(
        "{}/api/v1/label/host.name/values?start={}&end={at}",
        engine.base,
        first - 600
    ))
    .expect("label values");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("JSON");
    let hosts: BTreeSet<&str> = v["data"]
        .as_array()
        .expect("values")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(hosts, BTreeSet::from(["node-a", "node-b"]), "{body}");

    let check = |what: &str, got: &BTreeMap<String, f64>, pick: &dyn Fn(&Expected) -> i64| {
        for (node, w) in &want {
            let expect = pick(w);
            let seen = got.get(*node).copied().unwrap_or(0.0);
            eprintln!("{node} {what}: engine {seen}, SQL {expect}");
            assert_eq!(seen, expect as f64, "{node} {what}: {got:?}");
        }
        assert_eq!(got.len(), want.len(), "{what}: only the two nodes: {got:?}");
    };
    check("CUDA calls", &total("ingero.cuda.calls"), &|w| w.cuda_calls);
    check("CUDA time ns", &total("ingero.cuda.duration"), &|w| {
        w.cuda_ns
    });
    check("host events", &total("ingero.host.events"), &|w| {
        w.host_events
    });
    check("host event ns", &total("ingero.host.duration"), &|w| {
        w.host_ns
    });
    check(
        "CUDA processes",
        &engine.per_node(
            &format!(
                "count by (host.name) (count by (host.name, process.pid) (last_over_time({}{window})))",
                m("ingero.cuda.calls")
            ),
            at,
        ),
        &|w| w.cuda_pids,
    );
    check(
        "system samples",
        &engine.per_node(
            &format!(
                "sum by (host.name) (count_over_time({}{window}))",
                m("system.cpu.utilization")
            ),
            at,
        ),
        &|w| w.snapshots,
    );

    // Calls per CUDA function and node.
    let rows = engine.query(
        &format!(
            "sum by (host.name, cuda.function) (last_over_time({}{window}))",
            m("ingero.cuda.calls")
        ),
        at,
    );
    for (node, w) in &want {
        let got: BTreeMap<String, i64> = rows
            .iter()
            .filter(|(l, _)| l.get("host.name").map(String::as_str) == Some(*node))
            .map(|(l, v)| (l["cuda.function"].clone(), *v as i64))
            .collect();
        assert_eq!(got, w.per_function, "{node} per function");
        eprintln!("{node} calls per function: {got:?}");
    }

    // Every series names its node twice, as OpenTelemetry's conventions ask:
    // host.name and service.instance.id.
    let ids = engine.query(
        &format!(
            "count by (host.name, service.instance.id, service.name) (last_over_time({{__name__=~\"ingero[.].*|system[.].*\"}}{window}))"
        ),
        at,
    );
    assert_eq!(ids.len(), 2, "{ids:?}");
    for (l, _) in &ids {
        assert_eq!(l.get("service.instance.id"), l.get("host.name"), "{l:?}");
        assert_eq!(l.get("service.name").map(String::as_str), Some("ingero"));
    }
}

/// The sink of `tests/fleet/otlp_sink.py`, stopped on drop.
struct Sink {
    child: Child,
    base: String,
}

impl Drop for Sink {
    fn drop(&mut self) {
        // Closing its stdin ends it; kill in case it hangs.
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn spans_of_two_nodes_decode_with_the_official_bindings() {
    let Some(python) = tool_or_skip(
        "INGERO_FLEET_PYTHON",
        "a Python with the opentelemetry-proto package",
    ) else {
        return;
    };
    let mut child = Command::new(&python)
        .arg(repo("tests/fleet/otlp_sink.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", python.display()));
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
        .expect("port line");
    let port: u16 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("otlp_sink.py printed {line:?}, not a port"));
    let sink = Sink {
        child,
        base: format!("http://127.0.0.1:{port}"),
    };

    let nodes = nodes();
    for (node, path) in &nodes {
        export(path, node, &sink.base, "traces");
    }
    let (status, body) = get(&format!("{}/counts", sink.base)).expect("counts");
    assert_eq!(status, 200, "{body}");
    let counts: Value = serde_json::from_str(&body).expect("JSON");
    let seen: BTreeSet<&str> = counts
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(seen, BTreeSet::from(["node-a", "node-b"]), "{body}");
    for (node, path) in &nodes {
        let db = TraceDb::open(path).expect("open capture");
        let (calls, pids): (i64, i64) = db
            .conn()
            .query_row(
                "SELECT COUNT(*), COUNT(DISTINCT pid) FROM cuda_calls",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .expect("cuda_calls");
        let c = &counts[*node];
        eprintln!("{node} spans: {c}; SQL: {calls} CUDA calls by {pids} processes");
        assert_eq!(c["cuda_spans"], calls, "{node}: one span per CUDA call");
        assert_eq!(c["pids"], pids, "{node}: one resource per process");
        assert!(
            c["spans"].as_i64() > Some(calls),
            "{node}: roots and off-CPU too"
        );
        assert_eq!(c["bad"], 0, "{node}: 16-byte trace ids, 8-byte span ids");
    }
}
