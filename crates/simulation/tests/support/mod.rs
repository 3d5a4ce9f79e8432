//! What the SQL-level simulation tests share: run a statement, read a query's rows sorted, write expected
//! rows as text. Each test binary uses some of them.
#![allow(dead_code)]

use epochlab_frontend::{Output, Session};

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
