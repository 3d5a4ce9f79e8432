//! The command line as parsed: each flag in both spellings, the ranges, the one-line errors, and the
//! conflicts and requirements (declared on the flags, or checked on the values).

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use clap::CommandFactory;
use epochlab_sim::{BugId, BugMode, Mode, ReproParams};
use epochlab_simulation::{KillRoles, RunnerEra};

use super::values::*;
use super::*;
use crate::soak::{Scenario, SoakArgs};

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

/// The one line of bad input, without `epochlab COMMAND: `; it is one line.
fn what(args: &[&str]) -> String {
    match parse(os(args)) {
        Err(e) => {
            let line = e.to_string();
            assert!(!line.contains('\n'), "{args:?}: {line}");
            e.what
        }
        Ok(other) => panic!("{args:?} parsed: {other:?}"),
    }
}

fn repro(args: &[&str]) -> Result<ReproArgs, String> {
    let argv = [&["repro"][..], args].concat();
    match parse(os(&argv)) {
        Ok(Invocation::Repro(a)) => Ok(*a),
        Ok(other) => panic!("{args:?}: {other:?}"),
        Err(_) => Err(what(&argv)),
    }
}

fn soak(args: &[&str]) -> Result<SoakArgs, String> {
    let argv = [&["soak"][..], args].concat();
    match parse(os(&argv)) {
        Ok(Invocation::Soak(a)) => Ok(*a),
        Ok(other) => panic!("{args:?}: {other:?}"),
        Err(_) => Err(what(&argv)),
    }
}

fn long_help(command: &str) -> String {
    match parse(os(&[command, "--help"])) {
        Ok(Invocation::Print(text)) => text,
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn defaults_run_every_mode_with_the_scenario_defaults() {
    let a = repro(&[]).expect("no flags");
    assert_eq!(a.modes, Mode::ALL.to_vec());
    assert_eq!(a.bugs, vec![BugId::Rw14910]);
    assert_eq!(
        a.params,
        ReproParams {
            mode: a.params.mode,
            ..ReproParams::default()
        }
    );
    assert!(a.params.persist_check);
    assert_eq!(a.jaeger_addr(), "127.0.0.1:16686".parse().expect("address"));
}

#[test]
fn every_flag_is_read_in_both_spellings() {
    let a = repro(&[
        "--mode",
        "fixed",
        "--seed=7",
        "--rows",
        "12",
        "--vnodes=1",
        "--parallelism",
        "3",
        "--compute-nodes",
        "4",
        "--rate-limit",
        "5",
        "--barrier-latency-ms=0",
        "--checkpoint-frequency",
        "6",
        "--persist-check=off",
        "--json",
    ])
    .expect("valid flags");
    assert_eq!(a.modes, vec![Mode::Fixed]);
    let p = &a.params;
    assert_eq!(
        (p.seed, p.rows, p.vnodes, p.parallelism, p.compute_nodes),
        (7, 12, 1, 3, 4)
    );
    assert_eq!(
        (p.rate_limit, p.barrier_latency_ms, p.checkpoint_frequency),
        (5, 0, 6)
    );
    assert!(!p.persist_check);
    assert!(a.json);
}

#[test]
fn persist_check_takes_on_or_off() {
    assert!(
        repro(&["--persist-check", "on"])
            .unwrap()
            .params
            .persist_check
    );
    assert!(
        !repro(&["--persist-check", "off"])
            .unwrap()
            .params
            .persist_check
    );
    for bad in ["yes", "true", "ON"] {
        assert_eq!(
            repro(&["--persist-check", bad]).unwrap_err(),
            format!("--persist-check takes on or off, not `{bad}`")
        );
    }
    assert_eq!(
        repro(&["--persist-check="]).unwrap_err(),
        "--persist-check needs a value"
    );
}

#[test]
fn numbers_outside_their_range_are_rejected() {
    let cases = [
        ("--rows", ROWS),
        ("--vnodes", VNODES),
        ("--parallelism", PARALLELISM),
        ("--compute-nodes", COMPUTE_NODES),
        ("--rate-limit", RATE_LIMIT),
        ("--barrier-latency-ms", BARRIER_LATENCY_MS),
        ("--checkpoint-frequency", CHECKPOINT_FREQUENCY),
    ];
    for (flag, range) in cases {
        let (lo, hi) = (range.lo.to_string(), range.hi.to_string());
        repro(&[flag, &lo]).expect("the lowest value");
        repro(&[flag, &hi]).expect("the highest value");
        let above = (range.hi + 1).to_string();
        assert_eq!(
            repro(&[flag, &above]).unwrap_err(),
            format!("{flag} must be in {lo}..={hi}, not {above}")
        );
        if range.lo > 0 {
            let below = (range.lo - 1).to_string();
            let err = repro(&[flag, &below]).unwrap_err();
            assert!(err.starts_with(&format!("{flag} must be in")), "{err}");
        }
        for junk in ["-1", "x", "1.5", "99999999999999999999999"] {
            let err = repro(&[flag, junk]).unwrap_err();
            let want = format!("{flag} takes a whole number in {lo}..={hi}, not `{junk}`");
            assert_eq!(err, want);
        }
    }
    repro(&["--seed", &u64::MAX.to_string()]).expect("any u64 seed");
    let err = repro(&["--jaeger", "--serve-for", "86401"]).unwrap_err();
    assert_eq!(err, "--serve-for must be in 0..=86400, not 86401");
}

#[test]
fn help_states_every_range_and_default() {
    let help = long_help("repro");
    let d = ReproParams::default();
    let cases = [
        ("--rows", ROWS, d.rows as u64),
        ("--vnodes", VNODES, d.vnodes.into()),
        ("--parallelism", PARALLELISM, d.parallelism as u64),
        ("--compute-nodes", COMPUTE_NODES, d.compute_nodes.into()),
        ("--rate-limit", RATE_LIMIT, d.rate_limit.into()),
        (
            "--barrier-latency-ms",
            BARRIER_LATENCY_MS,
            d.barrier_latency_ms,
        ),
        (
            "--checkpoint-frequency",
            CHECKPOINT_FREQUENCY,
            d.checkpoint_frequency.into(),
        ),
        (
            "--metrics-interval-ms",
            METRICS_INTERVAL_MS,
            repro::DEFAULT_METRICS_INTERVAL.as_millis() as u64,
        ),
    ];
    let text_of = |flag: &str| -> String {
        let arg = Cli::command()
            .find_subcommand("repro")
            .and_then(|r| {
                r.get_arguments()
                    .find(|a| a.get_long() == flag.get(2..))
                    .cloned()
            })
            .unwrap_or_else(|| panic!("{flag} is a flag of repro"));
        arg.get_long_help()
            .or(arg.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default()
    };
    for (flag, range, default) in cases {
        let want = format!("{}..={}, default {default}", range.lo, range.hi);
        assert!(text_of(flag).starts_with(&want), "{flag}: lacks `{want}`");
    }
    assert!(text_of("--serve-for").starts_with(&format!("{}..={}", SERVE_FOR.lo, SERVE_FOR.hi)));
    assert!(text_of("--seed").starts_with(&format!("{}..={}", SEED.lo, SEED.hi)));
    assert!(help.contains(&format!("[default: {}]", d.seed)), "{help}");
    let (lo, hi) = (epochlab_telemetry::MIN_PACE, epochlab_telemetry::MAX_PACE);
    assert!(text_of("--pace").starts_with(&format!("{lo}..={hi} or off")));
    assert!(text_of("--persist-check").starts_with("default on"));
    for word in [
        "stuck",
        "not_reproducible",
        "0 every",
        "1 a mode",
        "2 bad",
        "3 nothing",
        "--persist-check <on|off>",
    ] {
        assert!(help.contains(word), "{word}");
    }
}

/// The bugs and modes of the help and of the completions are the catalogue's.
#[test]
fn the_bugs_and_modes_come_from_the_catalogue() {
    let help = long_help("repro");
    let value = |name: &str| -> String {
        let line = help
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("- {name}:")));
        let line = line.unwrap_or_else(|| panic!("{name} is a possible value: {help}"));
        line.split_once(':')
            .map(|(_, h)| h.trim().to_string())
            .unwrap_or_default()
    };
    for bug in BugId::ALL {
        assert_eq!(value(bug.as_str()), bug.title());
    }
    assert_eq!(value("purge-before-reset"), "only bug 14910");
    let script = completions(Shell::Bash);
    let ids: Vec<&str> = BugId::ALL.map(BugId::as_str).to_vec();
    assert!(
        script.contains(&format!("{} all", ids.join(" "))),
        "{script}"
    );
    let err = repro(&["--bug", "99999"]).unwrap_err();
    assert_eq!(
        err,
        format!("--bug takes {} or all, not `99999`", ids.join(", "))
    );
}

#[cfg(unix)]
#[test]
fn a_non_utf8_argument_is_named_by_its_position() {
    use std::os::unix::ffi::OsStringExt;
    let bad = OsString::from_vec(vec![b'-', b'-', 0xff]);
    let argv = vec![OsString::from("repro"), OsString::from("--seed"), bad];
    let err = parse(argv).unwrap_err();
    assert_eq!(err.to_string(), "epochlab: argument 3 is not valid UTF-8");
}

#[test]
fn commands() {
    let usage =
        "usage: epochlab repro|soak|soak-report|slt|corpus|ci|bugs|triage|completions [FLAGS]";
    assert_eq!(
        parse(os(&[])).unwrap_err().to_string(),
        format!("epochlab: no command given; {usage} (epochlab --help)")
    );
    assert_eq!(
        parse(os(&["sok"])).unwrap_err().to_string(),
        format!("epochlab: unknown command `sok`; {usage}")
    );
    assert!(matches!(parse(os(&["soak"])), Ok(Invocation::Soak(_))));
    assert!(matches!(parse(os(&["bugs"])), Ok(Invocation::Bugs)));
    for help in [
        &["soak", "--help"][..],
        &["help"],
        &["--help"],
        &["repro", "--json", "-h"],
    ] {
        assert!(
            matches!(parse(os(help)), Ok(Invocation::Print(_))),
            "{help:?}"
        );
    }
    let Ok(Invocation::Print(version)) = parse(os(&["--version"])) else {
        panic!("--version prints")
    };
    assert_eq!(version, format!("epochlab {}\n", env!("CARGO_PKG_VERSION")));
    assert_eq!(
        parse(os(&["repro", "--bogus"])).unwrap_err().to_string(),
        "epochlab repro: unknown flag `--bogus` (see --help)"
    );
    assert_eq!(
        what(&["bugs", "x"]),
        "unexpected argument `x`: bugs takes no argument"
    );
    assert_eq!(what(&["soak-report"]), "name the FILES... (see --help)");
    assert!(matches!(
        parse(os(&["triage", "-", "a.log"])),
        Ok(Invocation::Triage(f)) if f == [PathBuf::from("-"), PathBuf::from("a.log")]
    ));
    assert!(matches!(
        parse(os(&["completions", "zsh"])),
        Ok(Invocation::Completions(Shell::Zsh))
    ));
    assert_eq!(
        what(&["completions", "tcsh"]),
        "SHELL takes bash, zsh or fish, not `tcsh`"
    );
}

#[test]
fn malformed_flags_are_rejected() {
    let cases: [(&[&str], &str); 10] = [
        (&["--bogus"], "unknown flag `--bogus` (see --help)"),
        (
            &["--sed", "1"],
            "unknown flag `--sed`; did you mean `--seed`? (see --help)",
        ),
        (
            &["buggy"],
            "unexpected argument `buggy`: repro takes only flags (see --help)",
        ),
        (&["--seed"], "--seed needs a value"),
        (&["--event-log="], "--event-log needs a value"),
        (&["--json=yes"], "--json takes no value"),
        (
            &["--mode", "slow"],
            "--mode takes buggy, fixed, purge-before-reset or all, not `slow`",
        ),
        (
            &["--otlp-endpoint", "127.0.0.1:4317"],
            "--otlp-endpoint takes a URL such as http://127.0.0.1:4317, not `127.0.0.1:4317`",
        ),
        (
            &["--otlp-endpoint", "http://"],
            "--otlp-endpoint takes a URL such as http://127.0.0.1:4317, not `http://`",
        ),
        (
            &["--metrics-addr", "localhost"],
            "--metrics-addr takes HOST:PORT, such as 127.0.0.1:9464, not `localhost`",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(repro(args).unwrap_err(), want, "{args:?}");
    }
}

#[test]
fn a_repeated_flag_is_rejected() {
    for (args, flag) in [
        (&["--seed", "1", "--seed", "2"][..], "--seed"),
        (&["--seed=1", "--seed", "1"], "--seed"),
        (&["--json", "--json"], "--json"),
        (&["--mode", "all", "--mode", "fixed"], "--mode"),
        (
            &["--persist-check", "on", "--persist-check=off"],
            "--persist-check",
        ),
    ] {
        assert_eq!(
            repro(args).unwrap_err(),
            format!("{flag} is given twice: give each flag at most once"),
            "{args:?}"
        );
    }
    assert_eq!(
        soak(&["--jobs", "2", "--jobs", "3"]).unwrap_err(),
        "--jobs is given twice: give each flag at most once"
    );
}

#[test]
fn flags_that_would_do_nothing_are_rejected() {
    let needs = |args: &[&str], want: &str| {
        let err = repro(args).unwrap_err();
        assert!(err.starts_with(want), "{args:?}: {err}");
    };
    needs(
        &["--jaeger-addr", "127.0.0.1:1"],
        "--jaeger-addr needs --jaeger",
    );
    needs(
        &["--serve-for", "5"],
        "--serve-for needs --metrics-addr or --jaeger",
    );
    needs(
        &["--trace-per", "epoch"],
        "--trace-per needs --jaeger or --otlp-endpoint",
    );
    needs(
        &["--serve-for", "5", "--otlp-endpoint", "http://x:4317"],
        "--serve-for needs --metrics-addr or --jaeger",
    );
    needs(&["--pace", "off"], "--pace needs --metrics-addr");
    needs(
        &["--metrics-interval-ms", "250"],
        "--metrics-interval-ms needs --metrics-out",
    );
    repro(&["--serve-for", "5", "--metrics-addr", "127.0.0.1:0"]).expect("serves metrics");
    repro(&["--serve-for", "5", "--jaeger", "--jaeger-addr=127.0.0.1:0"]).expect("serves Jaeger");
    repro(&["--trace-per", "epoch", "--jaeger"]).expect("traces go to Jaeger");
}

#[test]
fn a_run_that_serves_metrics_is_paced_at_1_unless_told_otherwise() {
    let pace = |args: &[&str]| repro(args).expect("valid").pace();
    let addr = ["--metrics-addr", "127.0.0.1:0"];
    assert_eq!(pace(&[]), None);
    assert_eq!(pace(&addr), Some(1.0));
    assert_eq!(pace(&[&addr[..], &["--pace", "off"]].concat()), None);
    assert_eq!(pace(&[&addr[..], &["--pace=2.5"]].concat()), Some(2.5));
    assert_eq!(pace(&["--pace", "4"]), Some(4.0));
    assert_eq!(pace(&["--pace", "0.01"]), Some(0.01));
    assert_eq!(pace(&["--pace", "100000"]), Some(100_000.0));
    for bad in ["0", "-1", "0.001", "100001", "x", "inf", "NaN", "1x"] {
        let err = repro(&["--pace", bad]).unwrap_err();
        assert!(
            err.starts_with("--pace takes a number from 0.01 to 100000"),
            "{bad}: {err}"
        );
        assert!(
            err.ends_with(&format!("or off, not `{bad}`")),
            "{bad}: {err}"
        );
    }
}

#[test]
fn metrics_out_samples_every_second_unless_told_otherwise() {
    let a = repro(&["--metrics-out", "run.om"]).expect("valid");
    assert_eq!(a.metrics_out, Some(PathBuf::from("run.om")));
    assert_eq!(a.metrics_interval(), Duration::from_secs(1));
    assert_eq!(a.pace(), None, "a timeline alone is not paced");
    let a = repro(&["--metrics-out=run.om", "--metrics-interval-ms", "250"]).expect("valid");
    assert_eq!(a.metrics_interval(), Duration::from_millis(250));
    for out_of_range in ["9", "3600001"] {
        let args = [
            "--metrics-out",
            "r.om",
            "--metrics-interval-ms",
            out_of_range,
        ];
        let err = repro(&args).unwrap_err();
        assert!(
            err.starts_with("--metrics-interval-ms must be in 10..=3600000"),
            "{err}"
        );
    }
    assert_eq!(
        repro(&["--metrics-out="]).unwrap_err(),
        "--metrics-out needs a value"
    );
}

#[test]
fn flags_that_exclude_each_other_are_rejected() {
    let exclusive = |args: &[&str], a: &str, b: &str| {
        let err = repro(args).unwrap_err();
        let names = [
            format!("{a} and {b} exclude each other"),
            format!("{b} and {a} exclude each other"),
        ];
        assert!(names.iter().any(|n| err.starts_with(n)), "{args:?}: {err}");
    };
    exclusive(
        &["--jaeger", "--otlp-endpoint", "http://x:4317"],
        "--jaeger",
        "--otlp-endpoint",
    );
    for (flag, value) in [
        ("--event-log", Some("x.log")),
        ("--log-file", Some("x.log")),
        ("--metrics-addr", Some("127.0.0.1:0")),
        ("--metrics-out", Some("run.om")),
        ("--pace", Some("2")),
        ("--jaeger", None),
        ("--otlp-endpoint", Some("http://x:4317")),
    ] {
        let mut args = vec!["--check-determinism", flag];
        args.extend(value);
        exclusive(&args, flag, "--check-determinism");
    }
    let a = repro(&["--check-determinism", "--json"]).expect("JSON per mode");
    assert!(a.check_determinism && a.json);
}

#[test]
fn the_event_log_of_several_modes_goes_to_one_file_each() {
    let a = repro(&["--event-log", "/tmp/run.log"]).expect("valid");
    let paths: Vec<PathBuf> = a.runs().iter().filter_map(|&r| a.event_log_of(r)).collect();
    let want = [
        "/tmp/run.buggy.log",
        "/tmp/run.fixed.log",
        "/tmp/run.purge-before-reset.log",
    ];
    assert_eq!(paths, want.map(PathBuf::from).to_vec());
    let fixed = BugMode::of_14910(Mode::Fixed);
    let a = repro(&["--event-log", "events", "--mode", "all"]).expect("valid");
    assert_eq!(a.event_log_of(fixed), Some(PathBuf::from("events.fixed")));
    let a = repro(&["--event-log", "/tmp/run.log", "--mode", "fixed"]).expect("valid");
    assert_eq!(a.event_log_of(fixed), Some(PathBuf::from("/tmp/run.log")));
    assert_eq!(repro(&[]).expect("valid").event_log_of(fixed), None);
    let a = repro(&["--event-log", "r.log", "--bug", "all"]).expect("valid");
    let runs = a.runs();
    assert_eq!(runs.len(), 21);
    let log = |i: usize| a.event_log_of(runs[i]);
    assert_eq!(log(0), Some(PathBuf::from("r.12990-buggy.log")));
    assert_eq!(log(6), Some(PathBuf::from("r.15144-fixed.log")));
    assert_eq!(log(7), Some(PathBuf::from("r.16815-buggy.log")));
    assert_eq!(log(10), Some(PathBuf::from("r.19138-fixed.log")));
    assert_eq!(log(12), Some(PathBuf::from("r.22384-fixed.log")));
    assert_eq!(log(13), Some(PathBuf::from("r.22476-buggy.log")));
    assert_eq!(log(15), Some(PathBuf::from("r.5244-buggy.log")));
    assert_eq!(log(17), Some(PathBuf::from("r.8440-buggy.log")));
    assert_eq!(
        log(19),
        Some(PathBuf::from("r.reschedule-unpinned-buggy.log"))
    );
}

#[test]
fn a_bug_takes_its_own_modes_and_only_its_scenario_settings() {
    let a = repro(&["--bug", "22384"]).expect("valid");
    let modes: Vec<Mode> = a.runs().iter().map(|r| r.mode()).collect();
    assert_eq!(modes, [Mode::Buggy, Mode::Fixed]);
    assert_eq!(
        repro(&["--bug", "22384", "--mode", "purge-before-reset"]).unwrap_err(),
        "--mode: bug 22384 has the modes buggy, fixed, not `purge-before-reset`"
    );
    assert_eq!(
        repro(&["--bug", "all", "--rows", "5"]).unwrap_err(),
        "--rows is not a setting of bug 15144's scenario (it reads --meta-nodes)"
    );
    let one_actor = [
        "--bug",
        "16815",
        "--parallelism",
        "1",
        "--persist-check",
        "off",
    ];
    let a = repro(&one_actor).expect("#16815 reads these two");
    assert_eq!(a.params_of(a.runs()[0]).parallelism, 1);
    assert_eq!(
        repro(&["--bug", "16815", "--vnodes", "8"]).unwrap_err(),
        "--vnodes is not a setting of bug 16815's scenario (it reads --parallelism, --persist-check, --meta-nodes)"
    );
    let err = repro(&["--bug", "all", "--metrics-out", "run.om"]).unwrap_err();
    assert!(
        err.starts_with("--metrics-out and --bug all exclude each other: "),
        "{err}"
    );
    let a = repro(&["--bug", "19138"]).expect("valid");
    let modes: Vec<Mode> = a.runs().iter().map(|r| r.mode()).collect();
    assert_eq!(modes, [Mode::Buggy, Mode::Fixed]);
}

#[test]
fn soak_flags_parse_and_bad_ones_are_one_line_errors() {
    let a = soak(&[
        "--seeds",
        "5..9",
        "--jobs=2",
        "--mode",
        "buggy",
        "--scenario",
        "14910",
        "--rows",
        "50",
    ])
    .unwrap();
    assert_eq!(
        (a.seeds, a.jobs, a.params.mode, a.params.rows),
        (5..9, 2, Mode::Buggy, 50)
    );
    assert_eq!(a.scenario, Scenario::Directed);
    let a = soak(&[]).unwrap();
    assert_eq!(
        (a.params.mode, a.seeds, a.mode_given),
        (Mode::Fixed, 0..100, false)
    );
    assert_eq!(soak(&["--shard", "1/4"]).unwrap().shard, Some((1, 4)));
    for (bad, want) in [
        (
            &["--seeds", "9..5"][..],
            "--seeds takes A..B, whole numbers in 0..=18446744073709551615 with A < B",
        ),
        (&["--seeds", "x"], "--seeds takes A..B"),
        (&["--shard", "4/4"], "--shard takes K/N with K < N"),
        (
            &["--mode", "all"],
            "--mode takes buggy, fixed or purge-before-reset, not `all`",
        ),
        (&["--bug", "all"], "--bug takes 12990, 14910, "),
        (
            &["--scenario", "14911"],
            "--scenario takes random or 14910, not `14911`",
        ),
        (
            &["--rows", "50"],
            "--rows sets the directed scenario: it needs --scenario 14910",
        ),
        (
            &["--kill-rate", "2"],
            "--kill-rate takes a probability from 0 to 1",
        ),
        (
            &["--kill-rate", "0.5", "--scenario", "14910"],
            "--kill-rate and --scenario 14910 exclude",
        ),
        (
            &["--shrink", "--scenario", "14910"],
            "--shrink and --scenario 14910 exclude",
        ),
        (
            &["--bug", "22384", "--scenario", "14910"],
            "--bug and --scenario 14910 exclude",
        ),
        (
            &["--bug", "22384", "--mode", "purge-before-reset"],
            "--mode: bug 22384 has the modes",
        ),
        (
            &["--plan", "p.json", "--seeds", "1..2"],
            "--plan and --seeds exclude each other",
        ),
        (
            &["--replay", "r.jsonl", "--shrink"],
            "--replay and --shrink exclude each other",
        ),
        (
            &["--event-log", "e.log"],
            "--event-log writes the event log of one run",
        ),
        (&["--shrink=yes"], "--shrink takes no value"),
        (&["--jobs", "0"], "--jobs must be in 1..=256, not 0"),
        (&["--json=yes"], "--json takes no value"),
        (
            &["--seed", "1"],
            "unknown flag `--seed`; did you mean `--seeds`?",
        ),
        (&["--rows", "0"], "--rows must be in 1..=10000000, not 0"),
    ] {
        let err = soak(bad).unwrap_err();
        assert!(err.starts_with(want), "{bad:?}: {err}");
    }
    soak(&["--event-log", "e.log", "--seeds", "3..4"]).expect("one run");
}

#[test]
fn metrics_flags_are_read_as_repro_reads_them() {
    let a = soak(&["--metrics-addr", "127.0.0.1:9464", "--serve-for=30"]).unwrap();
    assert_eq!(a.metrics_addr, Some("127.0.0.1:9464".parse().unwrap()));
    assert_eq!(a.serve_for, Some(Duration::from_secs(30)));
    assert_eq!(soak(&[]).unwrap().metrics_addr, None);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--serve-for", "5"],
            "--serve-for needs --metrics-addr (see --help)",
        ),
        (
            &["--metrics-addr", "localhost"],
            "--metrics-addr takes HOST:PORT, such as 127.0.0.1:9464, not `localhost`",
        ),
        (
            &["--metrics-addr", "127.0.0.1:0", "--serve-for", "86401"],
            "--serve-for must be in 0..=86400, not 86401",
        ),
        (
            &[
                "--metrics-addr",
                "127.0.0.1:1",
                "--metrics-addr=127.0.0.1:2",
            ],
            "--metrics-addr is given twice: give each flag at most once",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(soak(args).unwrap_err(), want, "{args:?}");
    }
}

#[test]
fn random_plan_flags_parse() {
    let a = soak(&["--kill-rate", "0.25", "--background-ddl-rate=1", "--shrink"]).unwrap();
    let Scenario::Random(g) = &a.scenario else {
        panic!("random is the default")
    };
    assert_eq!(
        (g.kill_rate, g.background_ddl_rate, a.shrink),
        (0.25, 1.0, true)
    );
    let a = soak(&["--plan", "p.json", "--mode", "buggy"]).unwrap();
    assert_eq!(
        (a.plan, a.mode_given),
        (Some(PathBuf::from("p.json")), true)
    );
}

#[test]
fn soak_kill_flags_need_slt_and_a_kill() {
    for (args, want) in [
        (&["--kill"][..], "--kill needs --slt"),
        (&["--kill-compactor"], "--kill-compactor needs --slt"),
        (&["--runner", "latest"], "--runner needs --slt"),
        (
            &["--slt", "x.slt", "--scenario", "14910"],
            "--slt and --scenario exclude each other",
        ),
        (
            &["--slt", "x.slt", "--plan", "p.json"],
            "--slt and --plan exclude each other",
        ),
        (
            &["--slt", "x.slt", "--kill", "--rows", "5"],
            "--rows sets the directed scenario",
        ),
    ] {
        let err = soak(args).unwrap_err();
        let flipped = want.contains(" and ") && {
            let (a, rest) = want.split_once(" and ").unwrap();
            let (b, _) = rest.split_once(' ').unwrap();
            err.starts_with(&format!("{b} and {a} "))
        };
        assert!(err.starts_with(want) || flipped, "{args:?}: {err}");
    }
}

fn slt(args: &[&str]) -> Result<crate::slt::SltArgs, String> {
    let argv = [&["slt"][..], args].concat();
    match parse(os(&argv)) {
        Ok(Invocation::Slt(a)) => Ok(*a),
        Ok(other) => panic!("{args:?}: {other:?}"),
        Err(_) => Err(what(&argv)),
    }
}

#[test]
fn slt_kill_defaults_follow_risingwave() {
    let a = slt(&["--kill", "x.slt"]).expect("parses");
    assert!(a.params.kill);
    assert_eq!(
        (a.params.kill_rate, a.params.background_ddl_rate),
        (1.0, 0.0)
    );
    assert_eq!(a.files, [PathBuf::from("x.slt")]);
    assert_eq!(a.params.run, BugMode::of_14910(Mode::Fixed));
    for (args, want) in [
        (
            &["--kill-rate", "0.5", "x.slt"][..],
            "--kill-rate needs --kill, --kill-meta, --kill-frontend, --kill-compute or --kill-compactor",
        ),
        (&["--seed", "1"], "name the FILES... (see --help)"),
        (
            &["--mode", "purge-before-reset", "--bug", "22384", "x.slt"],
            "--mode: bug 22384 has the modes",
        ),
        (&["--kill", "--kill", "x.slt"], "--kill is given twice"),
        (
            &["--mode", "all", "x.slt"],
            "--mode takes buggy, fixed or purge-before-reset, not `all`",
        ),
        (
            &["--kill", "--runner", "2023", "x.slt"],
            "--runner takes 2024 or latest, not `2023`",
        ),
        (
            &["--kill-frontend=yes", "x.slt"],
            "--kill-frontend takes no value",
        ),
        (&["--kill-meta=yes", "x.slt"], "--kill-meta takes no value"),
        (
            &["tests/slt/nothing-here-*.slt"],
            "`tests/slt/nothing-here-*.slt`: no file matches",
        ),
    ] {
        let err = slt(args).unwrap_err();
        assert!(err.starts_with(want), "{args:?}: {err}");
    }
}

#[test]
fn slt_role_flags_and_the_runner_parse_and_replay() {
    let a = slt(&["--kill-frontend", "x.slt", "--kill-compactor"]).expect("parses");
    assert!(a.params.kill);
    let roles = KillRoles {
        frontend: true,
        compactor: true,
        ..KillRoles::NONE
    };
    assert_eq!(a.params.kill_roles, roles);
    assert_eq!(a.params.runner, RunnerEra::R2024);
    assert!(
        crate::slt::replay(&a.params, std::path::Path::new("x.slt")).contains(
            "--kill-frontend --kill-compactor --kill-rate 1 --background-ddl-rate 0 x.slt"
        )
    );
    let a = slt(&["--kill", "--kill-compute", "--runner=latest", "x.slt"]).expect("parses");
    assert_eq!(a.params.kill_roles, KillRoles::ALL);
    assert!(
        crate::slt::replay(&a.params, std::path::Path::new("x.slt"))
            .ends_with("--runner latest x.slt")
    );
    let a = slt(&["--kill-meta", "x.slt"]).expect("parses");
    let meta = KillRoles {
        meta: true,
        ..KillRoles::NONE
    };
    assert_eq!(a.params.kill_roles, meta);
    assert!(
        crate::slt::replay(&a.params, std::path::Path::new("x.slt"))
            .contains(" --kill-meta --kill-rate 1 ")
    );
    let a = slt(&["--kill", "--kill-meta", "x.slt"]).expect("parses");
    assert_eq!(
        a.params.kill_roles,
        KillRoles::ALL,
        "--kill kills metas already"
    );
    assert!(
        crate::slt::replay(&a.params, std::path::Path::new("x.slt"))
            .contains(" --kill --kill-rate 1 ")
    );
    let spared = slt(&[
        "--kill-frontend",
        "--kill-compute",
        "--kill-compactor",
        "x.slt",
    ]);
    let spared = spared.expect("parses");
    assert!(!spared.params.kill_roles.meta);
    assert!(
        crate::slt::replay(&spared.params, std::path::Path::new("x.slt"))
            .contains(" --kill-frontend --kill-compute --kill-compactor --kill-rate 1 ")
    );
}

fn corpus(args: &[&str]) -> Result<crate::corpus::CorpusArgs, String> {
    let argv = [&["corpus"][..], args].concat();
    match parse(os(&argv)) {
        Ok(Invocation::Corpus(a)) => Ok(*a),
        Ok(other) => panic!("{args:?}: {other:?}"),
        Err(_) => Err(what(&argv)),
    }
}

#[test]
fn corpus_flags_parse_with_their_defaults() {
    let a = corpus(&[]).expect("parses");
    assert_eq!(a.root, PathBuf::from("tests/slt/risingwave"));
    assert!(!a.kill && a.seeds == (0..1) && !a.update_expected);
    assert_eq!(a.json, PathBuf::from("target/corpus.json"));
    let a = corpus(&[
        "--kill",
        "--seeds=0..3",
        "--jobs",
        "2",
        "--root",
        "r",
        "--json",
        "j.json",
        "--update-expected",
    ])
    .expect("parses");
    assert!(a.kill && a.seeds == (0..3) && a.jobs == 2 && a.update_expected);
    assert_eq!((a.root, a.json), ("r".into(), "j.json".into()));
    for (bad, want) in [
        (&["--seeds", "0..3"][..], "--seeds needs --kill"),
        (&["--kill", "--seeds", "3..1"], "--seeds takes A..B"),
        (&["--jobs", "0"], "--jobs must be in 1..=256, not 0"),
        (&["--kill", "--kill"], "--kill is given twice"),
        (&["--kill=yes"], "--kill takes no value"),
        (&["--root"], "--root needs a value"),
        (&["--nope"], "unknown flag `--nope`"),
        (
            &["x.slt"],
            "unexpected argument `x.slt`: corpus takes only flags",
        ),
    ] {
        let err = corpus(bad).unwrap_err();
        assert!(err.starts_with(want), "{bad:?}: {err}");
    }
}
