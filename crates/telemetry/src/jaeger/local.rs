//! Spans into the embedded collector's index without a network hop: the same OTLP data a gRPC exporter would
//! send (`ResourceSpans`), handed over when the run is flushed. `--jaeger` uses it; `--otlp-endpoint` sends
//! over OTLP/gRPC.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, Status};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanProcessor};
use otlp_embedded::proto::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use otlp_embedded::proto::resource::v1::Resource as ProtoResource;
use otlp_embedded::proto::trace::v1::{ResourceSpans, ScopeSpans, Span, span};

use super::api::SharedIndex;
use super::index::SpanIndex;

/// Spans kept at most while a run goes; beyond it they go into the index at once if it is free, else they are
/// dropped (and counted: the flush then fails, naming how many).
const MAX_BUFFERED_SPANS: usize = 1 << 16;

/// A span processor that keeps a run's finished spans in memory and puts them into the embedded collector's
/// index when the run is flushed, on the flushing thread: no thread, no queue and no network per run, so a
/// traced run costs little more than an untraced one. Spans go in as the same OTLP `ResourceSpans` a gRPC
/// exporter would send. The flush must not be called from inside a tokio runtime (it takes the index's lock
/// blocking).
#[derive(Debug)]
pub struct LocalProcessor {
    index: SharedIndex,
    /// The run's wall-clock start, onto which its simulated times are shifted.
    wall0: SystemTime,
    resource: Vec<KeyValue>,
    spans: Mutex<Vec<SpanData>>,
    dropped: AtomicU64,
}

impl LocalProcessor {
    pub(super) fn new(index: SharedIndex, wall0: SystemTime) -> Self {
        Self {
            index,
            wall0,
            resource: Vec::new(),
            spans: Mutex::new(Vec::new()),
            dropped: AtomicU64::new(0),
        }
    }

    fn take(&self) -> Vec<SpanData> {
        std::mem::take(&mut *self.spans.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Put `batch` into the index with `lock` (blocking, or trying).
    fn record<'a>(
        &'a self,
        batch: Vec<SpanData>,
        lock: impl FnOnce(&'a SharedIndex) -> Option<tokio::sync::RwLockWriteGuard<'a, SpanIndex>>,
    ) -> Result<u64, Vec<SpanData>> {
        let Some(mut index) = lock(&self.index) else {
            return Err(batch);
        };
        let spans = batch
            .into_iter()
            .map(|mut s| {
                crate::tracer::to_virtual_time(&mut s, self.wall0);
                span(s)
            })
            .collect();
        let batch = ResourceSpans {
            resource: Some(ProtoResource {
                attributes: self.resource.clone(),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            schema_url: String::new(),
        };
        Ok(index.record(batch))
    }
}

impl SpanProcessor for LocalProcessor {
    fn on_start(&self, _span: &mut opentelemetry_sdk::trace::Span, _cx: &opentelemetry::Context) {}

    fn on_end(&self, span: SpanData) {
        let mut spans = self.spans.lock().unwrap_or_else(|e| e.into_inner());
        spans.push(span);
        if spans.len() < MAX_BUFFERED_SPANS {
            return;
        }
        let full = std::mem::take(&mut *spans);
        drop(spans);
        // A long run: into the index now if nobody holds it (this may be the simulation's thread).
        if let Err(rest) = self.record(full, |i| i.try_write().ok()) {
            self.dropped.fetch_add(rest.len() as u64, Ordering::Relaxed);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        let batch = self.take();
        let refused = match self.record(batch, |i| Some(i.blocking_write())) {
            Ok(n) => n,
            Err(_) => unreachable!("a blocking lock is always taken"),
        };
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        match refused + dropped {
            0 => Ok(()),
            n => Err(OTelSdkError::InternalFailure(format!(
                "{n} spans lost (beyond the collector's byte budget for one trace, or {MAX_BUFFERED_SPANS} \
                 waiting while the index was busy)"
            ))),
        }
    }

    fn shutdown_with_timeout(&self, _timeout: std::time::Duration) -> OTelSdkResult {
        self.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource
            .iter()
            .map(|(k, v)| key_value(k.as_str(), v))
            .collect();
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn span(s: SpanData) -> Span {
    let parent = if s.parent_span_id == SpanId::INVALID {
        Vec::new()
    } else {
        s.parent_span_id.to_bytes().to_vec()
    };
    let (code, message) = match &s.status {
        Status::Unset => (0, String::new()),
        Status::Ok => (1, String::new()),
        Status::Error { description } => (2, description.to_string()),
    };
    Span {
        trace_id: s.span_context.trace_id().to_bytes().to_vec(),
        span_id: s.span_context.span_id().to_bytes().to_vec(),
        parent_span_id: parent,
        name: s.name.into_owned(),
        kind: span_kind(&s.span_kind),
        start_time_unix_nano: nanos(s.start_time),
        end_time_unix_nano: nanos(s.end_time),
        attributes: attributes(&s.attributes),
        events: s.events.events.iter().map(event).collect(),
        links: s.links.links.iter().map(link).collect(),
        status: Some(otlp_embedded::proto::trace::v1::Status { code, message }),
        ..Default::default()
    }
}

fn span_kind(kind: &opentelemetry::trace::SpanKind) -> i32 {
    use opentelemetry::trace::SpanKind;
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

fn event(e: &opentelemetry::trace::Event) -> span::Event {
    span::Event {
        time_unix_nano: nanos(e.timestamp),
        name: e.name.to_string(),
        attributes: attributes(&e.attributes),
        dropped_attributes_count: e.dropped_attributes_count,
    }
}

fn link(l: &opentelemetry::trace::Link) -> span::Link {
    span::Link {
        trace_id: l.span_context.trace_id().to_bytes().to_vec(),
        span_id: l.span_context.span_id().to_bytes().to_vec(),
        attributes: attributes(&l.attributes),
        ..Default::default()
    }
}

fn attributes(kvs: &[opentelemetry::KeyValue]) -> Vec<KeyValue> {
    kvs.iter()
        .map(|kv| key_value(kv.key.as_str(), &kv.value))
        .collect()
}

fn key_value(key: &str, value: &opentelemetry::Value) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value(value)),
        }),
    }
}

fn any_value(v: &opentelemetry::Value) -> any_value::Value {
    use opentelemetry::{Array, Value};
    let array = |values: Vec<any_value::Value>| {
        any_value::Value::ArrayValue(ArrayValue {
            values: values
                .into_iter()
                .map(|v| AnyValue { value: Some(v) })
                .collect(),
        })
    };
    match v {
        Value::Bool(b) => any_value::Value::BoolValue(*b),
        Value::I64(i) => any_value::Value::IntValue(*i),
        Value::F64(f) => any_value::Value::DoubleValue(*f),
        Value::String(s) => any_value::Value::StringValue(s.to_string()),
        Value::Array(Array::Bool(a)) => {
            array(a.iter().map(|b| any_value::Value::BoolValue(*b)).collect())
        }
        Value::Array(Array::I64(a)) => {
            array(a.iter().map(|i| any_value::Value::IntValue(*i)).collect())
        }
        Value::Array(Array::F64(a)) => array(
            a.iter()
                .map(|f| any_value::Value::DoubleValue(*f))
                .collect(),
        ),
        Value::Array(Array::String(a)) => array(
            a.iter()
                .map(|s| any_value::Value::StringValue(s.to_string()))
                .collect(),
        ),
        // `Value` and `Array` are non-exhaustive: a kind added later shows as its text.
        other => any_value::Value::StringValue(other.to_string()),
    }
}
