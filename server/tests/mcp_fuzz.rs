//! Fuzzes tool arguments, prompt arguments and resource URIs through the
//! real MCP edge: runs `tests/mcp/fuzz_tool_args.py` (hypothesis and the
//! official Python SDK) against the freshly built `ingero` binary, so every
//! `cargo test` checks that hostile or malformed arguments get a clean error
//! or a schema-valid result, never a panic, a hang or a path outside the
//! allowed folder.
//!
//! A short run by default; `INGERO_FUZZ_EXAMPLES=5000` for a long one.
//! Needs a Python with the pinned packages of `tests/mcp/requirements.txt`:
//! `.venv/bin/python` at the repository root, or `INGERO_MCP_PYTHON`. Without
//! one the test is skipped with a message, unless `INGERO_MCP_E2E=require`.

mod support;

#[test]
fn fuzz_tool_arguments_through_mcp() {
    let Some(python) = support::python("MCP fuzz test", "hypothesis, jsonschema, mcp") else {
        return;
    };
    let status = support::run_script(
        &python,
        "tests/mcp/fuzz_tool_args.py",
        &["--bin", env!("CARGO_BIN_EXE_ingero")],
    );
    assert!(
        status.success(),
        "the MCP argument fuzzer found a defect ({status}); its output above names the example"
    );
}
