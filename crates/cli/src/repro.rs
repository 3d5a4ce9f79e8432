//! `epochlab repro`: run the scenario in each mode, report, and check each mode's expectation.

use std::io::Write;
use std::sync::Arc;

use epochlab_sim::{
    BugId, ReproHooks, ReproParams, ReproReport, Setting, TimeObserver, TracePer, run_repro_with,
};
use epochlab_telemetry::{
    EmbeddedJaeger, ExportRuntime, KeyValue, Metrics, MetricsServer, Pacer, Progress, RunSource,
    RunTracer, Timeline, WallStart, WallTimer, instance_id, run_layer_to, wait_for_ctrl_c,
};

use crate::command::ReproArgs;
use crate::command::repro::flag_of;
use crate::determinism::{self, DeterminismError};
use crate::expect::{Verdict, exit_code};
use crate::human;
use crate::row::RunRow;
use crate::store_out::StoreOut;

/// A failure of `epochlab repro` itself (not of a run).
#[derive(Debug, thiserror::Error)]
pub enum ReproError {
    /// Bad input found late, e.g. an address in use.
    #[error("metrics: {0}")]
    Metrics(String),
    #[error("Jaeger: {0}")]
    Jaeger(#[from] epochlab_telemetry::JaegerError),
    #[error("traces: {0}")]
    Export(String),
    #[error("traces of the {mode} run: {detail}")]
    Tracer { mode: &'static str, detail: String },
    #[error(transparent)]
    Determinism(#[from] DeterminismError),
    #[error("cannot write the log to {path}: {detail}")]
    EventLog { path: String, detail: String },
    #[error("cannot write the metrics timeline to {path}: {detail}")]
    MetricsOut { path: String, detail: String },
    #[error("cannot write the meta store to {path}: {detail}")]
    MetaStoreOut { path: String, detail: String },
}

impl ReproError {
    /// 2 for bad input found late (an address that cannot be listened on, an endpoint that cannot be used);
    /// 1 when the determinism check could not run its children.
    pub fn exit_code(&self) -> u8 {
        match self {
            ReproError::Determinism(_) => 1,
            _ => 2,
        }
    }
}

/// One finished run.
pub struct Run {
    pub report: ReproReport,
    pub digest: String,
    pub virtual_ms: u64,
    pub wall_ms: u64,
    /// Why the run's traces could not be delivered, if they could not.
    pub trace_error: Option<String>,
}

/// The run's name in tables and logs: the mode for #14910, `22384 buggy` for the other bugs.
pub fn label(p: &ReproParams) -> String {
    match p.bug {
        BugId::Rw14910 => p.mode.as_str().to_string(),
        bug => format!("{bug} {}", p.mode),
    }
}

/// The flags that select exactly this run: the bug, mode and seed, and every setting its scenario reads.
pub fn flags(p: &ReproParams) -> Vec<String> {
    let mut own = vec![
        ("--bug", p.bug.as_str().to_string()),
        ("--mode", p.mode.as_str().to_string()),
        ("--seed", p.seed.to_string()),
    ];
    if p.meta_nodes != ReproParams::default().meta_nodes {
        own.push(("--meta-nodes", p.meta_nodes.to_string()));
    }
    let settings = Setting::ALL
        .into_iter()
        .filter(|s| p.bug.reads(*s))
        .filter_map(|s| Some((flag_of(s), setting_value(p, s)?)));
    own.into_iter()
        .chain(settings)
        .flat_map(|(f, v)| [f.to_string(), v])
        .collect()
}

/// A setting's value in `p`, as its flag takes it; `None` for a setting left out (no crash point).
fn setting_value(p: &ReproParams, setting: Setting) -> Option<String> {
    let value = match setting {
        Setting::Rows => p.rows.to_string(),
        Setting::Vnodes => p.vnodes.to_string(),
        Setting::Parallelism => p.parallelism.to_string(),
        Setting::ComputeNodes => p.compute_nodes.to_string(),
        Setting::RateLimit => p.rate_limit.to_string(),
        Setting::BarrierLatency => p.barrier_latency_ms.to_string(),
        Setting::CheckpointFrequency => p.checkpoint_frequency.to_string(),
        Setting::PersistCheck => if p.persist_check { "on" } else { "off" }.to_string(),
        Setting::CrashMetaAt => p.crash_meta_at?.to_string(),
    };
    Some(value)
}

/// The command that replays one run exactly.
pub fn replay(p: &ReproParams) -> String {
    format!("cargo xtask repro {}", flags(p).join(" "))
}

fn millis(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Where a run's spans go.
enum Traces<'a> {
    /// Straight into the embedded Jaeger's index.
    Embedded(&'a EmbeddedJaeger),
    /// Over OTLP/gRPC to a collector, from a real-time runtime.
    Otlp {
        endpoint: String,
        rt: &'a ExportRuntime,
    },
}

fn tracer(params: &ReproParams, t: &Traces<'_>) -> Result<RunTracer, ReproError> {
    let mode = params.mode.as_str();
    let attributes = vec![
        KeyValue::new("service.instance.id", instance_id(mode, params.seed)),
        KeyValue::new("epochlab.seed", params.seed as i64),
        KeyValue::new("epochlab.mode", mode),
        KeyValue::new("epochlab.scenario", params.bug.scenario_name()),
        KeyValue::new("epochlab.bug", params.bug.as_str()),
    ];
    match t {
        Traces::Embedded(jaeger) => Ok(RunTracer::start_embedded(jaeger, attributes)),
        Traces::Otlp { endpoint, rt } => RunTracer::start(endpoint, attributes, rt)
            .map_err(|detail| ReproError::Tracer { mode, detail }),
    }
}

/// How the runs are watched: metrics (served, sampled into a timeline, or both), pacing and traces.
struct Watch<'a> {
    metrics: Option<&'a Arc<Metrics>>,
    timeline: Option<&'a Arc<Timeline>>,
    pace: Option<f64>,
    traces: Option<&'a Traces<'a>>,
    trace_per: TracePer,
}

fn run_one(
    params: &ReproParams,
    log_file: Option<&std::path::Path>,
    event_log: Option<&std::path::Path>,
    store_path: Option<&std::path::Path>,
    watch: &Watch<'_>,
) -> Result<Run, ReproError> {
    let wall = WallTimer::start();
    let tracer = watch.traces.map(|t| tracer(params, t)).transpose()?;
    let mode = params.mode.as_str();
    // The run's wall-clock start: what its metrics' times are shifted onto and its pace measured from.
    let start = WallStart::now();
    let hook: Option<epochlab_sim::ClusterHook> = watch.metrics.map(|m| {
        m.prepare_run(0, mode);
        let m = m.clone();
        Box::new(move |cluster| m.add_run(RunSource::started_at(mode, cluster, start)))
            as epochlab_sim::ClusterHook
    });
    let progress = Progress::on_terminal(&label(params));
    let hook = match &progress {
        Some(p) => Some(p.hook(hook)),
        None => hook,
    };
    let store_out = StoreOut::default();
    let hook = match store_path {
        Some(_) => Some(store_out.hook(hook)),
        None => hook,
    };
    let sampler = watch.timeline.map(|t| t.sampler(mode, start));
    let mut time_observers: Vec<Arc<dyn TimeObserver>> = Vec::new();
    if let Some(p) = &progress {
        time_observers.push(p.clone());
    }
    if let Some(s) = &sampler {
        time_observers.push(s.clone());
    }
    if let Some(pace) = watch.pace {
        time_observers.push(Arc::new(Pacer::new(pace, start)));
    }
    let hooks = ReproHooks {
        on_cluster: hook,
        tracing_layer: run_layer_to(tracer.as_ref(), log_file.and_then(append_to)),
        trace_per: watch.trace_per,
        time_observers,
        meta_store: None,
        mutation: None,
    };
    let out = run_repro_with(params, hooks);
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(m) = watch.metrics {
        // Fold in the run's final values and release its cluster (its gauges keep their last values).
        m.end_run(0);
    }
    if let Some(s) = sampler {
        s.finish(out.virtual_elapsed);
    }
    let trace_error = tracer.and_then(|t| t.finish().err());
    let wall_ms = millis(wall.elapsed());
    if let Some(path) = event_log
        && let Err(e) = write_event_log(path, &out.log.lines())
    {
        let path = path.display();
        eprintln!("epochlab repro: cannot write the event log to {path}: {e}");
    }
    if let Some(path) = store_path {
        store_out
            .write(path, "repro")
            .map_err(|e| store_out_error(path.display().to_string(), e.to_string()))?;
    }
    Ok(Run {
        report: out.value,
        digest: out.digest,
        virtual_ms: millis(out.virtual_elapsed),
        wall_ms,
        trace_error,
    })
}

/// The telemetry the flags turn on, alive while the runs go and while it serves afterwards.
struct Telemetry {
    metrics: Option<Arc<Metrics>>,
    /// Serves `/metrics` until dropped.
    _server: Option<MetricsServer>,
    /// `--metrics-out`: where the runs' timeline goes, and the timeline.
    timeline: Option<(std::path::PathBuf, Arc<Timeline>)>,
    jaeger: Option<EmbeddedJaeger>,
    otlp_endpoint: Option<String>,
    export_rt: Option<ExportRuntime>,
}

impl Telemetry {
    fn start(args: &ReproArgs) -> Result<Self, ReproError> {
        let wanted = args.metrics_addr.is_some() || args.metrics_out.is_some();
        let metrics = wanted.then(|| Arc::new(Metrics::new()));
        let server = match (args.metrics_addr, &metrics) {
            (Some(addr), Some(metrics)) => {
                let server =
                    MetricsServer::start(addr, metrics.clone()).map_err(ReproError::Metrics)?;
                eprintln!("metrics: http://{}/metrics", server.local_addr());
                Some(server)
            }
            _ => None,
        };
        let timeline = match (&args.metrics_out, &metrics) {
            (Some(path), Some(m)) => Some((
                path.clone(),
                Timeline::new(m.clone(), args.metrics_interval()),
            )),
            _ => None,
        };
        let jaeger = match args.jaeger {
            true => Some(EmbeddedJaeger::start(args.jaeger_addr())?),
            false => None,
        };
        // `OTEL_EXPORTER_OTLP_ENDPOINT` is honoured when no collector is named on the command line.
        let otlp_endpoint = args.otlp_endpoint.clone().or_else(|| {
            (!args.jaeger)
                .then(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
                .flatten()
                .filter(|v| !v.is_empty())
        });
        let export_rt = match &otlp_endpoint {
            Some(_) => Some(ExportRuntime::start().map_err(ReproError::Export)?),
            None => None,
        };
        Ok(Self {
            metrics,
            _server: server,
            timeline,
            jaeger,
            otlp_endpoint,
            export_rt,
        })
    }

    fn traces(&self) -> Option<Traces<'_>> {
        match (&self.jaeger, &self.otlp_endpoint, &self.export_rt) {
            (Some(j), _, _) => Some(Traces::Embedded(j)),
            (None, Some(endpoint), Some(rt)) => Some(Traces::Otlp {
                endpoint: endpoint.clone(),
                rt,
            }),
            _ => None,
        }
    }

    /// Write `--metrics-out`'s timeline and say, on one line, what it holds (or why it could not be written).
    fn write_timeline(&self, interval: std::time::Duration) {
        let Some((path, timeline)) = &self.timeline else {
            return;
        };
        let shown = path.display();
        if let Err(e) = std::fs::write(path, timeline.to_openmetrics()) {
            eprintln!("epochlab repro: cannot write the metrics timeline to {shown}: {e}");
            return;
        }
        let seconds = |ms: u64| format!("{}.{:03}", ms / 1000, ms % 1000);
        let runs: Vec<String> = timeline
            .runs()
            .iter()
            .map(|r| {
                let (first, last) = (seconds(r.first_ms), seconds(r.last_ms));
                format!("{} {} samples at {first}..{last}", r.mode, r.samples)
            })
            .collect();
        let from = timeline
            .runs()
            .iter()
            .map(|r| r.first_ms)
            .min()
            .unwrap_or(0);
        let to = timeline.runs().iter().map(|r| r.last_ms).max().unwrap_or(0);
        eprintln!(
            "metrics timeline: {shown}: {} (Unix seconds, every {} ms of simulated time; in a Grafana URL: \
             &from={from}&to={to})",
            runs.join(", "),
            interval.as_millis()
        );
    }

    /// Say where the traces went (or, in one line, that they could not be delivered), then serve as long as
    /// asked.
    fn finish(self, serve_for: Option<std::time::Duration>, trace_error: Option<&str>) {
        if let Some(j) = &self.jaeger {
            let ui = j.ui_addr();
            eprintln!("Jaeger UI: http://{ui}/search?service=epochlab");
            match failing_trace(ui) {
                Some(id) => eprintln!("the failing persist's trace: http://{ui}/trace/{id}"),
                None => eprintln!("no failing span among the traces"),
            }
        } else if let Some(endpoint) = &self.otlp_endpoint {
            match trace_error {
                None => eprintln!("traces sent to {endpoint} (service epochlab)"),
                Some(e) => eprintln!("epochlab repro: traces not delivered to {endpoint}: {e}"),
            }
        }
        // The flags guarantee that --serve-for comes with metrics or the embedded Jaeger.
        match (serve_for, &self.jaeger) {
            (Some(d), _) => {
                eprintln!("serving for {} s", d.as_secs());
                std::thread::sleep(d);
            }
            (None, Some(j)) => {
                eprintln!("serving until Ctrl-C");
                wait_for_ctrl_c(j.handle());
            }
            (None, None) => {}
        }
    }
}

/// A file the user asked for must be writable before anything runs.
fn writable(
    path: &std::path::Path,
    err: fn(String, String) -> ReproError,
) -> Result<(), ReproError> {
    std::fs::write(path, b"").map_err(|e| err(path.display().to_string(), e.to_string()))
}

fn log_error(path: String, detail: String) -> ReproError {
    ReproError::EventLog { path, detail }
}

fn metrics_out_error(path: String, detail: String) -> ReproError {
    ReproError::MetricsOut { path, detail }
}

fn store_out_error(path: String, detail: String) -> ReproError {
    ReproError::MetaStoreOut { path, detail }
}

/// Run the requested modes; the exit status, or an error found late (an address that cannot be listened on).
pub fn run(args: &ReproArgs) -> Result<u8, ReproError> {
    if args.check_determinism {
        return Ok(determinism::check(args)?);
    }
    if let Some(path) = &args.log_file {
        writable(path, log_error)?;
    }
    for run in args.runs() {
        if let Some(path) = args.event_log_of(run) {
            writable(&path, log_error)?;
        }
        if let Some(path) = args.meta_store_out_of(run) {
            writable(&path, store_out_error)?;
        }
    }
    if let Some(path) = &args.metrics_out {
        writable(path, metrics_out_error)?;
    }
    let telemetry = Telemetry::start(args)?;
    if let Some(x) = args.pace() {
        // Said before the runs: at 1x they take as long as they simulate, about half a minute each.
        eprintln!("paced at {x}x wall clock: {x} s of simulated time per second (--pace)");
    }
    let runs = run_modes(args, &telemetry)?;
    let mut text = Vec::new();
    if args.json {
        for r in &runs {
            print_json(&mut text, &RunRow::of(r));
        }
    } else {
        human::print(&mut text, &args.params, args.pace(), &runs);
    }
    out!("{}", String::from_utf8_lossy(&text));
    telemetry.write_timeline(args.metrics_interval());
    let trace_error = runs.iter().find_map(|r| r.trace_error.as_deref());
    telemetry.finish(args.serve_for, trace_error);
    let code = exit_code(runs.iter().map(|r| Verdict::of(&r.report)));
    // Traces the user asked for that did not arrive make the command fail.
    Ok(if trace_error.is_some() {
        code.max(1)
    } else {
        code
    })
}

/// Each bug's run in each mode, one after the other.
fn run_modes(args: &ReproArgs, telemetry: &Telemetry) -> Result<Vec<Run>, ReproError> {
    let traces = telemetry.traces();
    let watch = Watch {
        metrics: telemetry.metrics.as_ref(),
        timeline: telemetry.timeline.as_ref().map(|(_, t)| t),
        pace: args.pace(),
        traces: traces.as_ref(),
        trace_per: args.trace_per,
    };
    let mut runs: Vec<Run> = Vec::new();
    for run in args.runs() {
        let params = args.params_of(run);
        let log = args.event_log_of(run);
        let store = args.meta_store_out_of(run);
        let log_file = args.log_file.as_deref();
        runs.push(run_one(
            &params,
            log_file,
            log.as_deref(),
            store.as_deref(),
            &watch,
        )?);
    }
    Ok(runs)
}

/// Write a run's event log, a line per event.
pub fn write_event_log(path: &std::path::Path, lines: &[String]) -> std::io::Result<()> {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text)
}

/// The log file, opened to append one run's lines after the previous run's.
fn append_to(path: &std::path::Path) -> Option<std::fs::File> {
    std::fs::OpenOptions::new().append(true).open(path).ok()
}

/// One JSON object on one line.
pub fn print_json(out: &mut impl Write, row: &impl serde::Serialize) {
    match serde_json::to_string(row) {
        Ok(line) => {
            let _ = writeln!(out, "{line}");
        }
        // Only a map with non-string keys fails to serialize; our rows have none.
        Err(e) => eprintln!("epochlab repro: cannot write a JSON row: {e}"),
    }
}

/// A plain HTTP/1.0 GET of `path` on `addr`; the body.
fn http_get(addr: std::net::SocketAddr, path: &str) -> Option<String> {
    use std::io::Read;
    let mut s =
        std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    out.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// The id of a trace in the collector that holds a failed `persist backfill state` span (the first failure).
fn failing_trace(ui: std::net::SocketAddr) -> Option<String> {
    // The collector's own search: a trace with a failed `persist backfill state` span, the earliest one.
    let query = "/api/traces?service=epochlab&operation=persist%20backfill%20state&tag=error:true&limit=100000";
    let body = http_get(ui, query)?;
    let traces: serde_json::Value = serde_json::from_str(&body).ok()?;
    let start = |t: &serde_json::Value| {
        let spans = t["spans"].as_array().into_iter().flatten();
        spans.filter_map(|s| s["startTime"].as_u64()).min()
    };
    traces["data"].as_array()?.iter().min_by_key(|t| start(t))?["traceID"]
        .as_str()
        .map(str::to_string)
}
