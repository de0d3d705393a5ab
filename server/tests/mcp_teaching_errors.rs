//! Arguments that match nothing in the file, through the real MCP server
//! over stdio (plain JSON-RPC lines): an empty, inverted or out-of-capture
//! window, an unknown pid or rank, an op the file never saw. Each is a tool
//! error naming the capture span, the GPU-driving pids and a corrected
//! call; every answer's text starts with the window it covers.

mod stdio_client;

use serde_json::json;
use std::path::PathBuf;
use stdio_client::StdioServer;

/// The committed capture these tests read.
fn capture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
}

/// A running `ingero mcp --db` on [`capture`], initialised.
fn start() -> StdioServer {
    StdioServer::start([std::ffi::OsString::from("--db"), capture().into_os_string()])
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
    let mut s = start();
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
    let mut s = start();
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
    let mut s = start();
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
