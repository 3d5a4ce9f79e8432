//! `GET /api/traces`'s parameters and which traces they select, with the semantics of Jaeger's own store: a
//! trace matches when **one of its spans** satisfies every condition given at once (service, operation,
//! tags, duration range, start window).

use std::time::Duration;

use otlp_embedded::proto::common::v1::KeyValue;

use super::duration::{DurationError, parse_duration};
use super::index::{IndexedSpan, IndexedTrace, SpanIndex};
use super::render::{status_tags, value_is};

/// Jaeger's default when a search names no limit.
pub const DEFAULT_LIMIT: usize = 100;

/// A parameter of `/api/traces` that cannot be used.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error("cannot parse {param}: {source}")]
    Duration {
        param: &'static str,
        source: DurationError,
    },
    #[error("'maxDuration' should be greater than 'minDuration'")]
    DurationRange,
    #[error("cannot parse {param}: `{value}` is not a non-negative integer")]
    Integer { param: &'static str, value: String },
    #[error(
        "malformed 'tags' parameter `{value}`: expected a JSON object of strings, such as {{\"error\":\"true\"}}"
    )]
    Tags { value: String },
    #[error("malformed 'tag' parameter `{value}`: expected key:value")]
    Tag { value: String },
    #[error("malformed 'traceID' parameter `{value}`: expected hexadecimal")]
    TraceId { value: String },
}

/// A search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceQuery {
    pub service: Option<String>,
    pub operation: Option<String>,
    /// Every one must be on the same span (its attributes, its status, its process's tags or its logs' fields).
    pub tags: Vec<(String, String)>,
    pub min_duration: Option<Duration>,
    pub max_duration: Option<Duration>,
    /// The window a matching span must start in, µs since the Unix epoch, both ends included.
    pub start_us: Option<u64>,
    pub end_us: Option<u64>,
    pub limit: usize,
    /// With `traceID`, those traces and nothing else (Jaeger then ignores the other conditions).
    pub trace_ids: Vec<Vec<u8>>,
}

impl Default for TraceQuery {
    fn default() -> Self {
        Self {
            service: None,
            operation: None,
            tags: Vec::new(),
            min_duration: None,
            max_duration: None,
            start_us: None,
            end_us: None,
            limit: DEFAULT_LIMIT,
            trace_ids: Vec::new(),
        }
    }
}

impl TraceQuery {
    /// Parse a URL query string. An empty value is an absent one; unknown parameters are ignored.
    ///
    /// `lookback` other than `custom` (the UI's "last hour" and the like) leaves the window's end open: the UI
    /// sets `end` to its clock's now, and a simulated run's spans can start later than that (a run's virtual
    /// time is shifted onto the wall clock at its start and runs ahead of it).
    pub fn parse(query: &str) -> Result<Self, QueryError> {
        let mut q = Self::default();
        let mut relative = false;
        for (key, value) in form_urlencoded::parse(query.as_bytes()) {
            if value.is_empty() {
                continue;
            }
            match key.as_ref() {
                "lookback" => relative = value != "custom",
                key => q.apply(key, &value)?,
            }
        }
        if relative {
            q.end_us = None;
        }
        if let (Some(min), Some(max)) = (q.min_duration, q.max_duration)
            && min > max
        {
            return Err(QueryError::DurationRange);
        }
        Ok(q)
    }

    fn apply(&mut self, key: &str, value: &str) -> Result<(), QueryError> {
        let duration =
            |param| parse_duration(value).map_err(|source| QueryError::Duration { param, source });
        let integer = |param| {
            value.parse::<u64>().map_err(|_| QueryError::Integer {
                param,
                value: value.to_string(),
            })
        };
        match key {
            "service" => self.service = Some(value.to_string()),
            "operation" => self.operation = Some(value.to_string()),
            "tags" => self.tags.extend(json_tags(value)?),
            "tag" => {
                let (k, v) = value.split_once(':').ok_or_else(|| QueryError::Tag {
                    value: value.to_string(),
                })?;
                self.tags.push((k.to_string(), v.to_string()));
            }
            "minDuration" => self.min_duration = Some(duration("minDuration")?),
            "maxDuration" => self.max_duration = Some(duration("maxDuration")?),
            "start" => self.start_us = Some(integer("start")?),
            "end" => self.end_us = Some(integer("end")?),
            "limit" => {
                let limit = integer("limit")?;
                self.limit = if limit == 0 {
                    DEFAULT_LIMIT
                } else {
                    usize::try_from(limit).unwrap_or(usize::MAX)
                };
            }
            "traceID" => {
                for id in value.split(',') {
                    self.trace_ids
                        .push(unhex(id).ok_or_else(|| QueryError::TraceId {
                            value: id.to_string(),
                        })?);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The matching traces, the latest-starting first, at most `limit` of them.
    pub fn run<'a>(&self, index: &'a SpanIndex) -> Vec<&'a IndexedTrace> {
        let mut hits: Vec<(u64, &IndexedTrace)> = if self.trace_ids.is_empty() {
            index
                .traces()
                .filter(|t| self.matches(t))
                .map(|t| (t.start_us(), t))
                .collect()
        } else {
            self.trace_ids
                .iter()
                .filter_map(|id| index.get(id))
                .map(|t| (t.start_us(), t))
                .collect()
        };
        hits.sort_by(|(a_start, a), (b_start, b)| {
            b_start.cmp(a_start).then_with(|| a.id().cmp(b.id()))
        });
        hits.dedup_by(|(_, a), (_, b)| a.id() == b.id());
        hits.into_iter().take(self.limit).map(|(_, t)| t).collect()
    }

    /// Whether one of the trace's spans satisfies every condition.
    pub fn matches(&self, trace: &IndexedTrace) -> bool {
        trace.spans().any(|s| self.span_matches(s))
    }

    fn span_matches(&self, s: &IndexedSpan) -> bool {
        let duration = Duration::from_micros(s.duration_us());
        self.service
            .as_ref()
            .is_none_or(|service| &s.process.service == service)
            && self.operation.as_ref().is_none_or(|op| &s.span.name == op)
            && self.min_duration.is_none_or(|min| duration >= min)
            && self.max_duration.is_none_or(|max| duration <= max)
            && self.start_us.is_none_or(|start| s.start_us() >= start)
            && self.end_us.is_none_or(|end| s.start_us() <= end)
            && self.tags.iter().all(|(k, v)| has_tag(s, k, v))
    }
}

/// Whether the span, its process or one of its logs has the tag `key` with `value` (as a string).
fn has_tag(s: &IndexedSpan, key: &str, value: &str) -> bool {
    let is = |kv: &KeyValue| kv.key == key && value_is(kv, value);
    s.span.attributes.iter().any(is)
        || status_tags(&s.span)
            .iter()
            .any(|t| t.key == key && t.value.is(value))
        || s.process.tags.iter().any(is)
        || s.span
            .events
            .iter()
            .any(|e| e.attributes.iter().any(is) || (key == "message" && e.name == value))
}

/// `{"error":"true","actor_id":"3"}` (the UI's form). Numbers and booleans are taken as their text.
fn json_tags(value: &str) -> Result<Vec<(String, String)>, QueryError> {
    let malformed = || QueryError::Tags {
        value: value.to_string(),
    };
    let object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(value).map_err(|_| malformed())?;
    object
        .into_iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) => Ok((k, s)),
            serde_json::Value::Bool(_) | serde_json::Value::Number(_) => Ok((k, v.to_string())),
            _ => Err(malformed()),
        })
        .collect()
}

/// Bytes from hexadecimal (a trace id).
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use otlp_embedded::proto::common::v1::{AnyValue, any_value};
    use otlp_embedded::proto::trace::v1::span::Event;
    use otlp_embedded::proto::trace::v1::status::StatusCode;
    use otlp_embedded::proto::trace::v1::{Span, Status};

    use super::*;
    use crate::jaeger::index::IndexLimits;
    use crate::jaeger::index::tests::{batch, span, string_kv};

    fn q(query: &str) -> TraceQuery {
        TraceQuery::parse(query).unwrap_or_else(|e| panic!("{query}: {e}"))
    }

    fn int(key: &str, i: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(i)),
            }),
        }
    }

    fn flag(key: &str, b: bool) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(any_value::Value::BoolValue(b)),
            }),
        }
    }

    /// Traces 1 to 4. Span `n` of a trace starts at n ms and lasts 0.5 ms (see `span`), unless set.
    /// 1: `epoch` (1 ms) and `persist` with error=true, actor_id=3 (2 ms).
    /// 2: `epoch` (3 ms, lasts 10 ms) and `persist` with actor_id=3 but no error (4 ms).
    /// 3: `persist` with error=true but actor_id=4 (5 ms), and `other` with actor_id=3 (6 ms).
    /// 4: `recovery` with an error status only (7 ms), in service `other`.
    fn index() -> SpanIndex {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 100,
            max_bytes: 1 << 20,
        });
        let with = |s: Span, attributes: Vec<KeyValue>| Span { attributes, ..s };
        let long_epoch = Span {
            end_time_unix_nano: 13_000_000,
            ..span(2, 3, "epoch")
        };
        index.record(batch(
            "run-a",
            vec![
                span(1, 1, "epoch"),
                with(
                    span(1, 2, "persist"),
                    vec![flag("error", true), int("actor_id", 3)],
                ),
                long_epoch,
                with(span(2, 4, "persist"), vec![int("actor_id", 3)]),
                with(
                    span(3, 5, "persist"),
                    vec![flag("error", true), int("actor_id", 4)],
                ),
                with(span(3, 6, "other"), vec![int("actor_id", 3)]),
            ],
        ));
        let failed = Status {
            code: StatusCode::Error as i32,
            message: String::new(),
        };
        let mut other = batch(
            "run-b",
            vec![Span {
                status: Some(failed),
                ..span(4, 7, "recovery")
            }],
        );
        other.resource.as_mut().expect("resource").attributes[0] =
            string_kv("service.name", "other");
        index.record(other);
        index
    }

    fn found(index: &SpanIndex, query: &str) -> Vec<u8> {
        let mut ids: Vec<u8> = q(query).run(index).iter().map(|t| t.id()[0]).collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn operation_matches_any_span_not_only_the_root() {
        let index = index();
        assert_eq!(found(&index, "service=svc&operation=persist"), [1, 2, 3]);
        assert_eq!(found(&index, "operation=epoch"), [1, 2]);
        assert_eq!(found(&index, "operation=other&service=svc"), [3]);
        assert_eq!(found(&index, "service=svc"), [1, 2, 3]);
        assert_eq!(found(&index, "service=other"), [4]);
        assert_eq!(found(&index, "service=nobody"), Vec::<u8>::new());
        assert_eq!(
            found(&index, "operation=persist+backfill"),
            Vec::<u8>::new()
        );
    }

    #[test]
    fn all_tags_must_be_on_one_span_and_compare_as_strings() {
        let index = index();
        let json = |tags: &str| {
            format!(
                "tags={}",
                form_urlencoded::byte_serialize(tags.as_bytes()).collect::<String>()
            )
        };
        assert_eq!(
            found(&index, &json(r#"{"error":"true"}"#)),
            [1, 3, 4],
            "bool tag, and an error status"
        );
        assert_eq!(
            found(&index, &json(r#"{"actor_id":"3"}"#)),
            [1, 2, 3],
            "int tag"
        );
        assert_eq!(
            found(&index, &json(r#"{"actor_id":3}"#)),
            [1, 2, 3],
            "a JSON number is its text"
        );
        // Trace 3 has error=true and actor_id=3, but on two different spans.
        assert_eq!(
            found(&index, &json(r#"{"error":"true","actor_id":"3"}"#)),
            [1]
        );
        assert_eq!(
            found(&index, "tag=error:true&tag=actor_id:3"),
            [1],
            "Jaeger's repeated tag=key:value"
        );
        assert_eq!(found(&index, "operation=persist&tag=error:true"), [1, 3]);
        assert_eq!(
            found(&index, "operation=epoch&tag=error:true"),
            Vec::<u8>::new()
        );
        assert_eq!(found(&index, "tag=otel.status_code:ERROR"), [4]);
        assert_eq!(
            found(&index, "tag=service.instance.id:run-b"),
            [4],
            "a process tag"
        );
        assert_eq!(
            found(&index, "tag=actor_id:3.0"),
            Vec::<u8>::new(),
            "strings, not numbers"
        );
    }

    #[test]
    fn log_fields_are_tags_too() {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 10,
            max_bytes: 1 << 20,
        });
        let event = Event {
            name: "row missing".into(),
            attributes: vec![int("vnode", 7)],
            ..Default::default()
        };
        index.record(batch(
            "a",
            vec![
                Span {
                    events: vec![event],
                    ..span(1, 1, "x")
                },
                span(2, 2, "x"),
            ],
        ));
        assert_eq!(found(&index, "tag=vnode:7"), [1]);
        assert_eq!(found(&index, "tag=message:row+missing"), [1]);
    }

    #[test]
    fn durations_apply_to_the_span_that_matches_the_rest() {
        let index = index();
        assert_eq!(
            found(&index, "minDuration=1ms"),
            [2],
            "only trace 2's epoch lasts more than 0.5 ms"
        );
        assert_eq!(found(&index, "operation=epoch&maxDuration=500us"), [1]);
        assert_eq!(
            found(&index, "operation=epoch&minDuration=500us&maxDuration=10ms"),
            [1, 2],
            "inclusive"
        );
        assert_eq!(
            found(&index, "operation=persist&minDuration=1ms"),
            Vec::<u8>::new()
        );
        assert_eq!(
            found(&index, "operation=epoch&minDuration=10.001ms"),
            Vec::<u8>::new()
        );
        assert_eq!(
            TraceQuery::parse("minDuration=2s&maxDuration=1s"),
            Err(QueryError::DurationRange)
        );
        assert!(matches!(
            TraceQuery::parse("minDuration=2"),
            Err(QueryError::Duration {
                param: "minDuration",
                ..
            })
        ));
    }

    #[test]
    fn the_window_selects_by_a_matching_span_start() {
        let index = index();
        // Span starts are n ms = n * 1000 µs.
        assert_eq!(found(&index, "start=3000&end=5000"), [2, 3]);
        assert_eq!(
            found(&index, "start=2000&end=2000"),
            [1],
            "both ends are included"
        );
        assert_eq!(found(&index, "start=3001"), [2, 3, 4]);
        assert_eq!(found(&index, "end=1000"), [1]);
        assert_eq!(found(&index, "operation=epoch&start=2000"), [2]);
        assert_eq!(
            found(&index, "operation=persist&start=6000"),
            Vec::<u8>::new()
        );
        // The UI's relative lookback leaves the end open; a custom window does not.
        assert_eq!(found(&index, "start=3000&end=5000&lookback=1h"), [2, 3, 4]);
        assert_eq!(found(&index, "start=3000&end=5000&lookback=custom"), [2, 3]);
        assert!(matches!(
            TraceQuery::parse("start=-1"),
            Err(QueryError::Integer { param: "start", .. })
        ));
    }

    #[test]
    fn limit_keeps_the_latest_starting_traces() {
        let index = index();
        let ids = |query| {
            q(query)
                .run(&index)
                .iter()
                .map(|t| t.id()[0])
                .collect::<Vec<u8>>()
        };
        assert_eq!(ids("limit=2"), [4, 3]);
        assert_eq!(ids("limit=0"), [4, 3, 2, 1], "0 is the default");
        assert_eq!(ids(""), [4, 3, 2, 1]);
        assert_eq!(q("").limit, DEFAULT_LIMIT);
        assert_eq!(ids("operation=persist&limit=1"), [3]);
    }

    #[test]
    fn trace_ids_select_those_traces() {
        let index = index();
        let two = "02".repeat(16);
        let four = "04".repeat(16);
        assert_eq!(
            found(
                &index,
                &format!("traceID={two}&traceID={four}&operation=nothing")
            ),
            [2, 4]
        );
        assert_eq!(found(&index, &format!("traceID={two},{two}")), [2]);
        assert_eq!(
            found(&index, &format!("traceID={}", "09".repeat(16))),
            Vec::<u8>::new()
        );
        assert!(matches!(
            TraceQuery::parse("traceID=xyz"),
            Err(QueryError::TraceId { .. })
        ));
    }

    #[test]
    fn empty_and_unknown_parameters_are_ignored_and_malformed_ones_are_errors() {
        assert_eq!(
            q("service=&operation=&minDuration&maxDuration=&tags=&spss=3&lookback="),
            TraceQuery::default()
        );
        assert_eq!(
            q("operation=persist%20backfill%20state")
                .operation
                .as_deref(),
            Some("persist backfill state")
        );
        assert!(matches!(
            TraceQuery::parse("tags=error%3Dtrue"),
            Err(QueryError::Tags { .. })
        ));
        assert!(matches!(
            TraceQuery::parse("tags=%7B%22a%22%3A%5B1%5D%7D"),
            Err(QueryError::Tags { .. })
        ));
        assert!(matches!(
            TraceQuery::parse("tag=error"),
            Err(QueryError::Tag { .. })
        ));
        assert_eq!(
            q("tag=url:http://x").tags,
            [("url".to_string(), "http://x".to_string())]
        );
        assert!(matches!(
            TraceQuery::parse("limit=ten"),
            Err(QueryError::Integer { param: "limit", .. })
        ));
    }
}
