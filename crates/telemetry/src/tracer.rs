//! Traces: a tracing-opentelemetry layer per simulated run, exporting over OTLP/gRPC with span times moved
//! from real time onto the run's simulated time (shifted to the wall clock at which the run started).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::{KeyValue, Value};
use opentelemetry_otlp::WithTonicConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};
use tracing_subscriber::Layer;
use tracing_subscriber::registry::Registry;

/// Moves each span's start and end from the real time it was recorded at to the simulated times in its
/// `vt.start_us` / `vt.end_us` attributes, shifted so that the run's start is `wall0`.
#[derive(Debug)]
struct VirtualTimeExporter<E> {
    inner: E,
    wall0: SystemTime,
    /// The first export that failed: the batch processor's scheduled exports report to nobody, so a run whose
    /// spans went out before its final flush would otherwise read as delivered.
    failed: Arc<Mutex<Option<String>>>,
}

fn attr_i64(span: &SpanData, key: &str) -> Option<i64> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .and_then(|kv| match kv.value {
            Value::I64(v) => Some(v),
            _ => None,
        })
}

impl<E> VirtualTimeExporter<E> {
    fn rewrite(&self, span: &mut SpanData) {
        to_virtual_time(span, self.wall0);
    }
}

/// Move `span`'s times (and its events') from real time to the simulated times in its fields, shifted so that
/// the run's start is `wall0`.
pub(crate) fn to_virtual_time(span: &mut SpanData, wall0: SystemTime) {
    let Some(start) = attr_i64(span, "vt.start_us") else {
        return;
    };
    let end = attr_i64(span, "vt.end_us").unwrap_or(start).max(start);
    span.start_time = wall0 + Duration::from_micros(start as u64);
    span.end_time = wall0 + Duration::from_micros(end as u64);
    // Said by the span's times now: not tags of their own.
    span.attributes
        .retain(|kv| !kv.key.as_str().starts_with("vt."));
    // Events (log lines inside the span) at their virtual time (`vt_us`, set by the event log), else at the
    // span's end: their own stamps are real time.
    for e in span.events.events.iter_mut() {
        let at = e.attributes.iter().find_map(|kv| match kv.value {
            Value::I64(us) if kv.key.as_str() == "vt_us" => Some(us),
            _ => None,
        });
        e.timestamp = match at {
            Some(us) => wall0 + Duration::from_micros(us.max(0) as u64),
            None => span.end_time,
        };
        e.attributes.retain(|kv| kv.key.as_str() != "vt_us");
    }
}

impl<E: SpanExporter> SpanExporter for VirtualTimeExporter<E> {
    async fn export(&self, mut batch: Vec<SpanData>) -> OTelSdkResult {
        for s in &mut batch {
            self.rewrite(s);
        }
        let result = self.inner.export(batch).await;
        if let Err(e) = &result {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert_with(|| e.to_string());
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource)
    }
}

/// `service.instance.id` of one run: its mode and seed, the process and the run's number in it, so that no
/// two runs share one (`buggy-1-4242.0`).
pub fn instance_id(mode: &str, seed: u64) -> String {
    static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{mode}-{seed}-{}.{n}", std::process::id())
}

/// How often spans go over OTLP/gRPC while a run goes (wall time), besides whenever 512 are waiting: the
/// network round trips overlap the run instead of all waiting at its end.
const OTLP_EXPORT_EVERY: Duration = Duration::from_millis(5);

/// One run's tracer provider.
pub struct RunTracer {
    provider: SdkTracerProvider,
    /// The first failed export, if any (none for the embedded collector).
    failed: Arc<Mutex<Option<String>>>,
}

impl RunTracer {
    /// Export to `endpoint` (OTLP/gRPC) a run that starts now: its simulated times are shifted onto this
    /// wall-clock instant. The exporter is built inside `rt` (a real-time runtime) so that its connection runs
    /// there, never on the paused simulation runtime.
    pub fn start(
        endpoint: &str,
        attributes: Vec<KeyValue>,
        rt: &ExportRuntime,
    ) -> Result<Self, String> {
        let wall0 = SystemTime::now();
        let channel = rt.channel(endpoint)?;
        let _guard = rt.handle().enter();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_channel(channel)
            .build()
            .map_err(|e| format!("cannot build the OTLP exporter for {endpoint}: {e}"))?;
        Ok(Self::with_exporter(
            exporter,
            attributes,
            wall0,
            OTLP_EXPORT_EVERY,
        ))
    }

    /// Export a run that starts now straight into the embedded collector's index: the spans wait in memory
    /// and go in, on the caller's thread, when the run is flushed (no thread, no queue, no network).
    pub fn start_embedded(jaeger: &crate::EmbeddedJaeger, attributes: Vec<KeyValue>) -> Self {
        // Without the SDK's environment and SDK detectors: the embedded UI needs only these attributes.
        let resource = Resource::builder_empty()
            .with_service_name("epochlab")
            .with_attributes(attributes)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_span_processor(jaeger.processor(SystemTime::now()))
            .build();
        Self {
            provider,
            failed: Arc::default(),
        }
    }

    fn with_exporter<E: SpanExporter + 'static>(
        exporter: E,
        attributes: Vec<KeyValue>,
        wall0: SystemTime,
        every: Duration,
    ) -> Self {
        let resource = Resource::builder()
            .with_service_name("epochlab")
            .with_attributes(attributes)
            .build();
        // The default queue (2,048 spans): the processor exports as soon as 512 are waiting, so a long run's
        // spans are not dropped, and a larger queue is allocated and touched in full for every run (a queue of
        // 65,536 cost 11 ms a run).
        let batch = BatchConfigBuilder::default()
            .with_scheduled_delay(every)
            .build();
        let failed: Arc<Mutex<Option<String>>> = Arc::default();
        let processor = BatchSpanProcessor::builder(VirtualTimeExporter {
            inner: exporter,
            wall0,
            failed: failed.clone(),
        })
        .with_batch_config(batch)
        .build();
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_span_processor(processor)
            .build();
        Self { provider, failed }
    }

    /// The layer to add to the run's subscriber.
    pub fn layer(&self) -> Box<dyn Layer<Registry> + Send + Sync> {
        Box::new(
            // Only the span's own fields become tags: no code location, thread, level or target per span (they
            // cost a conversion each and say nothing about the run), and no busy/idle times (real time). Context
            // activation stays on: without it some parents were never exported and the traces were incomplete.
            // Events at INFO and above (the event log's lines) become the spans' logs; TRACE lines stay in the
            // log.
            tracing_opentelemetry::layer()
                .with_tracer(self.provider.tracer("epochlab"))
                .with_tracked_inactivity(false)
                .with_location(false)
                .with_threads(false)
                .with_level(false)
                .with_target(false)
                .with_filter(tracing_subscriber::filter::LevelFilter::INFO),
        )
    }

    /// Export everything recorded, then stop.
    pub fn finish(self) -> Result<(), String> {
        self.provider
            .force_flush()
            .map_err(|e| format!("flushing spans: {e}"))?;
        let failed = self.failed.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(e) = failed {
            return Err(format!("exporting spans: {e}"));
        }
        // Every span is delivered: stopping the processor's thread (about a millisecond) need not hold up the
        // caller.
        let provider = self.provider;
        std::thread::Builder::new()
            .name("epochlab-tracer-stop".into())
            .spawn(move || {
                let _ = provider.shutdown();
            })
            .map(drop)
            .map_err(|e| format!("stopping the tracer: {e}"))
    }
}

/// A real-time runtime on its own thread, for exporters that send to an external collector, and their
/// connections: one per endpoint, shared by the runs of the process (a run need not connect again).
pub struct ExportRuntime {
    rt: Option<tokio::runtime::Runtime>,
    channels: std::sync::Mutex<std::collections::BTreeMap<String, tonic::transport::Channel>>,
}

impl ExportRuntime {
    pub fn start() -> Result<Self, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("epochlab-export")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the export runtime: {e}"))?;
        Ok(Self {
            rt: Some(rt),
            channels: Default::default(),
        })
    }

    pub fn handle(&self) -> &tokio::runtime::Handle {
        self.rt
            .as_ref()
            .expect("runtime lives until dropped")
            .handle()
    }

    /// The connection to `endpoint` (made on first use, on this runtime).
    fn channel(&self, endpoint: &str) -> Result<tonic::transport::Channel, String> {
        let mut channels = self.channels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = channels.get(endpoint) {
            return Ok(c.clone());
        }
        let _guard = self.handle().enter();
        let channel = tonic::transport::Endpoint::from_shared(endpoint.to_string())
            .map_err(|e| format!("not an OTLP endpoint: {endpoint}: {e}"))?
            .tcp_nodelay(true)
            // The exporter's own default, which it requires the channel to have.
            .timeout(Duration::from_secs(10))
            .connect_lazy();
        channels.insert(endpoint.to_string(), channel.clone());
        Ok(channel)
    }
}

impl Drop for ExportRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

/// Block until Ctrl-C (on `rt`).
pub fn wait_for_ctrl_c(rt: &tokio::runtime::Handle) {
    let _ = rt.block_on(tokio::signal::ctrl_c());
}

/// Log lines stamped with the virtual time of the simulation running on the thread (seconds since its start)
/// and its label (mode and seed), so that they line up with the event log and the spans; wall time outside
/// a simulation.
struct VirtualTime;

impl tracing_subscriber::fmt::time::FormatTime for VirtualTime {
    fn format_time(&self, w: &mut tracing_subscriber::fmt::format::Writer<'_>) -> std::fmt::Result {
        epochlab_common::clock::with_current_run(|run| match run {
            Some((clock, label)) => {
                let us = clock.elapsed_us();
                write!(w, "{:>6}.{:06}s {label}", us / 1_000_000, us % 1_000_000)
            }
            None => tracing_subscriber::fmt::time::SystemTime.format_time(w),
        })
    }
}

/// An event's fields as a log line shows them: the message, then `name=value`; not the virtual-time fields (the
/// line's stamp says it).
fn run_fields() -> impl for<'w> tracing_subscriber::fmt::FormatFields<'w> + 'static {
    tracing_subscriber::fmt::format::debug_fn(|w, field, value| match field.name() {
        name if name.starts_with("vt.") || name == "vt_us" => Ok(()),
        "message" => write!(w, "{value:?}"),
        name => write!(w, " {name}={value:?}"),
    })
}

/// A log line: the run's virtual time and label ([`VirtualTime`]), the trace id of the span in scope when
/// spans are exported (`trace=…`, to find the line's trace in Jaeger), the level, the target, the innermost
/// span's name, and the event's fields.
struct RunFormat {
    dispatch: DispatchSlot,
}

/// The run's subscriber, caught when it is built: the formatter looks trace ids up through it (the thread's
/// default dispatcher is not reachable from inside one of its own callbacks).
#[derive(Clone, Default)]
struct DispatchSlot(std::sync::Arc<std::sync::OnceLock<tracing::dispatcher::WeakDispatch>>);

struct CatchDispatch(DispatchSlot);

impl<S: tracing::Subscriber> Layer<S> for CatchDispatch {
    fn on_register_dispatch(&self, subscriber: &tracing::Dispatch) {
        let _ = self.0.0.set(subscriber.downgrade());
    }
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for RunFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut w: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing_subscriber::fmt::time::FormatTime;
        VirtualTime.format_time(&mut w)?;
        let span = ctx.parent_span();
        if let Some(id) = span.as_ref().and_then(|s| self.trace_id(&s.id())) {
            write!(w, " trace={id}")?;
        }
        let meta = event.metadata();
        write!(w, " {:>5} {}:", meta.level(), meta.target())?;
        if let Some(span) = &span {
            write!(w, " {}:", span.name())?;
        }
        w.write_char(' ')?;
        ctx.field_format().format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

impl RunFormat {
    /// The OpenTelemetry trace id of span `id`, if an OpenTelemetry layer records it.
    fn trace_id(&self, id: &tracing::Id) -> Option<String> {
        use opentelemetry::trace::TraceContextExt;
        let dispatch = self.dispatch.0.get()?.upgrade()?;
        let cx = tracing_opentelemetry::get_otel_context(id, &dispatch)?;
        let span_context = cx.span().span_context().clone();
        span_context
            .is_valid()
            .then(|| span_context.trace_id().to_string())
    }
}

/// The one place a run's tracing is put together: a fmt layer ([`RunFormat`]) on stderr filtered by `RUST_LOG` (only when it is
/// set), and the OpenTelemetry layer of `tracer` (when traces are exported). `None` when neither is wanted,
/// which keeps the cost of spans near zero.
pub fn run_layer(tracer: Option<&RunTracer>) -> Option<Box<dyn Layer<Registry> + Send + Sync>> {
    run_layer_to(tracer, None)
}

/// [`run_layer`], and the log lines also appended to `log_file` (at `RUST_LOG`'s levels, else INFO).
pub fn run_layer_to(
    tracer: Option<&RunTracer>,
    log_file: Option<std::fs::File>,
) -> Option<Box<dyn Layer<Registry> + Send + Sync>> {
    run_layer_scoped(tracer, log_file, "info")
}

/// [`run_layer_to`], the log file at `RUST_LOG`'s levels, else at `file_scope` (an `EnvFilter` directive list).
pub fn run_layer_scoped<W: std::io::Write + Send + 'static>(
    tracer: Option<&RunTracer>,
    log_file: Option<W>,
    file_scope: &str,
) -> Option<Box<dyn Layer<Registry> + Send + Sync>> {
    use tracing_subscriber::filter::EnvFilter;
    let spec = std::env::var("RUST_LOG").ok();
    let slot = DispatchSlot::default();
    let stderr = spec.clone().map(|spec| {
        tracing_subscriber::fmt::layer()
            .fmt_fields(run_fields())
            .event_format(RunFormat {
                dispatch: slot.clone(),
            })
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(EnvFilter::new(spec))
    });
    let file = log_file.map(|f| {
        tracing_subscriber::fmt::layer()
            .fmt_fields(run_fields())
            .event_format(RunFormat {
                dispatch: slot.clone(),
            })
            .with_writer(std::sync::Mutex::new(f))
            .with_ansi(false)
            .with_filter(EnvFilter::new(spec.unwrap_or_else(|| file_scope.into())))
    });
    let fmt: Option<Box<dyn Layer<Registry> + Send + Sync>> = match (stderr, file) {
        (None, None) => None,
        (Some(a), None) => Some(Box::new(a)),
        (None, Some(b)) => Some(Box::new(b)),
        (Some(a), Some(b)) => Some(Box::new(a.and_then(b))),
    };
    match (fmt, tracer) {
        (None, None) => None,
        (Some(f), None) => Some(f),
        (None, Some(t)) => Some(t.layer()),
        (Some(f), Some(t)) => Some(Box::new(
            f.and_then(t.layer()).and_then(CatchDispatch(slot)),
        )),
    }
}
