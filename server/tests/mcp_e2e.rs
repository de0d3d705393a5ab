//! Runs the MCP end-to-end test (`tests/mcp/test_mcp.py`, official Python
//! SDK) against the freshly built `ingero` binary, over stdio and HTTP.
//!
//! Needs a Python with the pinned packages of `tests/mcp/requirements.txt`:
//! `.venv/bin/python` at the repository root, or `INGERO_MCP_PYTHON`. Without
//! one the test is skipped with a message, unless `INGERO_MCP_E2E=require`.

mod support;

#[test]
fn mcp_end_to_end_with_the_python_sdk() {
    let Some(python) = support::python("MCP e2e test", "mcp, jsonschema") else {
        return;
    };
    let status = support::run_script(
        &python,
        "tests/mcp/test_mcp.py",
        &["--bin", env!("CARGO_BIN_EXE_ingero")],
    );
    assert!(status.success(), "MCP end-to-end test failed ({status})");
}
