//! JSON-RPC answers at the HTTP edge for what rmcp answers in plain text.
//!
//! rmcp replies 415 "Unsupported Media Type" to a body that is not a
//! JSON-RPC message, even when the `Content-Type` is right, and 202 to a
//! session `DELETE`. JSON-RPC 2.0 says unparsable JSON gets a -32700 error
//! and a malformed message -32600, and the MCP clients expect 200 or 204
//! from `DELETE`. This middleware sits in front of rmcp and fixes both,
//! leaving every other request untouched. Reading the body, it also holds
//! the body's deadline (408 when the client stops sending) and marks an
//! `initialize` request for the session cap ([`OpensSession`]).

use axum::body::{to_bytes, Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ClientJsonRpcMessage;
use serde_json::{json, Value};
use std::time::Duration;

use super::http_sessions::OpensSession;

/// JSON-RPC "Parse error": the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC "Invalid Request": JSON, but not a JSON-RPC message.
pub const INVALID_REQUEST: i64 = -32600;

/// What the edge decided about one message (a POST body, a stdio line).
#[derive(Debug, PartialEq)]
pub enum BodyVerdict {
    /// A JSON-RPC message rmcp can read: pass it on.
    Forward,
    /// Refused with this JSON-RPC error code, message and request id.
    Refuse {
        /// -32700 or -32600.
        code: i64,
        /// Why, for the client.
        message: String,
        /// The request's id when one could be read, else JSON null.
        id: Value,
    },
}

/// Judges one message that claims to be JSON; `unit` names it in the
/// error text ("body" over HTTP, "line" on stdio).
pub fn judge_message(message: &[u8], unit: &str) -> BodyVerdict {
    let value: Value = match serde_json::from_slice(message) {
        Ok(v) => v,
        Err(e) => {
            return BodyVerdict::Refuse {
                code: PARSE_ERROR,
                message: format!("Parse error: the {unit} is not valid JSON ({e})"),
                id: Value::Null,
            }
        }
    };
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    if value.is_array() {
        return BodyVerdict::Refuse {
            code: INVALID_REQUEST,
            message: format!(
                "Invalid Request: JSON-RPC batches are not part of MCP; send one message per {unit}"
            ),
            id: Value::Null,
        };
    }
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(_) => BodyVerdict::Forward,
        Err(e) => BodyVerdict::Refuse {
            code: INVALID_REQUEST,
            message: format!(
                "Invalid Request: not a JSON-RPC 2.0 request, notification or response ({e})"
            ),
            id,
        },
    }
}

/// A JSON-RPC error response with no request behind it (or the given id).
pub fn error_response(code: i64, message: &str, id: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .eq_ignore_ascii_case("application/json")
        })
}

fn jsonrpc_error(code: i64, message: String, id: Value) -> Response {
    let body = error_response(code, &message, id);
    let mut response = (StatusCode::BAD_REQUEST, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether `message` (already judged a JSON-RPC message) is an `initialize` request.
fn is_initialize(message: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Head {
        method: Option<String>,
        id: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Head>(message)
        .is_ok_and(|h| h.id.is_some() && h.method.as_deref() == Some("initialize"))
}

/// The middleware: checks JSON POST bodies (at most `max_body` bytes, the
/// size cap applied outside it, arriving within `body_time`) and turns a
/// successful `DELETE`'s 202 into 204.
pub async fn edge(max_body: usize, body_time: Duration, request: Request, next: Next) -> Response {
    if request.method() == Method::DELETE {
        let mut response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::NO_CONTENT;
            *response.body_mut() = Body::empty();
            response.headers_mut().remove(header::CONTENT_TYPE);
            response.headers_mut().remove(header::CONTENT_LENGTH);
        }
        return response;
    }
    if request.method() != Method::POST || !is_json(&request) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match tokio::time::timeout(body_time, to_bytes(body, max_body)).await {
        Ok(Ok(b)) => b,
        Err(_) => {
            tracing::warn!("a request body did not arrive in time");
            let mut response = (
                StatusCode::REQUEST_TIMEOUT,
                format!(
                    "Request Timeout: the body did not arrive within {} s",
                    body_time.as_secs_f64()
                ),
            )
                .into_response();
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
        Ok(Err(_)) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: request body exceeds {max_body} bytes"),
            )
                .into_response()
        }
    };
    match judge_message(&bytes, "body") {
        BodyVerdict::Forward => {
            let opens = is_initialize(&bytes);
            let mut request = Request::from_parts(parts, Body::from(bytes));
            if opens {
                request.extensions_mut().insert(OpensSession);
            }
            next.run(request).await
        }
        BodyVerdict::Refuse { code, message, id } => jsonrpc_error(code, message, id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<i64> {
        match judge_message(body.as_bytes(), "body") {
            BodyVerdict::Forward => None,
            BodyVerdict::Refuse { code, .. } => Some(code),
        }
    }

    #[test]
    fn unparsable_json_is_a_parse_error() {
        assert_eq!(code("{\"jsonrpc\": \"2.0\", "), Some(PARSE_ERROR));
        assert_eq!(code("not json"), Some(PARSE_ERROR));
        assert_eq!(code(""), Some(PARSE_ERROR));
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request() {
        assert_eq!(code("42"), Some(INVALID_REQUEST));
        assert_eq!(code("{\"hello\": 1}"), Some(INVALID_REQUEST));
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Some(INVALID_REQUEST)
        );
    }

    #[test]
    fn messages_pass() {
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), None);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":7,"method":"no/such"}"#), None);
    }

    #[test]
    fn the_id_is_kept_when_it_can_be_read() {
        match judge_message(br#"{"id": 9, "method": 3}"#, "body") {
            BodyVerdict::Refuse { id, .. } => assert_eq!(id, json!(9)),
            other => panic!("{other:?}"),
        }
    }
}
