//! `epochlab repro`: run the scenario in each mode, report, and check each mode's expectation.

use std::io::Write;
use std::process::Command;
use std::sync::Arc;

use epochlab_meta::DropMode;
use epochlab_sim::{Outcome, ReproHooks, ReproParams, ReproReport, run_repro_with};
use epochlab_telemetry::{
    EmbeddedJaeger, ExportRuntime, KeyValue, Metrics, MetricsServer, RunSource, RunTracer,
    RuntimeHandle, wait_for_ctrl_c,
};
use epochlab_telemetry::{WallTimer, run_layer};

use crate::args::ReproArgs;

struct Run {
    report: ReproReport,
    digest: String,
    virtual_ms: u128,
    wall_ms: u128,
}

/// The flags that select exactly this run.
fn flags(p: &ReproParams) -> Vec<String> {
    [
        ("--mode", p.mode.as_str().to_string()),
        ("--seed", p.seed.to_string()),
        ("--rows", p.rows.to_string()),
        ("--vnodes", p.vnodes.to_string()),
        ("--parallelism", p.parallelism.to_string()),
        ("--compute-nodes", p.compute_nodes.to_string()),
        ("--rate-limit", p.rate_limit.to_string()),
        ("--barrier-latency-ms", p.barrier_latency_ms.to_string()),
        ("--checkpoint-frequency", p.checkpoint_frequency.to_string()),
    ]
    .into_iter()
    .flat_map(|(f, v)| [f.to_string(), v])
    .collect()
}

/// The command that replays one run exactly.
fn replay(p: &ReproParams) -> String {
    format!("cargo xtask repro {}", flags(p).join(" "))
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json(run: &Run) -> String {
    let r = &run.report;
    let opt = |s: &Option<String>| s.as_deref().map_or("null".to_string(), json_string);
    format!(
        "{{\"mode\":{},\"seed\":{},\"outcome\":{},\"error\":{},\"failing_vnode\":{},\"epochs\":{},\
         \"max_committed_epoch\":{},\"recoveries\":{},\"virtual_ms\":{},\"wall_ms\":{},\"digest\":{},\"replay\":{}}}",
        json_string(r.params.mode.as_str()),
        r.params.seed,
        json_string(r.outcome.as_str()),
        opt(&r.error),
        r.failing_vnode
            .map_or("null".to_string(), |v| v.to_string()),
        r.epochs,
        r.max_committed_epoch,
        r.recoveries,
        run.virtual_ms,
        run.wall_ms,
        json_string(&run.digest),
        json_string(&replay(&r.params)),
    )
}

/// Whether a run met its mode's expectation; `Err(true)` when buggy was merely not reproducible.
fn expectation(r: &ReproReport) -> Result<(), bool> {
    match r.params.mode {
        DropMode::Buggy => match r.outcome {
            Outcome::Failed
                if r.error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("row [") && e.ends_with("not found")) =>
            {
                Ok(())
            }
            Outcome::NotReproducible => Err(true),
            _ => Err(false),
        },
        DropMode::Fixed => (r.outcome == Outcome::Passed).then_some(()).ok_or(false),
        DropMode::PurgeBeforeReset => Ok(()),
    }
}

/// Where a run's spans go: the collector's endpoint and a real-time runtime to export from.
struct Traces<'a> {
    endpoint: String,
    rt: &'a RuntimeHandle,
}

fn run_one(
    params: &ReproParams,
    event_log: Option<&std::path::Path>,
    metrics: Option<&Arc<Metrics>>,
    traces: Option<&Traces<'_>>,
) -> Result<Run, String> {
    let wall = WallTimer::start();
    let tracer = match traces {
        Some(t) => {
            let attributes = vec![
                KeyValue::new(
                    "service.instance.id",
                    format!("{}-{}", params.mode.as_str(), params.seed),
                ),
                KeyValue::new("epochlab.seed", params.seed as i64),
                KeyValue::new("epochlab.mode", params.mode.as_str()),
                KeyValue::new("epochlab.scenario", "risingwave-14910"),
            ];
            Some(RunTracer::start(&t.endpoint, attributes, t.rt)?)
        }
        None => None,
    };
    let hook: Option<epochlab_sim::ClusterHook> = metrics.map(|m| {
        let m = m.clone();
        let mode = params.mode.as_str();
        Box::new(move |cluster| m.add_run(RunSource::starting_now(mode, cluster)))
            as epochlab_sim::ClusterHook
    });
    let hooks = ReproHooks {
        on_cluster: hook,
        tracing_layer: run_layer(tracer.as_ref()),
    };
    let out = run_repro_with(params, hooks);
    if let Some(t) = tracer
        && let Err(e) = t.finish()
    {
        eprintln!(
            "epochlab repro: traces of the {} run: {e}",
            params.mode.as_str()
        );
    }
    let wall_ms = wall.elapsed().as_millis();
    if let Some(path) = event_log {
        let mut text = out.log.lines().join("\n");
        text.push('\n');
        if let Err(e) = std::fs::write(path, text) {
            eprintln!(
                "epochlab repro: cannot write the event log to {}: {e}",
                path.display()
            );
        }
    }
    Ok(Run {
        report: out.value,
        digest: out.digest,
        virtual_ms: out.virtual_elapsed.as_millis(),
        wall_ms,
    })
}

/// Run the requested modes; `Err` is bad input found late (an address that cannot be listened on).
pub fn run(args: &ReproArgs) -> Result<u8, String> {
    if args.check_determinism {
        return Ok(check_determinism(args));
    }
    let (metrics, server) = match args.metrics_addr {
        Some(addr) => {
            let modes: Vec<&str> = args.modes.iter().map(|m| m.as_str()).collect();
            let metrics = Arc::new(Metrics::new(&modes));
            let server = MetricsServer::start(addr, metrics.clone())?;
            eprintln!("metrics: http://{}/metrics", server.local_addr());
            (Some(metrics), Some(server))
        }
        None => (None, None),
    };
    let jaeger = if args.jaeger {
        Some(EmbeddedJaeger::start(args.jaeger_addr)?)
    } else {
        None
    };
    // `OTEL_EXPORTER_OTLP_ENDPOINT` is honoured when no collector is named on the command line.
    let otlp_endpoint = args.otlp_endpoint.clone().or_else(|| {
        (!args.jaeger)
            .then(|| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").ok())
            .flatten()
            .filter(|v| !v.is_empty())
    });
    let export_rt = match &otlp_endpoint {
        Some(_) => Some(ExportRuntime::start()?),
        None => None,
    };
    let traces = match (&jaeger, &otlp_endpoint, &export_rt) {
        (Some(j), _, _) => Some(Traces {
            endpoint: j.otlp_endpoint(),
            rt: j.handle(),
        }),
        (None, Some(endpoint), Some(rt)) => Some(Traces {
            endpoint: endpoint.clone(),
            rt: rt.handle(),
        }),
        _ => None,
    };
    let mut runs: Vec<Run> = Vec::new();
    for &mode in &args.modes {
        let params = ReproParams {
            mode,
            ..args.params.clone()
        };
        runs.push(run_one(
            &params,
            args.event_log.as_deref(),
            metrics.as_ref(),
            traces.as_ref(),
        )?);
    }
    let mut stdout = std::io::stdout().lock();
    if args.json {
        for r in &runs {
            let _ = writeln!(stdout, "{}", json(r));
        }
    } else {
        print_human(&mut stdout, args, &runs);
    }
    let _ = stdout.flush();
    drop(stdout);
    if let Some(j) = &jaeger {
        let ui = j.ui_addr();
        eprintln!("Jaeger UI: http://{ui}/search?service=epochlab");
        match failing_trace(ui) {
            Some(id) => eprintln!("the failing epoch's trace: http://{ui}/trace/{id}"),
            None => eprintln!("no failing span among the traces"),
        }
    } else if let Some(endpoint) = &otlp_endpoint {
        eprintln!("traces sent to {endpoint} (service epochlab)");
    }
    match (args.serve_for, &jaeger) {
        (Some(d), _) if server.is_some() || jaeger.is_some() => {
            eprintln!("serving for {} s", d.as_secs());
            std::thread::sleep(d);
        }
        (None, Some(j)) => {
            eprintln!("serving until Ctrl-C");
            wait_for_ctrl_c(j.handle());
        }
        _ => {}
    }
    drop(server);
    drop(jaeger);
    let unmet: Vec<bool> = runs
        .iter()
        .filter_map(|r| expectation(&r.report).err())
        .collect();
    Ok(if unmet.is_empty() {
        0
    } else if unmet
        .iter()
        .all(|only_not_reproducible| *only_not_reproducible)
    {
        3
    } else {
        1
    })
}

fn print_human(out: &mut impl Write, args: &ReproArgs, runs: &[Run]) {
    let p = &args.params;
    let _ = writeln!(
        out,
        "epochlab repro: RisingWave #14910, seed {}: {} rows, {} vnodes, parallelism {}, {} compute nodes, \
         rate limit {} row/s, sink {} ms/chunk, checkpoint every {} barrier(s)\n",
        p.seed,
        p.rows,
        p.vnodes,
        p.parallelism,
        p.compute_nodes,
        p.rate_limit,
        p.barrier_latency_ms,
        p.checkpoint_frequency
    );
    let _ = writeln!(
        out,
        "{:<19} {:<17} {:<44} {:>6} {:>20} {:>10} {:>10} {:>8}",
        "mode",
        "outcome",
        "error",
        "epochs",
        "max committed epoch",
        "recoveries",
        "virtual",
        "wall"
    );
    for r in runs {
        let rep = &r.report;
        let mut error = rep.error.clone().unwrap_or_else(|| "-".into());
        if error.chars().count() > 44 {
            error = error.chars().take(41).collect::<String>() + "...";
        }
        let met = if expectation(rep).is_ok() {
            ""
        } else {
            " (unexpected)"
        };
        let _ = writeln!(
            out,
            "{:<19} {:<17} {:<44} {:>6} {:>20} {:>10} {:>8.1} s {:>5} ms",
            rep.params.mode.as_str(),
            format!("{}{met}", rep.outcome.as_str()),
            error,
            rep.epochs,
            rep.max_committed_epoch,
            rep.recoveries,
            r.virtual_ms as f64 / 1000.0,
            r.wall_ms
        );
    }
    for r in runs {
        let rep = &r.report;
        if rep.outcome != Outcome::Failed {
            continue;
        }
        let mode = rep.params.mode.as_str();
        let _ = writeln!(
            out,
            "\n{mode}: {}",
            rep.error.as_deref().unwrap_or("failed")
        );
        if !rep.timeline.is_empty() {
            let _ = writeln!(
                out,
                "{mode}: timeline (virtual seconds; the unregister, the actor's persists, the failing read)"
            );
            for l in &rep.timeline {
                let _ = writeln!(out, "  {l}");
            }
        }
        if !rep.original_lines.is_empty() {
            let _ = writeln!(
                out,
                "{mode}: the failing actor's log, the lines of the original failure log"
            );
            for l in &rep.original_lines {
                let _ = writeln!(out, "  {l}");
            }
            let _ = writeln!(out, "  {}", rep.error.as_deref().unwrap_or(""));
        }
        for v in &rep.violations {
            let _ = writeln!(out, "{mode}: invariant violation: {v}");
        }
    }
    let _ = writeln!(out, "\nreplay:");
    for r in runs {
        let _ = writeln!(
            out,
            "  {}    # digest {}",
            replay(&r.report.params),
            r.digest
        );
    }
}

/// Run each mode twice in separate child processes and compare their event logs.
fn check_determinism(args: &ReproArgs) -> u8 {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("epochlab repro: cannot find my own executable: {e}");
            return 1;
        }
    };
    let dir = std::env::temp_dir().join(format!("epochlab-determinism-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("epochlab repro: cannot create {}: {e}", dir.display());
        return 1;
    }
    let p = &args.params;
    let mut ok = true;
    for &mode in &args.modes {
        let mut digests = Vec::new();
        let mut logs = Vec::new();
        for i in 0..2 {
            let log = dir.join(format!("{}-{i}.log", mode.as_str()));
            let params = ReproParams { mode, ..p.clone() };
            let out = Command::new(&exe)
                .args(["repro", "--json"])
                .args(flags(&params))
                .arg("--event-log")
                .arg(&log)
                .output();
            let out = match out {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("epochlab repro: cannot run a child: {e}");
                    return 1;
                }
            };
            let text = String::from_utf8_lossy(&out.stdout);
            let digest = text
                .split("\"digest\":\"")
                .nth(1)
                .and_then(|s| s.split('"').next())
                .unwrap_or("")
                .to_string();
            digests.push(digest);
            logs.push(std::fs::read_to_string(&log).unwrap_or_default());
        }
        if digests[0] == digests[1] && !digests[0].is_empty() {
            println!(
                "{:<19} deterministic: digest {} in both processes",
                mode.as_str(),
                digests[0]
            );
            continue;
        }
        ok = false;
        println!(
            "{:<19} NOT deterministic: digests {} and {}",
            mode.as_str(),
            digests[0],
            digests[1]
        );
        let (a, b): (Vec<&str>, Vec<&str>) = (logs[0].lines().collect(), logs[1].lines().collect());
        match a.iter().zip(&b).position(|(x, y)| x != y) {
            Some(i) => {
                println!("  first difference at event {}:", i + 1);
                println!("  1: {}", a[i]);
                println!("  2: {}", b[i]);
            }
            None => println!(
                "  one log is a prefix of the other ({} vs {} events)",
                a.len(),
                b.len()
            ),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if ok { 0 } else { 1 }
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
    let body = http_get(ui, "/api/traces?service=epochlab&limit=5000")?;
    // Span objects are encoded with their keys in order, starting at "duration".
    body.split("{\"duration\":").skip(1).find_map(|span| {
        let failed = span.contains("\"operationName\":\"persist backfill state\"")
            && span.contains("{\"key\":\"error\",\"type\":\"bool\",\"value\":true}");
        let id = span.split("\"traceID\":\"").nth(1)?.split('"').next()?;
        failed.then(|| id.to_string())
    })
}
