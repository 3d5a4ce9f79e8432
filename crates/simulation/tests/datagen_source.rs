//! A datagen source end to end through SQL: `CREATE SOURCE .. WITH (connector = 'datagen')` runs its
//! connector in its table job (`StreamNode::Source`), a materialized view over it sees every row its
//! sequence makes exactly once, at the rate it asks for, with a `proctime()` column; a compute node killed
//! between checkpoints loses the uncommitted rows and their offsets together, so the view still ends with
//! each value once.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use epochlab_common::WorkerId;
use epochlab_frontend::{Output, Session};
use epochlab_sim::{Cluster, ClusterConfig, SimContext};

fn config() -> ClusterConfig {
    epochlab_sim::config::three_nodes(4, epochlab_common::Toggles::default())
}

fn rows(out: Output) -> Vec<Vec<String>> {
    match out {
        Output::Rows { mut rows, .. } => {
            rows.sort();
            rows
        }
        Output::Done(_) => panic!("a query returns rows"),
    }
}

async fn query(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    rows(s.execute(sql).await.expect(sql))
}

fn source_sql(end: u32, rate: u32, splits: u32) -> String {
    format!(
        "CREATE SOURCE src (v INT, t TIMESTAMPTZ AS proctime()) WITH (connector = 'datagen', \
         fields.v.kind = 'sequence', fields.v.start = '1', fields.v.end = '{end}', \
         datagen.rows.per.second = '{rate}', datagen.split.num = '{splits}') FORMAT PLAIN ENCODE JSON"
    )
}

/// The view's values of `v`, in order.
async fn values(s: &mut Session) -> Vec<i64> {
    let mut v: Vec<i64> = query(s, "SELECT v FROM mv")
        .await
        .iter()
        .map(|r| r[0].parse().expect("an integer"))
        .collect();
    v.sort_unstable();
    v
}

struct Seen {
    after_one_second: usize,
    end: Vec<i64>,
    later: Vec<Vec<String>>,
    recoveries: Result<(), epochlab_sim::RecoveryFinding>,
}

async fn scenario(ctx: SimContext, kill: bool) -> Seen {
    let cluster = Arc::new(Cluster::start(&ctx, config()).await);
    let engine = epochlab_simulation::engine(&cluster, 3);
    engine.run_connectors.store(true, Ordering::Relaxed);
    let mut s = Session::new(engine);
    for ddl in [
        source_sql(200, 40, 3),
        "CREATE MATERIALIZED VIEW mv AS SELECT * FROM src".to_string(),
    ] {
        s.execute(&ddl).await.expect(&ddl);
    }
    tokio::time::sleep(Duration::from_millis(1_050)).await;
    s.execute("FLUSH").await.unwrap();
    let after_one_second = values(&mut s).await.len();
    if kill {
        let ms = ctx.rng.range_u64(30..250);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        assert!(cluster.kill(WorkerId(2)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        cluster.restart(WorkerId(2));
        cluster.wait_ready().await;
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    s.execute("FLUSH").await.unwrap();
    let end = values(&mut s).await;
    let later = query(
        &mut s,
        "SELECT count(*), bool_and(t >= '2021-01-01'::timestamptz) FROM mv",
    )
    .await;
    let recoveries = cluster.check_recoveries(u64::from(kill));
    cluster.shutdown();
    Seen {
        after_one_second,
        end,
        later,
        recoveries,
    }
}

fn check(seed: u64, kill: bool) {
    let seen = epochlab_sim::run(seed, move |ctx| scenario(ctx, kill)).value;
    let expected: Vec<i64> = (1..=200).collect();
    assert_eq!(
        seen.end, expected,
        "seed {seed}, kill {kill}: each value once"
    );
    assert_eq!(seen.later, vec![vec!["200".to_string(), "t".to_string()]]);
    // 40 rows a second over 3 splits: the first second's at once, the second's after a second.
    assert!(
        (40..=80).contains(&seen.after_one_second),
        "seed {seed}: {} rows after one second at 40 a second",
        seen.after_one_second
    );
    seen.recoveries.expect("only the kill's recovery");
}

#[test]
fn a_view_over_a_datagen_source_sees_each_row_once() {
    for seed in 0..3 {
        check(seed, false);
    }
}

#[test]
fn a_kill_between_checkpoints_loses_rows_and_offsets_together() {
    for seed in 0..6 {
        check(seed, true);
    }
}
