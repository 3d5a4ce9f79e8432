//! What the SQL-level simulation tests share: run a statement, read a query's rows sorted, write expected
//! rows as text. Each test binary uses some of them.
#![allow(dead_code)]

use std::time::Duration;

use epochlab_common::WorkerId;
use epochlab_frontend::{Output, Session};
use epochlab_sim::Cluster;

/// Every compute node (workers `1..=nodes`) killed and restarted 0.5 s later: the actors are rebuilt from
/// committed state only.
pub async fn kill_all(cluster: &Cluster, nodes: u32) {
    for w in 1..=nodes {
        assert!(cluster.kill(WorkerId(w)));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for w in 1..=nodes {
        cluster.restart(WorkerId(w));
    }
    cluster.wait_ready().await;
}

/// The rows `sql` returns, sorted (each value as the front end prints it).
pub async fn query(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s.execute(sql).await.expect(sql) {
        Output::Rows { mut rows, .. } => {
            rows.sort();
            rows
        }
        Output::Done(_) => panic!("{sql} returns rows"),
    }
}

/// Run `sql`, which must succeed.
pub async fn ok(s: &mut Session, sql: &str) {
    s.execute(sql).await.expect(sql);
}

/// Expected rows, written as string slices.
pub fn text(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}
