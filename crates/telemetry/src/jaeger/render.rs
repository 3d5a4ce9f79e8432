//! Indexed traces in the JSON of Jaeger's HTTP API (what its UI reads), and the tags a search sees.

use std::borrow::Cow;
use std::collections::BTreeMap;

use otlp_embedded::proto::common::v1::{AnyValue, KeyValue, any_value};
use otlp_embedded::proto::trace::v1::Span;
use otlp_embedded::proto::trace::v1::status::StatusCode;
use serde::Serialize;
use serde_json::Value;

use super::index::{IndexedSpan, IndexedTrace};

pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Jaeger's type name and JSON value of an attribute value.
fn typed(value: Option<&AnyValue>) -> (&'static str, Value) {
    let Some(value) = value.and_then(|v| v.value.as_ref()) else {
        return ("string", Value::Null);
    };
    match value {
        any_value::Value::StringValue(s) => ("string", s.clone().into()),
        any_value::Value::BoolValue(b) => ("bool", (*b).into()),
        any_value::Value::IntValue(i) => ("int64", (*i).into()),
        any_value::Value::DoubleValue(d) => ("float64", (*d).into()),
        other => ("string", display(other).into()),
    }
}

/// A value as a string: what a tag search compares with (Jaeger compares every type as a string).
fn display(value: &any_value::Value) -> String {
    match value {
        any_value::Value::StringValue(s) => s.clone(),
        any_value::Value::BoolValue(b) => b.to_string(),
        any_value::Value::IntValue(i) => i.to_string(),
        any_value::Value::DoubleValue(d) => d.to_string(),
        any_value::Value::BytesValue(b) => hex(b),
        any_value::Value::ArrayValue(a) => {
            let items: Vec<Value> = a.values.iter().map(|v| typed(Some(v)).1).collect();
            Value::Array(items).to_string()
        }
        any_value::Value::KvlistValue(l) => {
            let items: serde_json::Map<String, Value> = l
                .values
                .iter()
                .map(|kv| (kv.key.clone(), typed(kv.value.as_ref()).1))
                .collect();
            Value::Object(items).to_string()
        }
    }
}

/// Whether an attribute's value, as a string, is `expected`.
pub fn value_is(kv: &KeyValue, expected: &str) -> bool {
    tag(kv).value.is(expected)
}

/// A tag (or log field) as Jaeger's JSON has it: `{key, type, value}`.
#[derive(Debug, Serialize)]
pub struct Tag<'a> {
    pub key: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    pub value: TagValue<'a>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum TagValue<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    Int(i64),
    Float(f64),
    Null,
}

impl TagValue<'_> {
    /// Whether the value, as a string, is `expected`.
    pub fn is(&self, expected: &str) -> bool {
        match self {
            TagValue::Str(s) => s == expected,
            TagValue::Bool(b) => b.to_string() == expected,
            TagValue::Int(i) => i.to_string() == expected,
            TagValue::Float(f) => f.to_string() == expected,
            TagValue::Null => false,
        }
    }
}

fn tag(kv: &KeyValue) -> Tag<'_> {
    let Some(value) = kv.value.as_ref().and_then(|v| v.value.as_ref()) else {
        return Tag {
            key: &kv.key,
            kind: "string",
            value: TagValue::Null,
        };
    };
    let (kind, value) = match value {
        any_value::Value::StringValue(s) => ("string", TagValue::Str(Cow::Borrowed(s))),
        any_value::Value::BoolValue(b) => ("bool", TagValue::Bool(*b)),
        any_value::Value::IntValue(i) => ("int64", TagValue::Int(*i)),
        any_value::Value::DoubleValue(d) => ("float64", TagValue::Float(*d)),
        other => ("string", TagValue::Str(Cow::Owned(display(other)))),
    };
    Tag {
        key: &kv.key,
        kind,
        value,
    }
}

/// The tags Jaeger derives from an OTLP span's status: `otel.status_code`, `otel.status_description`, and
/// `error = true` for an error status unless the span already has an `error` attribute.
pub fn status_tags(span: &Span) -> Vec<Tag<'_>> {
    let Some(status) = &span.status else {
        return Vec::new();
    };
    let code = match StatusCode::try_from(status.code) {
        Ok(StatusCode::Ok) => "OK",
        Ok(StatusCode::Error) => "ERROR",
        Ok(StatusCode::Unset) | Err(_) => return Vec::new(),
    };
    let string = |key, value| Tag {
        key,
        kind: "string",
        value: TagValue::Str(Cow::Borrowed(value)),
    };
    let mut tags = vec![string("otel.status_code", code)];
    if !status.message.is_empty() {
        tags.push(string("otel.status_description", &status.message));
    }
    if code == "ERROR" && !span.attributes.iter().any(|a| a.key == "error") {
        tags.push(Tag {
            key: "error",
            kind: "bool",
            value: TagValue::Bool(true),
        });
    }
    tags
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Reference {
    ref_type: &'static str,
    #[serde(rename = "traceID")]
    trace_id: String,
    #[serde(rename = "spanID")]
    span_id: String,
}

#[derive(Serialize)]
struct Log<'a> {
    timestamp: u64,
    fields: Vec<Tag<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JaegerSpan<'a> {
    #[serde(rename = "traceID")]
    trace_id: String,
    #[serde(rename = "spanID")]
    span_id: String,
    operation_name: &'a str,
    references: Vec<Reference>,
    start_time: u64,
    duration: u64,
    tags: Vec<Tag<'a>>,
    logs: Vec<Log<'a>>,
    #[serde(rename = "processID")]
    process_id: &'a str,
    warnings: Option<()>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JaegerProcess<'a> {
    service_name: &'a str,
    tags: Vec<Tag<'a>>,
}

/// One trace: `{traceID, spans, processes, warnings}`.
#[derive(Serialize)]
pub struct JaegerTrace<'a> {
    #[serde(rename = "traceID")]
    trace_id: String,
    spans: Vec<JaegerSpan<'a>>,
    processes: BTreeMap<&'a str, JaegerProcess<'a>>,
    warnings: Option<()>,
}

fn jaeger_span(s: &IndexedSpan) -> JaegerSpan<'_> {
    let span = &s.span;
    let reference = |ref_type, trace: &[u8], span: &[u8]| Reference {
        ref_type,
        trace_id: hex(trace),
        span_id: hex(span),
    };
    let parent = (!span.parent_span_id.is_empty())
        .then(|| reference("CHILD_OF", &span.trace_id, &span.parent_span_id));
    let links = span
        .links
        .iter()
        .map(|l| reference("FOLLOWS_FROM", &l.trace_id, &l.span_id));
    let logs = span
        .events
        .iter()
        .map(|e| {
            let message = Tag {
                key: "message",
                kind: "string",
                value: TagValue::Str(Cow::Borrowed(&e.name)),
            };
            let fields = e.attributes.iter().map(tag).chain([message]).collect();
            Log {
                timestamp: e.time_unix_nano / 1000,
                fields,
            }
        })
        .collect();
    JaegerSpan {
        trace_id: hex(&span.trace_id),
        span_id: hex(&span.span_id),
        operation_name: &span.name,
        references: parent.into_iter().chain(links).collect(),
        start_time: s.start_us(),
        duration: s.duration_us(),
        tags: span
            .attributes
            .iter()
            .map(tag)
            .chain(status_tags(span))
            .collect(),
        logs,
        process_id: &s.process.key,
        warnings: None,
    }
}

pub fn jaeger_trace(trace: &IndexedTrace) -> JaegerTrace<'_> {
    let mut processes = BTreeMap::new();
    let spans = trace
        .spans()
        .map(|s| {
            processes
                .entry(s.process.key.as_str())
                .or_insert_with(|| JaegerProcess {
                    service_name: &s.process.service,
                    tags: s.process.tags.iter().map(tag).collect(),
                });
            jaeger_span(s)
        })
        .collect();
    JaegerTrace {
        trace_id: hex(trace.id()),
        spans,
        processes,
        warnings: None,
    }
}

/// Every answer of the API: `{data, total, limit, offset, errors}`.
#[derive(Serialize)]
pub struct Envelope<T: Serialize> {
    data: Option<Vec<T>>,
    total: usize,
    limit: usize,
    offset: usize,
    errors: Option<Vec<ApiError>>,
}

#[derive(Serialize)]
pub struct ApiError {
    code: u16,
    msg: String,
}

impl<T: Serialize> Envelope<T> {
    pub fn data(data: Vec<T>) -> Self {
        Self {
            total: data.len(),
            data: Some(data),
            limit: 0,
            offset: 0,
            errors: None,
        }
    }

    /// An error answer, as Jaeger's query service writes one.
    pub fn error(code: u16, msg: String) -> Self {
        Self {
            data: None,
            total: 0,
            limit: 0,
            offset: 0,
            errors: Some(vec![ApiError { code, msg }]),
        }
    }
}

#[cfg(test)]
mod tests {
    use otlp_embedded::proto::common::v1::ArrayValue;
    use otlp_embedded::proto::trace::v1::Status;
    use otlp_embedded::proto::trace::v1::span::Event;

    use serde_json::json;

    use super::*;
    use crate::jaeger::index::tests::{batch, span, string_kv};
    use crate::jaeger::index::{IndexLimits, SpanIndex};

    fn kv(key: &str, value: any_value::Value) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }

    #[test]
    fn values_compare_as_the_ui_shows_them() {
        let s = |v| display(&v);
        assert_eq!(s(any_value::Value::BoolValue(true)), "true");
        assert_eq!(s(any_value::Value::IntValue(-3)), "-3");
        assert_eq!(s(any_value::Value::DoubleValue(1.5)), "1.5");
        assert_eq!(s(any_value::Value::StringValue("x y".into())), "x y");
        assert_eq!(s(any_value::Value::BytesValue(vec![0xab, 1])), "ab01");
        let array = ArrayValue {
            values: vec![
                AnyValue {
                    value: Some(any_value::Value::IntValue(1)),
                },
                AnyValue {
                    value: Some(any_value::Value::StringValue("a".into())),
                },
            ],
        };
        assert_eq!(s(any_value::Value::ArrayValue(array)), r#"[1,"a"]"#);
        assert!(value_is(&kv("k", any_value::Value::IntValue(3)), "3"));
        assert!(value_is(
            &kv("k", any_value::Value::StringValue("3".into())),
            "3"
        ));
        assert!(!value_is(
            &KeyValue {
                key: "k".into(),
                value: None
            },
            ""
        ));
    }

    #[test]
    fn an_error_status_is_an_error_tag_unless_the_span_has_one() {
        let status = |code: StatusCode| {
            Some(Status {
                code: code as i32,
                message: "boom".into(),
            })
        };
        let keys = |span: &Span| -> Vec<String> {
            let attributes = span.attributes.iter().map(|kv| kv.key.clone());
            attributes
                .chain(status_tags(span).iter().map(|t| t.key.to_string()))
                .collect()
        };
        let failed = Span {
            status: status(StatusCode::Error),
            ..span(1, 1, "x")
        };
        assert_eq!(
            keys(&failed),
            ["otel.status_code", "otel.status_description", "error"]
        );
        let marked = Span {
            attributes: vec![string_kv("error", "yes")],
            ..failed.clone()
        };
        assert_eq!(
            keys(&marked),
            ["error", "otel.status_code", "otel.status_description"]
        );
        let unset = Span {
            status: status(StatusCode::Unset),
            ..span(1, 1, "x")
        };
        assert!(keys(&unset).is_empty());
        let error = serde_json::to_value(&status_tags(&failed)[2]).expect("JSON");
        assert_eq!(
            error,
            json!({ "key": "error", "type": "bool", "value": true })
        );
    }

    #[test]
    fn a_trace_renders_in_jaegers_shape() {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 10,
            max_bytes: 1 << 20,
        });
        let root = span(1, 1, "root");
        let child = Span {
            parent_span_id: vec![1; 8],
            attributes: vec![kv("actor_id", any_value::Value::IntValue(3))],
            events: vec![Event {
                time_unix_nano: 2_100_000,
                name: "failed".into(),
                ..Default::default()
            }],
            ..span(1, 2, "child")
        };
        index.record(batch("run-1", vec![root, child]));
        let json =
            serde_json::to_value(jaeger_trace(index.get(&[1; 16]).expect("trace"))).expect("JSON");
        assert_eq!(json["traceID"], "01".repeat(16));
        assert_eq!(json["processes"]["run-1"]["serviceName"], "svc");
        let spans = json["spans"].as_array().expect("spans");
        assert_eq!(spans.len(), 2);
        let child = &spans[1];
        assert_eq!(child["operationName"], "child");
        assert_eq!(
            (child["startTime"].as_u64(), child["duration"].as_u64()),
            (Some(2000), Some(500))
        );
        assert_eq!(child["processID"], "run-1");
        assert_eq!(
            child["tags"][0],
            json!({ "key": "actor_id", "type": "int64", "value": 3 })
        );
        assert_eq!(child["references"][0]["spanID"], "01".repeat(8));
        assert_eq!(child["references"][0]["refType"], "CHILD_OF");
        assert_eq!(child["logs"][0]["timestamp"], 2100);
        assert_eq!(child["logs"][0]["fields"][0]["value"], "failed");
        assert_eq!(spans[0]["references"], json!([]));
        assert_eq!(spans[0]["warnings"], Value::Null);
    }

    #[test]
    fn answers_and_errors_have_jaegers_envelope() {
        let ok = serde_json::to_value(Envelope::data(vec!["a", "b"])).expect("JSON");
        assert_eq!(
            ok,
            json!({ "data": ["a", "b"], "total": 2, "limit": 0, "offset": 0, "errors": null })
        );
        let error = serde_json::to_value(Envelope::<()>::error(400, "bad".into())).expect("JSON");
        let expected = json!({ "data": null, "total": 0, "limit": 0, "offset": 0, "errors": [{ "code": 400, "msg": "bad" }] });
        assert_eq!(error, expected);
    }
}
