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
//! Without the engine the test skips with its reason; with
//! `INGERO_FLEET_TESTS=require` (set by .ci/run) it fails instead.

use ingero_store::TraceDb;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The engine binary, or why there is none.
fn engine() -> Result<PathBuf, String> {
    let path = std::env::var_os("INGERO_FLEET_ENGINE")
        .ok_or("INGERO_FLEET_ENGINE is not set (tests/fleet/install-engine prints the path)")?;
    let path = PathBuf::from(path);
    if !path.is_file() {
        return Err(format!(
            "INGERO_FLEET_ENGINE={} is not a file",
            path.display()
        ));
    }
    Ok(path)
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
    let bin = match engine() {
        Ok(b) => b,
        Err(why) if std::env::var("INGERO_FLEET_TESTS").as_deref() == Ok("require") => {
            panic!("INGERO_FLEET_TESTS=require but no engine: {why}")
        }
        Err(why) => {
            eprintln!("skipping the fleet test: {why}");
            return;
        }
    };
    let nodes = [
        (
            "node-a",
            repo("investigations/pytorch-dataloader-starvation-h200.db"),
        ),
        (
            "node-b",
            repo("investigations/launch-storm-cpu-contention-h200.db"),
        ),
    ];
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
        let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["export", "--format", "otlp", "--db"])
            .arg(path)
            .args(["--endpoint", &format!("{}/opentelemetry", engine.base)])
            .args(["--protocol", "http/protobuf", "--signals", "metrics"])
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
