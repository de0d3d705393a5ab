//! Runs `tests/mcp/test_edge.py` (raw HTTP and stdio, and the official
//! Python SDK) against the built binary: JSON-RPC errors for malformed
//! input, session close, a second loopback address, open_database with and
//! without a session, completion, start-up refusals, the example config.
//!
//! Skipped without the Python venv, unless `INGERO_MCP_E2E=require`.

mod support;

#[test]
fn the_protocol_edge_answers_real_clients() {
    let Some(python) = support::python("MCP edge test", "mcp") else {
        return;
    };
    let status = support::run_script(
        &python,
        "tests/mcp/test_edge.py",
        &["--bin", env!("CARGO_BIN_EXE_ingero")],
    );
    assert!(status.success(), "MCP edge test failed ({status})");
}
