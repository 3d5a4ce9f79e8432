//! The #14910 scenario over many seeds and shapes. In every shape, `buggy` either fails (a check fired) or
//! says why it could not show the bug; `fixed` always passes, recovers, and unregisters the dropped sink's
//! tables only after every live node was reset (or after the Stop barrier was collected). The sweep itself is
//! checked: with the buggy drop order it must fail, and with the persist check off an independent checker
//! must still catch every run the check would have caught.

use epochlab_common::SimRng;
use epochlab_sim::Mode;
use epochlab_sim::{Outcome, ReproParams, ReproReport, run_repro};

/// Shapes across the flags' ranges.
fn shape(i: u64, checkpoint_frequency: u32) -> ReproParams {
    let rng = SimRng::new(0x1491_0000 + i);
    let vnodes = [1u32, 4, 16, 64, 256, 1024][rng.range_u64(0..6) as usize];
    let lo = 10f64.max(4.0 * vnodes as f64).ln();
    let rows = rng.range_f64(lo, 100_000f64.ln()).exp() as usize;
    ReproParams {
        seed: 1000 + i,
        mode: Mode::Buggy,
        rows,
        vnodes,
        parallelism: 1 + rng.range_u64(0..8) as usize,
        compute_nodes: 2 + rng.range_u64(0..4) as u32,
        barrier_latency_ms: [0u64, 100, 500, 1500][rng.range_u64(0..4) as usize],
        checkpoint_frequency,
        ..Default::default()
    }
}

/// What the fixed drop order promises on one run; `Err` says what broke.
fn fixed_holds(p: &ReproParams, mode: Mode) -> Result<(), String> {
    let out = run_repro(&ReproParams { mode, ..p.clone() });
    let r = &out.value;
    if r.outcome != Outcome::Passed {
        return Err(format!(
            "{p:?}: {:?} {:?} {:?}",
            r.outcome, r.error, r.violations
        ));
    }
    if r.recoveries == 0 {
        return Err(format!("{p:?}: no recovery"));
    }
    let lines = out.log.lines();
    let drop = lines
        .iter()
        .position(|l| l.contains(" scenario: drop sink"));
    let drop = drop.ok_or_else(|| format!("{p:?}: no drop"))?;
    let unregister = lines[drop..].iter().position(|l| {
        l.contains(" unregister tables: ")
            && (l.contains("reason=drop collected") || l.contains("reason=recovery, after reset"))
    });
    let Some(unregister) = unregister.map(|i| drop + i) else {
        return Err(format!(
            "{p:?}: the sink's tables were not unregistered by the fixed order"
        ));
    };
    if lines[unregister].contains("after reset") {
        // What started the recovery: a failed barrier, or meta's crash (`--crash-meta-at`).
        let failure = lines[drop..]
            .iter()
            .position(|l| l.contains(" barrier failed: ") || l.contains(" crash meta: "));
        let failure = drop + failure.ok_or_else(|| format!("{p:?}: no failure"))?;
        let resets = lines[failure..unregister]
            .iter()
            .filter(|l| l.contains(" reset node: "))
            .count();
        if resets == 0 {
            return Err(format!("{p:?}: unregistered before any reset"));
        }
    }
    Ok(())
}

/// The sweep's verdict on a drop order that claims to be the fix: every shape must hold.
fn fixed_sweep(mode: Mode, runs: u64) -> Result<(), String> {
    let broken: Vec<String> = (0..runs)
        .filter_map(|i| fixed_holds(&shape(i, 1), mode).err())
        .collect();
    if broken.is_empty() {
        Ok(())
    } else {
        Err(broken.join("\n"))
    }
}

/// A buggy run either failed with the check that fired, or says why it could not show the bug.
fn assert_buggy_explained(p: &ReproParams, r: &ReproReport) {
    match r.outcome {
        Outcome::Failed => {
            assert!(r.caught_by.is_some(), "{p:?}: failed without a checker");
            assert!(r.error.is_some(), "{p:?}: failed without an error");
        }
        Outcome::NotReproducible => {
            let why = r.error.as_deref().unwrap_or("");
            assert!(!why.is_empty(), "{p:?}: not reproducible without a reason");
        }
        other => panic!("{p:?}: buggy ended {other:?}: {:?}", r.error),
    }
}

#[test]
fn buggy_fails_or_explains_and_fixed_holds_across_shapes() {
    let runs = 40;
    let mut failed = 0;
    for i in 0..runs {
        let p = shape(i, 1);
        let r = run_repro(&p).value;
        assert_buggy_explained(&p, &r);
        if r.outcome == Outcome::Failed {
            failed += 1;
        }
    }
    assert!(
        failed * 2 >= runs,
        "buggy failed in only {failed} of {runs} shapes"
    );
    fixed_sweep(Mode::Fixed, runs).unwrap();
}

/// Flip only the drop order of `fixed` to the buggy one (the buggy mode differs from the fixed one in
/// nothing else): the fixed sweep must notice.
#[test]
fn the_fixed_sweep_fails_with_the_buggy_drop_order() {
    let verdict = fixed_sweep(Mode::Buggy, 12);
    assert!(verdict.is_err(), "the sweep passed the buggy drop order");
}

/// With RisingWave's release build (no persist check), a run the check would have caught is still failed,
/// by the zombie-access detector.
#[test]
fn without_the_persist_check_the_detector_catches_every_run() {
    let mut compared = 0;
    for seed in 1..=25 {
        let on = ReproParams {
            seed,
            ..Default::default()
        };
        let with_check = run_repro(&on).value;
        if with_check.outcome != Outcome::Failed {
            continue;
        }
        let off = ReproParams {
            persist_check: false,
            ..on
        };
        let r = run_repro(&off).value;
        assert_eq!(r.outcome, Outcome::Failed, "seed {seed}: {:?}", r.error);
        assert_eq!(
            r.caught_by.as_deref(),
            Some("I2 zombie-access detector"),
            "seed {seed}: {:?}",
            r.error
        );
        compared += 1;
    }
    assert!(
        compared >= 20,
        "only {compared} seeds failed with the check on"
    );
}

/// With checkpoints every n barriers the zombie's last write is committed less often; the fix holds.
#[test]
fn other_checkpoint_frequencies() {
    for freq in [2u32, 10] {
        for i in 0..6 {
            let p = shape(100 + i, freq);
            assert_buggy_explained(&p, &run_repro(&p).value);
            fixed_holds(&p, Mode::Fixed).unwrap();
        }
    }
}

#[test]
fn different_seeds_give_different_digests() {
    let a = run_repro(&ReproParams::default()).digest;
    let b = run_repro(&ReproParams {
        seed: 14911,
        ..Default::default()
    })
    .digest;
    let a2 = run_repro(&ReproParams::default()).digest;
    assert_eq!(a, a2);
    assert_ne!(a, b);
}

/// The defaults show the original failure: the zombie's read of vnode 0's progress row, caught by the
/// backfill's own check, with the failing actor's log lines and the unregister on the timeline.
#[test]
fn default_scenario_shows_the_original_failure() {
    let r = run_repro(&ReproParams::default()).value;
    assert_eq!(r.outcome, Outcome::Failed, "{:?}", r.error);
    assert_eq!(
        r.error.as_deref(),
        Some("row [Some(Int16(0))] not found (by the backfill persist check)")
    );
    assert_eq!(r.caught_by.as_deref(), Some("backfill persist check"));
    assert_eq!(r.failing_vnode, Some(0));
    assert!(!r.original_lines.is_empty());
    assert!(
        r.timeline
            .iter()
            .any(|l| l.contains(" unregister tables: "))
    );
    assert!(
        r.violations
            .iter()
            .any(|v| v.invariant == "I2 zombie-access"),
        "the detector saw the zombie's read too: {:?}",
        r.violations
    );
    let fixed = ReproParams {
        mode: Mode::Fixed,
        ..Default::default()
    };
    assert_eq!(run_repro(&fixed).value.outcome, Outcome::Passed);
}

/// Settings that once crashed or hung end with an outcome.
#[test]
fn edge_settings_end_with_an_outcome() {
    let cases = [
        ReproParams {
            barrier_latency_ms: 0,
            ..Default::default()
        },
        ReproParams {
            barrier_latency_ms: 1000,
            ..Default::default()
        },
        ReproParams {
            rows: 1,
            ..Default::default()
        },
        ReproParams {
            compute_nodes: 1,
            ..Default::default()
        },
        ReproParams {
            vnodes: 32768,
            rows: 10_000,
            ..Default::default()
        },
    ];
    for p in cases {
        for mode in Mode::ALL {
            let p = ReproParams { mode, ..p.clone() };
            let r = run_repro(&p).value;
            assert_ne!(r.outcome, Outcome::Stuck, "{p:?}: {:?}", r.error);
            if mode == Mode::Fixed {
                assert_ne!(r.outcome, Outcome::Failed, "{p:?}: {:?}", r.error);
            }
        }
    }
}

/// A cluster that loses every compute node for good once the sink is dropped cannot recover: the run ends
/// `stuck` within its budgets (not at the runtime's limit, not with a panic), saying what it waits for.
#[test]
fn a_cluster_that_cannot_recover_is_reported_stuck() {
    use std::sync::Arc;
    use std::time::Duration;

    use epochlab_sim::{Cluster, ReproHooks, run_repro_with};

    let hook = Box::new(|cluster: Arc<Cluster>| {
        let weak = Arc::downgrade(&cluster);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(50)).await;
                let Some(cluster) = weak.upgrade() else {
                    return;
                };
                if cluster.meta().relation_by_name("sink_14910").is_some() {
                    continue;
                }
                // The sink was dropped: every node dies, and dies again whenever it restarts.
                for node in cluster.nodes() {
                    cluster.kill(node.worker());
                }
            }
        });
    });
    let hooks = ReproHooks {
        on_cluster: Some(hook),
        ..ReproHooks::default()
    };
    let r = run_repro_with(&ReproParams::default(), hooks).value;
    assert_eq!(r.outcome, Outcome::Stuck, "{:?}", r.error);
    let why = r.error.unwrap_or_default();
    assert!(why.starts_with("recovery did not finish"), "{why}");
    assert!(why.contains("waiting: "), "{why}");
    assert!(
        !why.contains("virtual time limit"),
        "a step's own budget ended it: {why}"
    );
}

/// `repro --crash-meta-at POINT`: meta dies at each point the scenario's DDLs reach (its CREATE TABLE and
/// CREATE SINK are retried, its DROP SINK is not) and restarts from its store; the fixed drop order still
/// holds, the crash is reported once with its DDL, and the run is the same twice. Buggy either fails or says
/// why it could not show the bug. Each point takes the first seed whose DDL reached it; drop-after-stop is
/// left out: the scenario's fault fails the DROP's Stop barrier, so it is reached only when the DROP returned
/// before the fault.
#[test]
fn a_meta_crash_at_each_point_keeps_the_fix() {
    use epochlab_meta::CrashPoint;
    let points = CrashPoint::ALL
        .into_iter()
        .filter(|p| p.reached_by_job_api());
    for point in points.filter(|p| *p != CrashPoint::DropAfterStop) {
        let crashed = (1..=8).find_map(|seed| {
            let p = ReproParams {
                seed,
                mode: Mode::Fixed,
                rows: 2000,
                crash_meta_at: Some(point),
                ..Default::default()
            };
            let out = run_repro(&p);
            (!out.value.meta_crashes.is_empty()).then_some((p, out))
        });
        let (p, fixed) =
            crashed.unwrap_or_else(|| panic!("{point}: no seed of 1..=8 crashed meta"));
        fixed_holds(&p, Mode::Fixed).unwrap_or_else(|e| panic!("{point}: {e}"));
        let crashes: Vec<_> = fixed.value.meta_crashes.iter().map(|c| c.point).collect();
        assert_eq!(crashes, [point], "{point}");
        let ddl = fixed.value.meta_crashes[0].ddl;
        let drop = point >= CrashPoint::DropAfterCatalog;
        assert_eq!(ddl.starts_with("DROP"), drop, "{point}: {ddl}");
        let crash = format!(" crash meta: at={point} ");
        assert!(
            fixed.log.lines().iter().any(|l| l.contains(&crash)),
            "{point}"
        );
        assert_eq!(
            fixed.digest,
            run_repro(&p).digest,
            "{point}: not deterministic"
        );
        let buggy = run_repro(&ReproParams {
            mode: Mode::Buggy,
            ..p.clone()
        });
        assert!(
            matches!(
                buggy.value.outcome,
                Outcome::Failed | Outcome::NotReproducible
            ),
            "{point}: buggy {:?} {:?}",
            buggy.value.outcome,
            buggy.value.error
        );
    }
}
