//! The collector's store: every span received over OTLP, by trace, within a bound on traces and on (estimated)
//! bytes. The least recently updated trace goes first when a bound is exceeded.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use otlp_embedded::proto::common::v1::{AnyValue, KeyValue, any_value};
use otlp_embedded::proto::resource::v1::Resource;
use otlp_embedded::proto::trace::v1::{ResourceSpans, Span};
use prost::Message;

/// What a span costs in the index beyond its encoded size: the map entry, the boxes and the vectors' headers.
const SPAN_OVERHEAD_BYTES: usize = 256;

/// The bounds of a [`SpanIndex`].
#[derive(Debug, Clone, Copy)]
pub struct IndexLimits {
    pub max_traces: usize,
    pub max_bytes: usize,
}

/// The emitting process of spans (an OTLP resource): Jaeger's `processes` entry.
#[derive(Debug, PartialEq)]
pub struct Process {
    /// `service.instance.id` (Jaeger's process key), or `unknown`.
    pub key: String,
    /// `service.name`, or `unknown`.
    pub service: String,
    pub tags: Vec<KeyValue>,
}

impl Process {
    fn of(resource: Resource) -> Self {
        Self {
            key: string_attribute(&resource.attributes, "service.instance.id"),
            service: string_attribute(&resource.attributes, "service.name"),
            tags: resource.attributes,
        }
    }
}

fn string_attribute(attributes: &[KeyValue], key: &str) -> String {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match &kv.value {
            Some(AnyValue {
                value: Some(any_value::Value::StringValue(s)),
            }) => Some(s.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// One span and its process.
#[derive(Debug)]
pub struct IndexedSpan {
    pub span: Span,
    pub process: Arc<Process>,
    bytes: usize,
}

impl IndexedSpan {
    /// Start in µs since the Unix epoch, as Jaeger's `startTime`.
    pub fn start_us(&self) -> u64 {
        self.span.start_time_unix_nano / 1000
    }

    /// Duration in µs, as Jaeger's `duration` (0 for a span that ends before it starts).
    pub fn duration_us(&self) -> u64 {
        self.span
            .end_time_unix_nano
            .saturating_sub(self.span.start_time_unix_nano)
            / 1000
    }
}

/// The spans of one trace received so far, by span id.
#[derive(Debug)]
pub struct IndexedTrace {
    id: Vec<u8>,
    spans: BTreeMap<Vec<u8>, IndexedSpan>,
    /// Position in the index's recency order.
    seq: u64,
    bytes: usize,
}

impl IndexedTrace {
    pub fn id(&self) -> &[u8] {
        &self.id
    }

    pub fn spans(&self) -> impl Iterator<Item = &IndexedSpan> {
        self.spans.values()
    }

    /// The earliest span start, in µs (Jaeger's "most recent" order sorts by it).
    pub fn start_us(&self) -> u64 {
        self.spans().map(IndexedSpan::start_us).min().unwrap_or(0)
    }
}

/// Every span received, by trace, bounded by [`IndexLimits`].
#[derive(Debug)]
pub struct SpanIndex {
    limits: IndexLimits,
    traces: HashMap<Vec<u8>, IndexedTrace>,
    /// Trace ids from the least to the most recently updated.
    recency: BTreeMap<u64, Vec<u8>>,
    next_seq: u64,
    bytes: usize,
    /// Processes by their resource's encoding, shared by their spans; dropped with their last span.
    processes: HashMap<Vec<u8>, Arc<Process>>,
    rejected: u64,
}

impl SpanIndex {
    pub fn new(limits: IndexLimits) -> Self {
        Self {
            limits,
            traces: HashMap::new(),
            recency: BTreeMap::new(),
            next_seq: 0,
            bytes: 0,
            processes: HashMap::new(),
            rejected: 0,
        }
    }

    /// Record an OTLP batch; the number of spans refused (see [`SpanIndex::insert`]).
    pub fn record(&mut self, batch: ResourceSpans) -> u64 {
        let resource = batch.resource.unwrap_or_default();
        let key = resource.encode_to_vec();
        let process = self
            .processes
            .entry(key.clone())
            .or_insert_with(|| Arc::new(Process::of(resource)))
            .clone();
        let mut rejected = 0;
        for span in batch.scope_spans.into_iter().flat_map(|s| s.spans) {
            if !self.insert(span, process.clone()) {
                rejected += 1;
            }
        }
        // A process none of whose spans was kept is not kept either.
        if Arc::strong_count(&process) == 2 {
            self.processes.remove(&key);
        }
        self.rejected += rejected;
        rejected
    }

    /// Keep `span`, evicting the least recently updated other traces as the bounds require. A span without
    /// ids is refused, and so is a span that would make its own trace larger than the whole byte budget (such
    /// a trace keeps the spans that arrived first).
    fn insert(&mut self, span: Span, process: Arc<Process>) -> bool {
        if span.trace_id.is_empty() || span.span_id.is_empty() {
            return false;
        }
        let bytes = span.encoded_len() + SPAN_OVERHEAD_BYTES;
        let existing = self.traces.get(&span.trace_id);
        let trace_bytes = existing.map_or(0, |t| t.bytes);
        let freed = existing
            .and_then(|t| t.spans.get(&span.span_id))
            .map_or(0, |s| s.bytes);
        if trace_bytes - freed + bytes > self.limits.max_bytes {
            return false;
        }
        let trace_id = span.trace_id.clone();
        let span_id = span.span_id.clone();
        self.touch(&trace_id);
        let trace = self.traces.get_mut(&trace_id).expect("touched");
        trace.spans.insert(
            span_id,
            IndexedSpan {
                span,
                process,
                bytes,
            },
        );
        trace.bytes = trace.bytes + bytes - freed;
        self.bytes = self.bytes + bytes - freed;
        self.evict_beyond_limits(&trace_id);
        true
    }

    /// Make `id` the most recently updated trace, creating it if new.
    fn touch(&mut self, id: &[u8]) {
        // Already the most recently updated (the usual case: a batch's spans share one trace).
        if self
            .recency
            .last_key_value()
            .is_some_and(|(_, last)| last.as_slice() == id)
        {
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let trace = self
            .traces
            .entry(id.to_vec())
            .or_insert_with(|| IndexedTrace {
                id: id.to_vec(),
                spans: BTreeMap::new(),
                seq,
                bytes: 0,
            });
        self.recency.remove(&trace.seq);
        trace.seq = seq;
        self.recency.insert(seq, id.to_vec());
    }

    /// Drop the least recently updated traces other than `keep` until both bounds hold (`keep` alone fits:
    /// `insert` made sure of it).
    fn evict_beyond_limits(&mut self, keep: &[u8]) {
        let mut evicted = false;
        while self.traces.len() > self.limits.max_traces || self.bytes > self.limits.max_bytes {
            let Some(oldest) = self
                .recency
                .values()
                .find(|id| id.as_slice() != keep)
                .cloned()
            else {
                break;
            };
            if let Some(trace) = self.traces.remove(&oldest) {
                self.recency.remove(&trace.seq);
                self.bytes -= trace.bytes;
            }
            evicted = true;
        }
        if evicted {
            self.processes.retain(|_, p| Arc::strong_count(p) > 1);
        }
    }

    pub fn get(&self, id: &[u8]) -> Option<&IndexedTrace> {
        self.traces.get(id)
    }

    pub fn traces(&self) -> impl Iterator<Item = &IndexedTrace> {
        self.traces.values()
    }

    pub fn len(&self) -> usize {
        self.traces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.traces.is_empty()
    }

    /// The estimated bytes held by the spans.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Spans refused since the start.
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// How many distinct processes the spans held refer to (after the last eviction).
    pub fn processes(&self) -> usize {
        self.processes.len()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use otlp_embedded::proto::trace::v1::ScopeSpans;

    use super::*;

    pub fn string_kv(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.to_string())),
            }),
        }
    }

    pub fn span(trace: u8, id: u8, name: &str) -> Span {
        Span {
            trace_id: vec![trace; 16],
            span_id: vec![id; 8],
            name: name.to_string(),
            start_time_unix_nano: u64::from(id) * 1_000_000,
            end_time_unix_nano: u64::from(id) * 1_000_000 + 500_000,
            ..Default::default()
        }
    }

    pub fn batch(instance: &str, spans: Vec<Span>) -> ResourceSpans {
        ResourceSpans {
            resource: Some(Resource {
                attributes: vec![
                    string_kv("service.name", "svc"),
                    string_kv("service.instance.id", instance),
                ],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn ids(index: &SpanIndex) -> Vec<u8> {
        let mut ids: Vec<u8> = index.traces().map(|t| t.id()[0]).collect();
        ids.sort_unstable();
        ids
    }

    #[test]
    fn spans_group_by_trace_and_share_their_process() {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 10,
            max_bytes: 1 << 20,
        });
        index.record(batch(
            "a",
            vec![span(1, 1, "x"), span(1, 2, "y"), span(2, 3, "x")],
        ));
        index.record(batch("a", vec![span(2, 4, "z")]));
        assert_eq!(ids(&index), vec![1, 2]);
        let two = index.get(&[2; 16]).expect("trace 2");
        assert_eq!(two.spans().count(), 2);
        assert_eq!(two.start_us(), 3_000);
        assert_eq!(index.processes(), 1);
        let first = two.spans().next().expect("a span");
        assert_eq!(
            (first.process.key.as_str(), first.process.service.as_str()),
            ("a", "svc")
        );
        assert_eq!(first.duration_us(), 500);
    }

    #[test]
    fn a_span_received_again_replaces_the_old_one_without_counting_twice() {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 10,
            max_bytes: 1 << 20,
        });
        index.record(batch("a", vec![span(1, 1, "x")]));
        let bytes = index.bytes();
        index.record(batch("a", vec![span(1, 1, "renamed")]));
        let trace = index.get(&[1; 16]).expect("trace");
        assert_eq!(trace.spans().count(), 1);
        assert_eq!(trace.spans().next().expect("span").span.name, "renamed");
        assert_eq!(index.bytes(), bytes + "renamed".len() - "x".len());
    }

    #[test]
    fn the_least_recently_updated_trace_goes_first() {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 2,
            max_bytes: 1 << 20,
        });
        index.record(batch("a", vec![span(1, 1, "x")]));
        index.record(batch("a", vec![span(2, 2, "x")]));
        // Trace 1 gets a new span: trace 2 is now the oldest and goes when trace 3 arrives.
        index.record(batch("a", vec![span(1, 3, "x")]));
        index.record(batch("b", vec![span(3, 4, "x")]));
        assert_eq!(ids(&index), vec![1, 3]);
        assert_eq!(index.get(&[1; 16]).expect("kept").spans().count(), 2);
    }

    #[test]
    fn the_byte_budget_evicts_old_traces_and_refuses_a_span_larger_than_itself() {
        let one = span(1, 1, "x").encoded_len() + SPAN_OVERHEAD_BYTES;
        // Slack for the few bytes by which the spans' varints differ.
        let budget = 3 * one + 16;
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 100,
            max_bytes: budget,
        });
        for t in 1..=5 {
            index.record(batch("a", vec![span(t, 1, "x")]));
            assert!(index.bytes() <= budget);
        }
        assert_eq!(ids(&index), vec![3, 4, 5]);
        let huge = Span {
            name: "h".repeat(4 * one),
            ..span(9, 1, "")
        };
        assert_eq!(index.record(batch("a", vec![huge])), 1);
        assert_eq!(index.rejected(), 1);
        assert_eq!(ids(&index), vec![3, 4, 5], "a refused span evicts nothing");
        // A trace that grows to the whole budget keeps its first spans and has evicted every other trace.
        let grown = (1..=4).map(|id| span(6, id, "x")).collect();
        assert_eq!(index.record(batch("a", grown)), 1);
        assert_eq!(ids(&index), vec![6]);
        assert_eq!(index.get(&[6; 16]).expect("kept").spans().count(), 3);
        assert_eq!(index.rejected(), 2);
        let no_id = Span {
            span_id: vec![],
            ..span(9, 1, "x")
        };
        assert_eq!(index.record(batch("c", vec![no_id])), 1);
        assert_eq!(
            index.processes(),
            1,
            "a process whose spans were all refused is not kept"
        );
    }

    #[test]
    fn a_process_goes_with_its_last_span() {
        let mut index = SpanIndex::new(IndexLimits {
            max_traces: 1,
            max_bytes: 1 << 20,
        });
        index.record(batch("a", vec![span(1, 1, "x")]));
        index.record(batch("b", vec![span(2, 1, "x")]));
        assert_eq!(ids(&index), vec![2]);
        assert_eq!(index.processes(), 1);
        assert_eq!(
            index
                .traces()
                .next()
                .expect("trace")
                .spans()
                .next()
                .expect("span")
                .process
                .key,
            "b"
        );
    }
}
