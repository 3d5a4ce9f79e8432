//! Spans into the embedded collector's index without a network hop: the same OTLP data a gRPC exporter would
//! send (`ResourceSpans`), handed over on the span processor's thread. `--jaeger` uses it; `--otlp-endpoint`
//! sends over OTLP/gRPC.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, Status};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use otlp_embedded::proto::common::v1::{AnyValue, ArrayValue, KeyValue, any_value};
use otlp_embedded::proto::resource::v1::Resource as ProtoResource;
use otlp_embedded::proto::trace::v1::{ResourceSpans, ScopeSpans, Span, span};

use super::api::SharedIndex;

/// An exporter that records each batch in the embedded collector's index.
#[derive(Debug)]
pub struct LocalExporter {
    index: SharedIndex,
    resource: Vec<KeyValue>,
}

impl LocalExporter {
    pub(super) fn new(index: SharedIndex) -> Self {
        Self {
            index,
            resource: Vec::new(),
        }
    }
}

impl SpanExporter for LocalExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = ResourceSpans {
            resource: Some(ProtoResource {
                attributes: self.resource.clone(),
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans: batch.into_iter().map(span).collect(),
                ..Default::default()
            }],
            schema_url: String::new(),
        };
        // The processor's own thread, outside any runtime: blocking on the lock is what it is for.
        let rejected = self.index.blocking_write().record(spans);
        match rejected {
            0 => Ok(()),
            n => Err(OTelSdkError::InternalFailure(format!(
                "the collector refused {n} spans (beyond its byte budget for one trace)"
            ))),
        }
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
