//! Arguments that match nothing in the file, through the real MCP server
//! over stdio (plain JSON-RPC lines): an empty, inverted or out-of-capture
//! window, an unknown pid or rank, an op the file never saw. Each is a tool
//! error naming the capture span, the GPU-driving pids and a corrected
//! call; every answer's text starts with the window it covers.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

/// The committed capture these tests read.
fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
}

/// A running `ingero mcp --db`, initialised.
struct Server {
    child: Child,
    to: ChildStdin,
    from: BufReader<ChildStdout>,
    next_id: i64,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["mcp", "--db"])
            .arg(capture())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start ingero mcp");
        let to = child.stdin.take().expect("stdin");
        let from = BufReader::new(child.stdout.take().expect("stdout"));
        let mut server = Server {
            child,
            to,
            from,
            next_id: 1,
        };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "teaching-test", "version": "1"}}),
        );
        assert!(init["result"].is_object(), "initialize: {init}");
        server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.to, "{message}").expect("write to the server");
        self.to.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self.from.read_line(&mut line).expect("read the answer");
            assert!(n > 0, "the server closed its output");
            let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    /// `tools/call` of `tool`: whether it is an error, and its text.
    fn call(&mut self, tool: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let result = &r["result"];
        let text = result["content"]
            .as_array()
            .and_then(|c| c.iter().find_map(|b| b["text"].as_str()))
            .unwrap_or_default()
            .to_string();
        (result["isError"] == true, text)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What every refusal about this file says: its span, its GPU-driving
/// process and where its CUDA activity is.
fn describes_the_file(text: &str) {
    for part in [
        "the capture is 94.6 s long (0-94.6 s from its start)",
        "GPU-driving processes: pid 2233 (python3)",
        "CUDA calls from +12.5 s to +62.7 s",
        "Corrected call: ",
    ] {
        assert!(text.contains(part), "{part:?} missing: {text}");
    }
}

#[test]
fn windows_that_hold_nothing_are_refused_with_the_span_and_a_corrected_call() {
    let mut s = Server::start();
    let whole = "omit since/until for the whole capture (0-94.6 s)";
    let cuda = "since=\"82.2s\" until=\"31.8s\" (+12.5 s to +62.7 s)";

    let (err, text) = s.call("get_causal_chains", json!({"since": "1h", "until": "1h"}));
    assert!(err, "{text}");
    assert!(
        text.starts_with("empty window: since=\"1h\" and until=\"1h\""),
        "{text}"
    );
    describes_the_file(&text);
    assert!(text.contains(whole) && text.contains(cuda), "{text}");

    let (err, text) = s.call("get_causal_chains", json!({"since": "10s", "until": "20s"}));
    assert!(err, "{text}");
    assert!(text.starts_with("inverted window"), "{text}");
    assert!(
        text.contains("did you mean since=\"20s\" until=\"10s\"?"),
        "{text}"
    );
    describes_the_file(&text);

    let (err, text) = s.call("get_timeline", json!({"since": "2h", "until": "1h"}));
    assert!(err, "{text}");
    assert!(text.starts_with("window outside the capture"), "{text}");
    describes_the_file(&text);
    assert!(text.contains(whole), "{text}");

    // Inside the capture, after the last CUDA call.
    let (err, text) = s.call("get_causal_chains", json!({"since": "30s"}));
    assert!(err, "{text}");
    assert!(
        text.starts_with(
            "no CUDA activity of any process in the window asked (+64.6 s to +94.6 s of 94.6 s)"
        ),
        "{text}"
    );
    describes_the_file(&text);
    assert!(text.contains(cuda), "{text}");
}

#[test]
fn unknown_pids_ranks_and_ops_are_refused_with_what_exists() {
    let mut s = Server::start();
    let (err, text) = s.call("get_causal_chains", json!({"pid": 4242}));
    assert!(err, "{text}");
    assert!(text.starts_with("no process 4242 in this file"), "{text}");
    describes_the_file(&text);
    assert!(text.contains("omit pid for every process"), "{text}");

    let (err, text) = s.call("get_causal_chains", json!({"pid": 1}));
    assert!(err, "{text}");
    assert!(text.starts_with("no CUDA activity of process 1"), "{text}");
    assert!(text.contains("pass a GPU-driving pid"), "{text}");
    describes_the_file(&text);

    let (err, text) = s.call("get_trace_stats", json!({"rank": 3}));
    assert!(err, "{text}");
    assert!(
        text.starts_with("no process of rank 3 in this file; ranks here: none"),
        "{text}"
    );
    describes_the_file(&text);
    assert!(text.contains("omit rank"), "{text}");

    let (err, text) = s.call("get_events", json!({"op": "cudaMemcpyy"}));
    assert!(err, "{text}");
    assert!(
        text.starts_with("unknown op \"cudaMemcpyy\". Closest ops in this file: cudaMemcpyAsync"),
        "{text}"
    );
    assert!(text.contains("cudaStreamSynchronize"), "{text}");
    assert!(
        text.contains("Corrected call: op=\"cudaMemcpyAsync\""),
        "{text}"
    );

    let (err, text) = s.call("get_events", json!({"op": "cudaMemcpy"}));
    assert!(err, "{text}");
    assert!(
        text.starts_with("op \"cudaMemcpy\" is a CUDA function this file never recorded"),
        "{text}"
    );
}

#[test]
fn answers_start_with_their_window_and_take_the_durations_models_write() {
    let mut s = Server::start();
    for tool in [
        "explain",
        "get_causal_chains",
        "get_trace_stats",
        "get_per_process_breakdown",
        "get_timeline",
        "get_stacks",
        "get_events",
        "get_rank_report",
    ] {
        let (err, text) = s.call(tool, json!({}));
        assert!(!err, "{tool}: {text}");
        assert!(
            text.starts_with("Window: whole capture, 0-94.6 s."),
            "{tool}: {text}"
        );
    }
    for since in [
        json!(60),
        json!("60"),
        json!("60 s"),
        json!("1 minute"),
        json!("PT1M"),
        json!("1m"),
    ] {
        let (err, text) = s.call("get_causal_chains", json!({"since": since}));
        assert!(!err, "{since}: {text}");
        assert!(
            text.starts_with("Window: +34.6 s to +94.6 s of 94.6 s."),
            "{since}: {text}"
        );
    }
    let (err, text) = s.call(
        "get_causal_chains",
        json!({"since": "PT1M30S", "until": "1.5 minutes"}),
    );
    assert!(err, "{text}");
    let (err, text) = s.call("get_causal_chains", json!({"since": "soon"}));
    assert!(err, "{text}");
    assert!(
        text.contains("PT1M30S") && text.contains("2 minutes"),
        "{text}"
    );
}
