//! Delivery of OTLP/HTTP requests, keeping "the receiver is down" (a
//! network failure) apart from "the receiver said no" (an HTTP status).

use crate::error::{ReportError, Result};
use std::time::Duration;

/// Sends OTLP requests to one receiver.
pub struct Sender {
    agent: ureq::Agent,
}

impl Sender {
    /// A sender giving up on a request after `timeout`.
    pub fn new(timeout: Duration) -> Sender {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .build();
        Sender {
            agent: config.into(),
        }
    }

    /// POSTs one body of `content_type`; any 2xx status is success.
    pub fn post(&self, url: &str, content_type: &str, body: &[u8]) -> Result<()> {
        let mut resp = self
            .agent
            .post(url)
            .header("Content-Type", content_type)
            .send(body)
            .map_err(|e| ReportError::Network {
                url: url.to_string(),
                message: e.to_string(),
            })?;
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(());
        }
        let text = resp
            .body_mut()
            .read_to_string()
            .unwrap_or_else(|e| format!("(body unreadable: {e})"));
        let body: String = text.chars().take(300).collect();
        Err(ReportError::Rejected {
            url: url.to_string(),
            status,
            body,
        })
    }
}
