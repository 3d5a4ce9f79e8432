//! Jaeger's query API over the [`SpanIndex`], in front of otlp-embedded's UI (which serves the assets).
//!
//! - `GET /api/traces?service=&operation=&tags=&tag=&minDuration=&maxDuration=&start=&end=&limit=&traceID=`
//!   (see [`TraceQuery`]);
//! - `GET /api/traces/{id}`;
//! - `GET /api/services`: the services of every span;
//! - `GET /api/services/{service}/operations`: the operation of every span of the service, not only roots.
//!
//! An answer is built on the blocking pool under a read lock: a large one (thousands of traces) neither holds
//! up the runtime's workers, which also receive spans, nor lets spans in halfway through.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use tokio::sync::RwLock;

use super::index::SpanIndex;
use super::query::{QueryError, TraceQuery, unhex};
use super::render::{Envelope, jaeger_trace};

pub type SharedIndex = Arc<RwLock<SpanIndex>>;

/// The API routes; every other path goes to `ui` (otlp-embedded's Jaeger UI and its assets).
pub fn router(index: SharedIndex, ui: Router) -> Router {
    Router::new()
        .route("/api/traces", get(traces))
        .route("/api/traces/{id}", get(trace))
        .route("/api/services", get(services))
        .route("/api/services/{service}/operations", get(operations))
        .with_state(index)
        .fallback_service(ui)
}

fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn error(status: StatusCode, message: String) -> Response {
    json(status, &Envelope::<()>::error(status.as_u16(), message))
}

/// Answer from the index on the blocking pool.
async fn answer<F>(index: SharedIndex, build: F) -> Response
where
    F: FnOnce(&SpanIndex) -> Response + Send + 'static,
{
    let index = index.read_owned().await;
    match tokio::task::spawn_blocking(move || build(&index)).await {
        Ok(response) => response,
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn traces(State(index): State<SharedIndex>, RawQuery(query): RawQuery) -> Response {
    let query = match TraceQuery::parse(query.as_deref().unwrap_or("")) {
        Ok(q) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    answer(index, move |index| {
        let data = query.run(index).into_iter().map(jaeger_trace).collect();
        json(StatusCode::OK, &Envelope::data(data))
    })
    .await
}

async fn trace(State(index): State<SharedIndex>, Path(id): Path<String>) -> Response {
    let Some(bytes) = unhex(&id) else {
        return error(
            StatusCode::BAD_REQUEST,
            QueryError::TraceId { value: id }.to_string(),
        );
    };
    answer(index, move |index| match index.get(&bytes) {
        Some(t) => json(StatusCode::OK, &Envelope::data(vec![jaeger_trace(t)])),
        None => error(StatusCode::NOT_FOUND, format!("trace {id} not found")),
    })
    .await
}

async fn services(State(index): State<SharedIndex>) -> Response {
    answer(index, |index| {
        let spans = index.traces().flat_map(|t| t.spans());
        let names: BTreeSet<&str> = spans.map(|s| s.process.service.as_str()).collect();
        json(StatusCode::OK, &Envelope::data(names.into_iter().collect()))
    })
    .await
}

async fn operations(State(index): State<SharedIndex>, Path(service): Path<String>) -> Response {
    answer(index, move |index| {
        let spans = index.traces().flat_map(|t| t.spans());
        let names: BTreeSet<&str> = spans
            .filter(|s| s.process.service == service)
            .map(|s| s.span.name.as_str())
            .collect();
        json(StatusCode::OK, &Envelope::data(names.into_iter().collect()))
    })
    .await
}
