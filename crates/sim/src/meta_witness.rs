//! (I5 meta-restart) After every meta restart, checked outside meta (issue 44, stage S6): what clients were
//! told before the kill is taken as a witness ([`MetaWitness::take`]), and once the restarted meta's bootstrap
//! recovery is done the witness is held against it ([`MetaWitness::check`]):
//!
//! - every DDL the client was told succeeded survives: a relation of the catalog clients last saw whose job
//!   was created (or a relation without a job) is in the restarted meta's catalog, and no relation dropped
//!   before the kill is back. (A job still creating is left out: the bootstrap may clean it, and whether a
//!   background create had returned is not known outside meta.)
//! - the catalog's notification version and the max committed epoch never go back, neither live nor in the
//!   Hummock version the store's deltas lead to;
//! - the catalog, the fragments and Hummock agree: every job has fragments with actors and every fragment a
//!   job (in the store and live), every relation of the SQL catalog with a job has it. (That every registered
//!   table has a catalog entry and every live job's tables are registered is I3's check after the recovery.)

use std::collections::BTreeSet;

use epochlab_common::Epoch;
use epochlab_meta::notification::CatalogSnapshot;
use epochlab_meta::sql_catalog::{JobLink, RelationId};
use epochlab_meta::store::MetaRows;
use epochlab_meta::{JobState, MetaNode};

use crate::cluster::Cluster;
use crate::report::Violation;

pub const INVARIANT: &str = "I5 meta-restart";

/// What clients were told before meta was killed.
#[derive(Clone, Debug)]
pub struct MetaWitness {
    catalog: CatalogSnapshot,
    /// The relations of `catalog` whose DDL was acknowledged.
    acked: BTreeSet<RelationId>,
    /// Every relation id below it had been handed out.
    next_id: u32,
    max_committed_epoch: Epoch,
}

impl MetaWitness {
    /// The witness of `meta`, about to be killed: its published catalog, its jobs' states, Hummock's epoch.
    pub fn take(cluster: &Cluster, meta: &MetaNode) -> Self {
        let catalog = meta.sql_catalog();
        let jobs = meta.catalog();
        let acked = catalog
            .catalog
            .relations()
            .filter(|r| match r.job_link() {
                JobLink::NoJob => true,
                // A job still creating may be cleaned by the bootstrap (a foreground one always; a
                // background one whose create had not returned), so only a created job is held to it.
                JobLink::Linked(t) => jobs.get(t).is_some_and(|j| j.state == JobState::Created),
                JobLink::Pending => false,
            })
            .map(|r| r.id)
            .collect();
        Self {
            next_id: catalog.catalog.ids_handed_out(),
            catalog,
            acked,
            max_committed_epoch: cluster.hummock.max_committed_epoch(),
        }
    }

    /// Every way the restarted meta (bootstrapped) breaks the witness.
    pub fn check(&self, cluster: &Cluster) -> Vec<Violation> {
        let meta = cluster.meta();
        let mut found = self.check_catalog(&meta.sql_catalog(), &meta.dropped_by_ddl());
        let live = cluster.hummock.max_committed_epoch();
        if live < self.max_committed_epoch {
            found.push(format!(
                "the max committed epoch went back from {} to {live}",
                self.max_committed_epoch
            ));
        }
        match meta.store().load() {
            Ok(rows) => found.extend(self.check_store(&rows)),
            Err(e) => found.push(format!("the store cannot be loaded: {e}")),
        }
        found.extend(check_jobs(&meta));
        let at_us = cluster.ctx.clock.elapsed_us();
        found
            .into_iter()
            .map(|detail| {
                let mut v = Violation::new(INVARIANT, format!("after meta's restart: {detail}"));
                v.at_us = Some(at_us);
                v
            })
            .collect()
    }

    /// The catalog after the restart against what clients were told before it; `dropped` went by a client's
    /// DROP after it (a DROP runs while meta bootstraps).
    fn check_catalog(
        &self,
        after: &CatalogSnapshot,
        dropped: &BTreeSet<RelationId>,
    ) -> Vec<String> {
        let mut found = Vec::new();
        if after.version < self.catalog.version {
            found.push(format!(
                "the catalog went back from version {} to {}",
                self.catalog.version, after.version
            ));
        } else if after.version == self.catalog.version && after.catalog != self.catalog.catalog {
            found.push(format!(
                "the catalog's version {} names another catalog than clients were told",
                after.version
            ));
        }
        let lost: Vec<_> = self
            .acked
            .iter()
            .filter(|id| after.catalog.relation(**id).is_none() && !dropped.contains(id))
            .filter_map(|id| self.catalog.catalog.relation(*id))
            .collect();
        if let Some(r) = lost.first() {
            found.push(format!(
                "{} {} ({}), acknowledged before the kill, is gone ({} such)",
                r.kind.as_str(),
                r.name,
                r.id,
                lost.len()
            ));
        }
        let back: Vec<_> = after
            .catalog
            .relations()
            .filter(|r| r.id < self.next_id && self.catalog.catalog.relation(r.id).is_none())
            .collect();
        if let Some(r) = back.first() {
            found.push(format!(
                "{} {} ({}), dropped before the kill, is back ({} such)",
                r.kind.as_str(),
                r.name,
                r.id,
                back.len()
            ));
        }
        found
    }

    /// The store's Hummock version keeps the max committed epoch; every stored fragment has its job.
    fn check_store(&self, rows: &MetaRows) -> Vec<String> {
        let before = self.max_committed_epoch;
        let mut found = Vec::new();
        match rows.hummock_version() {
            Ok(v) if v.max_committed_epoch < before => found.push(format!(
                "the store's Hummock version has max committed epoch {}, below {before}",
                v.max_committed_epoch
            )),
            Ok(_) => {}
            Err(e) => found.push(format!("the store's Hummock deltas: {e}")),
        }
        if let Some(f) = rows
            .fragments
            .values()
            .find(|f| !rows.jobs.contains_key(&f.job_id))
        {
            found.push(format!(
                "the store's fragment {} belongs to no job ({})",
                f.fragment_id, f.job_id
            ));
        }
        found
    }
}

/// Every live job has actors; every relation of the SQL catalog backed by a job has it.
fn check_jobs(meta: &MetaNode) -> Vec<String> {
    let mut found = Vec::new();
    let jobs = meta.catalog();
    if let Some(j) = jobs.relations.values().find(|j| j.actors.is_empty()) {
        found.push(format!("job {} ({}) has no fragments", j.name, j.id));
    }
    let sql = meta.sql_catalog();
    let orphan = sql
        .catalog
        .relations()
        .find(|r| r.table_id.is_some_and(|t| jobs.get(t).is_none()));
    if let Some(r) = orphan {
        found.push(format!(
            "{} {} ({}) has no job in meta",
            r.kind.as_str(),
            r.name,
            r.id
        ));
    }
    found
}
