//! `ingero mcp` over stdin/stdout: one session, logs on stderr only.

use super::server::IngeroMcp;
use super::Config;
use rmcp::ServiceExt;

/// Serves one MCP session on stdio until the client closes it.
pub async fn serve(config: Config) -> anyhow::Result<()> {
    let shared = IngeroMcp::shared(config)?;
    let running = IngeroMcp::new(shared)
        .serve(rmcp::transport::stdio())
        .await?;
    tracing::info!("serving MCP on stdio");
    let reason = running.waiting().await?;
    tracing::info!(?reason, "stdio session ended");
    Ok(())
}
