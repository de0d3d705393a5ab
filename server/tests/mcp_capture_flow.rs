//! Runs the capture flow test (`tests/mcp/test_capture_flow.py`, official
//! Python SDK) against the freshly built `ingero` binary: list the GPU
//! processes, start a bounded capture of a stand-in CUDA job, poll its
//! status, investigate the new database; and the refusals and operator
//! limits around it.
//!
//! Needs the Python of `tests/mcp/requirements.txt` (skipped without one
//! unless `INGERO_MCP_E2E=require`) and root for eBPF (the script fails
//! without it when `INGERO_EBPF_TESTS=require`).

mod support;

#[test]
fn capture_flow_with_the_python_sdk() {
    let Some(python) = support::python("MCP capture flow test", "mcp, jsonschema") else {
        return;
    };
    let status = support::run_script(
        &python,
        "tests/mcp/test_capture_flow.py",
        &["--bin", env!("CARGO_BIN_EXE_ingero")],
    );
    assert!(status.success(), "MCP capture flow test failed ({status})");
}
