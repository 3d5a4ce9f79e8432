//! The error paths of a drop (reference §6.3), in each drop mode, read from the event log:
//! - (b/c) a drop issued while recovery runs is buffered by the blocked scheduler and pre-applied by recovery,
//!   which returns `Ok` to the caller without any barrier. Buggy: the caller unregisters the tables as soon
//!   as the drop returns, before the nodes are reset. Fixed: recovery unregisters them after every live
//!   node acknowledged its reset (not after a reset that failed on a node). Purge-before-reset: recovery
//!   unregisters them at the top of its attempt, before the reset.
//! - a drop of a foreground job still in creation: the create fails, the drop succeeds, and the tables go
//!   after the Stop barrier was collected (in post-collect, or by the caller in buggy mode).

use std::collections::BTreeSet;
use std::time::Duration;

use epochlab_barrier::SchedulerStatus;
use epochlab_common::toggles::DropMode;
use epochlab_common::{TableId, Toggles, WorkerId};
use epochlab_meta::{CreateAborted, DdlError, JobOptions, MetaConfig, RecoveryConfig, SinkOptions};
use epochlab_rpc::RpcKind;
use epochlab_sim::{Cluster, ClusterConfig};
use epochlab_tests::{Oracle, check_commits, schema};

const NODES: u32 = 3;
/// Recovery's slow steps (recover background progress, migrate actors) each take this long.
const SLOW_STEP: Duration = Duration::from_secs(1);

fn config(mode: DropMode) -> ClusterConfig {
    let meta = MetaConfig {
        toggles: Toggles::default().with(mode),
        recovery: RecoveryConfig {
            recover_progress: SLOW_STEP..SLOW_STEP,
            migrate_actors: SLOW_STEP..SLOW_STEP,
            ..Default::default()
        },
        ..Default::default()
    };
    ClusterConfig {
        compute_nodes: NODES,
        meta,
        ..Default::default()
    }
}

/// A table with `rows` committed rows.
async fn table_with_rows(cluster: &Cluster, rows: usize) -> TableId {
    let (types, pk) = schema();
    let table = cluster
        .meta()
        .create_table("t", types, pk, NODES as usize)
        .await
        .unwrap();
    let mut oracle = Oracle::default();
    cluster
        .dml(table, oracle.gen_inserts(0, rows))
        .await
        .unwrap();
    cluster.meta().flush().await.unwrap();
    table
}

/// Backfill options slow enough that the backfill is still running seconds later.
fn slow(background: bool) -> JobOptions {
    JobOptions {
        parallelism: 2,
        rate_limit: Some(1),
        background,
        scan_type: epochlab_meta::StreamScanType::ArrangementBackfill,
    }
}

async fn wait_until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn registered_equals_catalog(cluster: &Cluster) {
    let catalog: BTreeSet<TableId> = cluster
        .meta()
        .catalog()
        .state_tables()
        .into_iter()
        .collect();
    assert_eq!(cluster.hummock.registered_tables(), catalog);
}

/// The index of the first line at or after `from` that contains every one of `parts`.
fn find(lines: &[String], from: usize, parts: &[&str]) -> Option<usize> {
    (from..lines.len()).find(|&i| parts.iter().all(|p| lines[i].contains(p)))
}

fn find_all(lines: &[String], from: usize, parts: &[&str]) -> Vec<usize> {
    (from..lines.len())
        .filter(|&i| parts.iter().all(|p| lines[i].contains(p)))
        .collect()
}

/// The value of `key=` in a line (up to the next space).
fn field<'a>(line: &'a str, key: &str) -> &'a str {
    let start = line.find(&format!(" {key}=")).expect(key) + key.len() + 2;
    line[start..].split(' ').next().unwrap()
}

/// How recovery is made to start.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// One collection fails on a node that stays alive: the first attempt succeeds.
    FailedCollection,
    /// A node dies: meta still believes it alive, so attempts fail on its reset (the others are still
    /// reset) until its heartbeat expires.
    Kill,
}

const VICTIM: WorkerId = WorkerId(3);

/// A background sink over a table is backfilling when `fault` starts a recovery; while recovery is in a
/// slow step the sink is dropped. Returns the event log and the sink's state tables.
fn drop_during_recovery(mode: DropMode, fault: Fault) -> (Vec<String>, Vec<TableId>) {
    let out = epochlab_sim::run(31, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(mode)).await;
        let table = table_with_rows(&cluster, 200).await;
        let sink = cluster
            .meta()
            .create_sink("s", table, slow(true), SinkOptions::default())
            .await
            .unwrap();
        let tables = cluster.meta().relation(sink).unwrap().state_tables();
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(
            cluster.meta().backfill_progress(sink).is_some(),
            "backfilling"
        );
        match fault {
            Fault::FailedCollection => {
                cluster
                    .network
                    .fail_next(RpcKind::BarrierComplete, Some(WorkerId(2)), 1)
            }
            Fault::Kill => assert!(cluster.kill(VICTIM)),
        }
        let blocked = || {
            matches!(
                cluster.meta().scheduler().status(),
                SchedulerStatus::Blocked(_)
            )
        };
        wait_until(blocked).await;
        // Recovery is now recovering background progress (a slow step).
        tokio::time::sleep(SLOW_STEP / 4).await;
        assert!(blocked());
        cluster.meta().drop_job(sink).await.unwrap();
        assert!(blocked(), "the drop returned while recovery still runs");
        cluster.wait_ready().await;
        cluster.meta().flush().await.unwrap();
        registered_equals_catalog(&cluster);
        tables
    });
    check_commits(&out.log.lines()).unwrap();
    (out.log.lines(), out.value)
}

/// Where, in the log, the drop of the sink happened, and the recovery that handled it.
struct DropInRecovery {
    /// The drop's catalog change.
    drop: usize,
    /// Recovery reported the buffered drop done.
    pre_apply: usize,
    /// The first node reset after the drop.
    first_reset: usize,
    /// Every node's reset of the successful attempt (the last `reset nodes`).
    successful_resets: Vec<usize>,
    /// The unregister of the sink's tables, and its reason.
    unregister: usize,
    reason: String,
}

fn drop_in_recovery(lines: &[String], tables: &[TableId]) -> DropInRecovery {
    let drop = find(lines, 0, &[" ddl: drop sink s "]).expect("the drop");
    let pre_apply = find(
        lines,
        drop,
        &[
            " recovery step: pre-apply drops ",
            &format!("tables={tables:?}"),
        ],
    )
    .expect("recovery pre-applied the drop");
    let first_reset = find(lines, drop, &[" reset node: "]).expect("a node reset");
    let done = find(lines, drop, &[" recovery: done "]).expect("recovery finished");
    let reset_nodes = (drop..done)
        .rev()
        .find(|&i| lines[i].contains(" recovery step: reset nodes generation="))
        .expect("a successful reset");
    let generation = field(&lines[reset_nodes], "generation");
    let successful_resets = find_all(
        lines,
        drop,
        &[" reset node: ", &format!(" generation={generation} ")],
    );
    let unregistered = find_all(
        lines,
        0,
        &[" unregister tables: ", &format!("tables={tables:?}")],
    );
    assert_eq!(unregistered.len(), 1, "unregistered once: {unregistered:?}");
    let unregister = unregistered[0];
    let reason = lines[unregister]
        .split(" reason=")
        .nth(1)
        .unwrap()
        .split(" version=")
        .next()
        .unwrap()
        .to_string();
    DropInRecovery {
        drop,
        pre_apply,
        first_reset,
        successful_resets,
        unregister,
        reason,
    }
}

fn assert_drop_in_recovery(mode: DropMode, fault: Fault) {
    let (lines, tables) = drop_during_recovery(mode, fault);
    let d = drop_in_recovery(&lines, &tables);
    let live = match fault {
        Fault::FailedCollection => NODES as usize,
        Fault::Kill => NODES as usize - 1,
    };
    assert_eq!(d.successful_resets.len(), live, "{mode} {fault:?}");
    assert!(d.drop < d.pre_apply && d.pre_apply < d.first_reset);
    let at = &lines[d.unregister];
    match mode {
        DropMode::Buggy => {
            assert_eq!(d.reason, "drop (buggy order)", "{at}");
            assert!(
                d.pre_apply < d.unregister && d.unregister < d.first_reset,
                "{at}"
            );
        }
        DropMode::PurgeBeforeReset => {
            assert_eq!(d.reason, "recovery, before reset", "{at}");
            assert!(
                d.pre_apply < d.unregister && d.unregister < d.first_reset,
                "{at}"
            );
        }
        DropMode::Fixed => {
            assert_eq!(d.reason, "recovery, after reset", "{at}");
            assert!(
                d.successful_resets.iter().all(|&r| r < d.unregister),
                "{mode} {fault:?}: unregistered at {at} before a node's reset"
            );
        }
    }
    if let Fault::Kill = fault {
        assert_failed_attempts_reset_the_others(&lines, &d);
    }
}

/// Each failed attempt failed on the dead node alone, and still reset every other node.
fn assert_failed_attempts_reset_the_others(lines: &[String], d: &DropInRecovery) {
    let failed = find_all(lines, d.drop, &[" recovery failed: "]);
    assert!(!failed.is_empty(), "an attempt failed on the dead node");
    for &f in &failed {
        assert!(
            lines[f].contains(&format!(
                "error=reset not acknowledged by worker {VICTIM} (worker {VICTIM} is unreachable) "
            )),
            "{}",
            lines[f]
        );
    }
    // The resets of the first failed attempt: every live node's, at one generation.
    let first: Vec<&String> = lines[d.first_reset..failed[0]]
        .iter()
        .filter(|l| l.contains(" reset node: "))
        .collect();
    let workers: BTreeSet<&str> = first.iter().map(|l| field(l, "worker")).collect();
    assert_eq!(workers, BTreeSet::from(["1", "2"]), "{first:?}");
    assert!(
        d.successful_resets[0] > *failed.last().unwrap(),
        "the successful reset came after the failures"
    );
}

#[test]
fn drop_during_recovery_buggy() {
    assert_drop_in_recovery(DropMode::Buggy, Fault::FailedCollection);
}

#[test]
fn drop_during_recovery_fixed() {
    assert_drop_in_recovery(DropMode::Fixed, Fault::FailedCollection);
}

#[test]
fn drop_during_recovery_purge_before_reset() {
    assert_drop_in_recovery(DropMode::PurgeBeforeReset, Fault::FailedCollection);
}

#[test]
fn drop_during_recovery_with_a_dead_node() {
    for mode in DropMode::ALL {
        assert_drop_in_recovery(mode, Fault::Kill);
    }
}

/// A foreground view is dropped from another task while its backfill runs. Returns the log, the view's
/// tables and the create's result.
fn drop_while_creating(mode: DropMode) -> (Vec<String>, Vec<TableId>) {
    let out = epochlab_sim::run(32, |ctx| async move {
        let cluster = Cluster::start(&ctx, config(mode)).await;
        let table = table_with_rows(&cluster, 200).await;
        let meta = cluster.meta().clone();
        let create = tokio::spawn(async move {
            meta.create_materialized_view("mv", table, slow(false))
                .await
        });
        wait_until(|| {
            cluster.meta().relation_by_name("mv").is_some_and(|r| {
                cluster
                    .meta()
                    .backfill_progress(r.id)
                    .is_some_and(|n| n > 0)
            })
        })
        .await;
        let rel = cluster.meta().relation_by_name("mv").unwrap();
        cluster.meta().drop_job(rel.id).await.unwrap();
        let err = create.await.unwrap().unwrap_err();
        assert!(
            matches!(
                err,
                DdlError::NotCreated {
                    reason: CreateAborted::Dropped,
                    ..
                }
            ),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "materialized view mv was not created: it was dropped"
        );
        assert_eq!(
            cluster
                .barrier_stats()
                .recoveries
                .load(std::sync::atomic::Ordering::Relaxed),
            0,
            "no recovery"
        );
        cluster.meta().flush().await.unwrap();
        registered_equals_catalog(&cluster);
        rel.state_tables()
    });
    check_commits(&out.log.lines()).unwrap();
    (out.log.lines(), out.value)
}

fn assert_drop_while_creating(mode: DropMode) {
    let (lines, tables) = drop_while_creating(mode);
    let drop = find(&lines, 0, &[" ddl: drop materialized view mv "]).expect("the drop");
    let inject = find(
        &lines,
        drop,
        &[" inject barrier: ", "command=drop streaming jobs"],
    )
    .expect("the Stop barrier");
    let prev = field(&lines[inject], "prev");
    let collected = find_all(
        &lines,
        inject,
        &[" collect barrier: ", &format!("prev={prev} ")],
    );
    assert!(!collected.is_empty(), "the Stop barrier was collected");
    let unregistered = find_all(
        &lines,
        0,
        &[" unregister tables: ", &format!("tables={tables:?}")],
    );
    assert_eq!(unregistered.len(), 1, "{mode}: unregistered once");
    let at = &lines[unregistered[0]];
    assert!(
        collected.iter().all(|&c| c < unregistered[0]),
        "{mode}: unregistered at {at} before the Stop barrier was collected"
    );
    let reason = if mode.caller_unregisters_on_return() {
        "reason=drop (buggy order) "
    } else {
        "reason=drop collected "
    };
    assert!(at.contains(reason), "{mode}: {at}");
    assert!(
        !lines.iter().any(|l| l.contains("reason=create failed")),
        "the failed create left the tables to the drop"
    );
}

#[test]
fn drop_while_creating_buggy() {
    assert_drop_while_creating(DropMode::Buggy);
}

#[test]
fn drop_while_creating_fixed() {
    assert_drop_while_creating(DropMode::Fixed);
}

#[test]
fn drop_while_creating_purge_before_reset() {
    assert_drop_while_creating(DropMode::PurgeBeforeReset);
}
