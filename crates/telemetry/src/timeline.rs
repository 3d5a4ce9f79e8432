//! `--metrics-out`: the whole timeline of a run's metrics. A sampler on the simulation's thread (a
//! [`TimeObserver`], so it adds no task or timer to the run) takes every series of the run's mode at a fixed
//! interval of virtual time; the samples are written as OpenMetrics text with timestamps (virtual time shifted
//! onto the run's wall-clock start), which `promtool tsdb create-blocks-from openmetrics` turns into blocks
//! that Prometheus serves: a run of a tenth of a second becomes its half-minute of simulated time.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use epochlab_sim::TimeObserver;
use prometheus::proto::{Metric, MetricType};

use crate::metrics::Metrics;
use crate::pace::WallStart;

/// One sample of one series.
#[derive(Clone, Debug)]
enum Value {
    Scalar(f64),
    Histogram {
        /// (upper bound, cumulative count), without `+Inf`.
        buckets: Vec<(f64, u64)>,
        count: u64,
        sum: f64,
    },
}

#[derive(Debug)]
struct Family {
    kind: MetricType,
    help: String,
    /// Per label set (`a="x",b="y"`): (timestamp in Unix ms, value), in time order.
    series: BTreeMap<String, Vec<(u64, Value)>>,
}

/// The samples of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpan {
    pub mode: String,
    /// Samples that held at least one series of the mode.
    pub samples: usize,
    /// The first and last of them, Unix ms.
    pub first_ms: u64,
    pub last_ms: u64,
}

/// The timeline of every run sampled into it, ready to be written as OpenMetrics text.
pub struct Timeline {
    metrics: Arc<Metrics>,
    interval: Duration,
    data: Mutex<Data>,
}

#[derive(Default)]
struct Data {
    families: BTreeMap<String, Family>,
    runs: Vec<RunSpan>,
}

impl Timeline {
    /// A timeline of `metrics`' series, sampled every `interval` of virtual time (at least 1 ms).
    pub fn new(metrics: Arc<Metrics>, interval: Duration) -> Arc<Self> {
        Arc::new(Self {
            metrics,
            interval: interval.max(Duration::from_millis(1)),
            data: Mutex::default(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Data> {
        self.data.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The sampler of a run of `mode` that started at `start`: give it to the run as a time observer, and call
    /// [`RunSampler::finish`] once the run has ended (and its metrics have been folded in).
    pub fn sampler(self: &Arc<Self>, mode: &str, start: WallStart) -> Arc<RunSampler> {
        Arc::new(RunSampler {
            timeline: self.clone(),
            mode: mode.to_string(),
            wall_origin_ms: start.unix_ms(),
            next: Mutex::new(Duration::ZERO),
        })
    }

    /// Every series of `mode` now, stamped `ts_ms`.
    fn sample(&self, mode: &str, ts_ms: u64) {
        let families = self.metrics.families_of(mode);
        if families.is_empty() {
            return;
        }
        let mut data = self.lock();
        match data.runs.last_mut() {
            Some(run) if run.mode == mode => {
                run.samples += 1;
                run.last_ms = ts_ms;
            }
            _ => data.runs.push(RunSpan {
                mode: mode.to_string(),
                samples: 1,
                first_ms: ts_ms,
                last_ms: ts_ms,
            }),
        }
        for mf in families {
            let family = data
                .families
                .entry(mf.name().to_string())
                .or_insert_with(|| Family {
                    kind: mf.get_field_type(),
                    help: mf.help().to_string(),
                    series: BTreeMap::new(),
                });
            for m in mf.get_metric() {
                let points = family.series.entry(labels(m)).or_default();
                points.push((ts_ms, value(family.kind, m)));
            }
        }
    }

    /// The runs sampled so far, in the order they ran.
    pub fn runs(&self) -> Vec<RunSpan> {
        self.lock().runs.clone()
    }

    /// The timeline as OpenMetrics text: per family its `# TYPE` and `# HELP`, then each series' samples in time
    /// order with their timestamps (seconds), ending in `# EOF`.
    pub fn to_openmetrics(&self) -> String {
        let data = self.lock();
        let mut out = String::new();
        for (name, family) in &data.families {
            write_family(&mut out, name, family);
        }
        out.push_str("# EOF\n");
        out
    }
}

/// A run's sampler: takes every series of its mode at each multiple of the interval, as virtual time passes
/// it.
pub struct RunSampler {
    timeline: Arc<Timeline>,
    mode: String,
    wall_origin_ms: u64,
    /// The next sampling time, virtual time since the run's start.
    next: Mutex<Duration>,
}

impl RunSampler {
    fn sample_before(&self, end: Duration, inclusive: bool) {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        while *next < end || (inclusive && *next == end) {
            let ts_ms = self.wall_origin_ms + next.as_millis() as u64;
            self.timeline.sample(&self.mode, ts_ms);
            *next += self.timeline.interval;
        }
    }

    /// The run ended at `end` (virtual time since its start): one last sample, of its final values, at the
    /// first sampling time not before `end`.
    pub fn finish(&self, end: Duration) {
        self.sample_before(end, false);
        let last = *self.next.lock().unwrap_or_else(|e| e.into_inner());
        self.sample_before(last, true);
    }
}

impl TimeObserver for RunSampler {
    /// Time jumped to `now`: every sampling time before it saw what the run showed before the jump.
    fn advanced(&self, now: Duration) {
        self.sample_before(now, false);
    }
}

/// `a="x",b="y"`, escaped as the text formats want.
fn labels(m: &Metric) -> String {
    let mut out = String::new();
    for (i, l) in m.get_label().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let v = l
            .value()
            .replace('\\', r"\\")
            .replace('"', "\\\"")
            .replace('\n', r"\n");
        let _ = write!(out, "{}=\"{v}\"", l.name());
    }
    out
}

fn value(kind: MetricType, m: &Metric) -> Value {
    match kind {
        MetricType::COUNTER => Value::Scalar(m.get_counter().get_value()),
        MetricType::HISTOGRAM => {
            let h = m.get_histogram();
            let buckets = h.get_bucket().iter();
            Value::Histogram {
                buckets: buckets
                    .map(|b| (b.upper_bound(), b.cumulative_count()))
                    .collect(),
                count: h.get_sample_count(),
                sum: h.get_sample_sum(),
            }
        }
        _ => Value::Scalar(m.get_gauge().get_value()),
    }
}

/// A float as OpenMetrics writes it.
fn float(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".into(),
        f64::INFINITY => "+Inf".into(),
        f64::NEG_INFINITY => "-Inf".into(),
        v => format!("{v}"),
    }
}

/// Unix ms as OpenMetrics' timestamp, seconds.
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

fn write_family(out: &mut String, name: &str, family: &Family) {
    let (kind, base) = match family.kind {
        MetricType::COUNTER => ("counter", name.strip_suffix("_total").unwrap_or(name)),
        MetricType::HISTOGRAM => ("histogram", name),
        _ => ("gauge", name),
    };
    let help = family.help.replace('\\', r"\\").replace('\n', r"\n");
    let _ = writeln!(out, "# TYPE {base} {kind}\n# HELP {base} {help}");
    for (labels, points) in &family.series {
        let sep = if labels.is_empty() { "" } else { "," };
        for (ms, v) in points {
            let ts = seconds(*ms);
            match v {
                Value::Scalar(v) => {
                    let _ = writeln!(out, "{name}{{{labels}}} {} {ts}", float(*v));
                }
                Value::Histogram {
                    buckets,
                    count,
                    sum,
                } => {
                    for (le, c) in buckets {
                        let le = float(*le);
                        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{le}\"}} {c} {ts}");
                    }
                    let _ = writeln!(
                        out,
                        "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {count} {ts}"
                    );
                    let _ = writeln!(out, "{name}_count{{{labels}}} {count} {ts}");
                    let _ = writeln!(out, "{name}_sum{{{labels}}} {} {ts}", float(*sum));
                }
            }
        }
    }
}
