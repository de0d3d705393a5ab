//! The tool catalogue as clients see it, and the edge every `tools/call`
//! passes: arguments checked against the advertised input schema first,
//! error texts shortened last.

use super::arguments::ArgumentCheck;
use super::error_text::{shorten, shorten_error_result};
use super::lean::{drop_nulls, lean_input};
use super::schema::{portable, Side};
use super::server::{failure, IngeroMcp};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolRequestParams, CallToolResponse, ContentBlock, JsonObject, Tool};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;

impl IngeroMcp {
    /// Every tool, with input and output schemas in their portable form.
    pub(crate) fn tool_router() -> ToolRouter<IngeroMcp> {
        let mut router = Self::analysis_router()
            + Self::sql_router()
            + Self::databases_router()
            + Self::capture_router()
            + Self::merge_router()
            + Self::compare_router();
        for route in router.map.values_mut() {
            make_portable(&mut route.attr);
        }
        router
    }

    /// Answers `tools/call`: refuses arguments the tool's input schema does
    /// not allow, runs the tool, and shortens any value quoted in an error.
    pub(crate) async fn call_checked(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        drop_nulls(&mut request.arguments);
        let notes = self
            .shared
            .arguments
            .set_aside(&request.name, &mut request.arguments);
        let checked = self
            .shared
            .arguments
            .check(&request.name, request.arguments.as_ref());
        if let Err(message) = checked {
            return Ok(failure(message).into());
        }
        let call = ToolCallContext::new(self, request, context);
        match self.shared.router.call(call).await {
            Ok(CallToolResponse::Complete(mut result)) => {
                result
                    .content
                    .extend(notes.into_iter().map(ContentBlock::text));
                Ok(shorten_error_result(result).into())
            }
            Ok(other) => Ok(other),
            Err(mut error) => {
                if let Cow::Owned(short) = shorten(&error.message) {
                    error.message = short.into();
                }
                Err(error)
            }
        }
    }
}

/// Replaces every tool's advertised input schema by its lean form (what a
/// model reads on every request); the argument check keeps the full one.
pub(crate) fn advertise_lean(router: &mut ToolRouter<IngeroMcp>) {
    for route in router.map.values_mut() {
        route.attr.input_schema = Arc::new(lean_input(&route.attr.input_schema));
    }
}

/// The argument check for the tools of `router`.
pub(crate) fn argument_check(router: &ToolRouter<IngeroMcp>) -> anyhow::Result<ArgumentCheck> {
    ArgumentCheck::new(router.map.values().map(|route| &route.attr))
}

/// Rewrites `tool`'s schemas with [`portable`]; its input schema also
/// closes the arguments object, so an argument the tool does not have
/// (a misspelt or guessed name) is refused instead of silently ignored.
fn make_portable(tool: &mut Tool) {
    tool.input_schema = closed(&rewritten(&tool.input_schema, Side::Input));
    if let Some(output) = &tool.output_schema {
        tool.output_schema = Some(rewritten(output, Side::Output));
    }
}

/// `schema` with `additionalProperties: false` at its root.
fn closed(schema: &Arc<JsonObject>) -> Arc<JsonObject> {
    let mut map = schema.as_ref().clone();
    map.insert("additionalProperties".to_string(), Value::Bool(false));
    Arc::new(map)
}

/// A portable copy of `schema`.
fn rewritten(schema: &Arc<JsonObject>, side: Side) -> Arc<JsonObject> {
    let mut value = Value::Object(schema.as_ref().clone());
    portable(&mut value, side);
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::clone(schema),
    }
}
