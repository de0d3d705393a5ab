//! Short HTTP load test of `ingero mcp --http`: runs `tests/mcp/load_http.py`
//! against the freshly built binary with 64 concurrent sessions making mixed
//! calls for a bounded time. The script fails on any unsuccessful response,
//! on sessions that outlive their DELETE, and on RSS growth after warm-up
//! beyond its bound; it asserts nothing about speed.
//!
//! Needs a Python with the pinned packages of `tests/mcp/requirements.txt`:
//! `.venv/bin/python` at the repository root, or `INGERO_MCP_PYTHON`. Without
//! one the test is skipped with a message, unless `INGERO_MCP_E2E=require`.

mod support;

/// Seconds of load; long enough for sessions to be recycled many times.
const SECONDS: &str = "16";
/// Sessions live at once.
const SESSIONS: &str = "64";

#[test]
fn http_server_under_64_sessions_of_mixed_calls() {
    let Some(python) = support::python("MCP load test", "httpx2, anyio, jsonschema") else {
        return;
    };
    let db =
        support::root().join("tests/data/ingero-investigations/pytorch-dataloader-starvation.db");
    let status = support::run_script(
        &python,
        "tests/mcp/load_http.py",
        &[
            "--bin",
            env!("CARGO_BIN_EXE_ingero"),
            "--sessions",
            SESSIONS,
            "--seconds",
            SECONDS,
            "--db",
            &db.display().to_string(),
        ],
    );
    assert!(status.success(), "MCP HTTP load test failed ({status})");
}
