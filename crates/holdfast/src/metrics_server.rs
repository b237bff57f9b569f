//! `GET /metrics`: the process's Prometheus metrics in the OpenMetrics text
//! format.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use axum::Router;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::routing::get;
use holdfast_ha::metrics::{Registry, encode};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Binds `addr` (failing at once, naming it, if it cannot) and serves the
/// registry there in the background. Returns the bound address.
pub async fn serve(addr: SocketAddr, registry: Arc<Registry>) -> Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot serve metrics on {addr}"))?;
    let bound = listener.local_addr()?;
    let app = Router::new().route(
        "/metrics",
        get(move || {
            let registry = registry.clone();
            async move { ([(CONTENT_TYPE, OPENMETRICS)], encode(&registry)).into_response() }
        }),
    );
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the metrics endpoint stopped; metrics are no longer served");
        }
    });
    Ok(bound)
}
