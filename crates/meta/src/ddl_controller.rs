//! Meta's DDL controller (RisingWave's `DdlController`, `src/meta/src/rpc/ddl_controller.rs` at f21fb9b7915):
//! the CREATE of a streaming job is one request, run in a task meta owns ([`MetaNode::run_command`]), so a
//! client that goes away does not end it and a killed meta does (its tasks are aborted where they stand, and
//! the next meta's bootstrap cleans what they left). Each step commits on its own, in RisingWave's order:
//! the catalog row, then the job and its fragments (`Initial`), the Hummock registration, the first barrier,
//! the fragments `Creating` and `Created`, and the catalog row linked to its job last. A DROP deletes the
//! catalog rows first, then each job (its fragments, its Stop barrier, its tables unregistered).

use std::collections::BTreeSet;
use std::sync::Arc;

use epochlab_barrier::{BarrierError, SchedulerStatus};
use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{ConflictBehavior, StreamFragmentGraph};
use epochlab_common::source::DatagenSpec;
use epochlab_common::{DataType, ExprNode, TableId, event};

use crate::catalog::RelationKind;
use crate::crash::CrashPoint;
use crate::meta::{DdlError, JobOptions, MetaNode, SinkOptions};
use crate::notification::NotificationVersion;
use crate::sql_catalog::{Def, JobLink, RelationCatalog, RelationId};

/// What a streaming job's CREATE builds.
#[derive(Clone, Debug)]
pub enum StreamingJob {
    /// A planned fragment graph (a view, a sink, an index's arrangement) over its one table.
    Graph {
        kind: RelationKind,
        graph: StreamFragmentGraph,
        tables: Vec<Arc<TableDesc>>,
    },
    /// A view of one table's rows, planned by meta (`MetaNode::create_materialized_view`).
    MaterializedView { upstream: TableId },
    /// A sink of one table's rows (`MetaNode::create_sink`).
    Sink {
        upstream: TableId,
        sink: SinkOptions,
    },
    /// A table (`MetaNode::create_table_with_conflict`, over the options' parallelism): its stored columns,
    /// its key, the key's positions it is distributed by, what its materialize does with a key it holds,
    /// and its `WATERMARK FOR` column and expression.
    Table {
        column_types: Vec<DataType>,
        pk: Vec<usize>,
        dist_key_in_pk: Vec<usize>,
        conflict: ConflictBehavior,
        watermark: Option<(usize, ExprNode)>,
    },
    /// A source's table job (its columns, then a hidden row id at `row_id_index`, its key): with a datagen
    /// spec its connector runs (`MetaNode::create_source`); without, it is a table nothing writes.
    Source {
        column_types: Vec<DataType>,
        row_id_index: usize,
        datagen: Option<DatagenSpec>,
        generated: Vec<(usize, ExprNode)>,
    },
}

/// `CREATE` of a streaming job, whole: its catalog row as the front end planned it (meta gives its id), the
/// front end's definition of the job, what to build, and how.
#[derive(Clone, Debug)]
pub struct CreateStreamingJob {
    pub relation: RelationCatalog,
    /// The row as it is listed once its job is linked, when that differs (an index: a view's row while
    /// its job is built, so that a drop meanwhile finds the job, then the index).
    pub listed_as: Option<RelationCatalog>,
    pub def: Def,
    pub job: StreamingJob,
    pub options: JobOptions,
}

/// A DDL request meta runs whole (RisingWave's `DdlCommand`).
#[derive(Clone, Debug)]
pub enum DdlCommand {
    CreateStreamingJob(Box<CreateStreamingJob>),
    /// `DROP` of a relation (and with `cascade` its dependents), by its catalog id.
    DropRelation {
        id: RelationId,
        cascade: bool,
    },
    /// `DROP DATABASE`: its rows, then every streaming job of its relations.
    DropDatabase {
        name: String,
    },
}

impl DdlCommand {
    /// RisingWave's `allow_in_recovery`: a drop runs while the cluster bootstraps or recovers (recovery
    /// pre-applies it); any other DDL is refused at its start.
    fn allowed_in_recovery(&self) -> bool {
        matches!(
            self,
            DdlCommand::DropRelation { .. } | DdlCommand::DropDatabase { .. }
        )
    }
}

/// A DDL's answer: the job's table, and the catalog version its last commit took, which the front end waits
/// for before it answers its client (RisingWave's `wait_version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DdlOutcome {
    pub table_id: Option<TableId>,
    pub version: NotificationVersion,
}

impl MetaNode {
    /// Run `command` in a task of meta's own and answer when it ends. A killed meta ends the task where it
    /// stands: its client sees meta unavailable, as RisingWave's client sees a gRPC error.
    pub async fn run_command(&self, command: DdlCommand) -> Result<DdlOutcome, DdlError> {
        self.alive()?;
        if !command.allowed_in_recovery() {
            self.check_status_running()?;
        }
        let meta = self.clone();
        let task = tokio::spawn(async move { meta.run_command_in_meta(command).await });
        self.inner.own_task(task.abort_handle());
        match task.await {
            Ok(outcome) => outcome,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(DdlError::MetaUnavailable),
        }
    }

    /// RisingWave's `check_status_running`: the barrier manager's status, as its scheduler has it (blocked
    /// while the cluster bootstraps or recovers, with the reason).
    fn check_status_running(&self) -> Result<(), DdlError> {
        match self.inner.scheduler.status() {
            SchedulerStatus::Blocked(why) => Err(DdlError::Barrier(BarrierError::Blocked(why))),
            _ => Ok(()),
        }
    }

    async fn run_command_in_meta(&self, command: DdlCommand) -> Result<DdlOutcome, DdlError> {
        match command {
            DdlCommand::CreateStreamingJob(c) => self.create_streaming_job_whole(*c).await,
            DdlCommand::DropRelation { id, cascade } => self.drop_relation_whole(id, cascade).await,
            DdlCommand::DropDatabase { name } => self.drop_database_whole(&name).await,
        }
    }

    /// RisingWave's `create_streaming_job`: the catalog row first (with the front end's definition), then
    /// the job (its steps in [`MetaNode::create_job`]), then the row linked to the job's table, or taken
    /// away with a job that failed.
    async fn create_streaming_job_whole(
        &self,
        c: CreateStreamingJob,
    ) -> Result<DdlOutcome, DdlError> {
        let CreateStreamingJob {
            relation,
            listed_as,
            def,
            job,
            options,
        } = c;
        let name = relation.job_name();
        let (id, _) = self.catalog_write(|catalog| {
            let id = catalog.create_relation(relation)?;
            catalog.set_def(name.clone(), def);
            Ok::<_, DdlError>(id)
        })?;
        event!(self.inner.log, "ddl", "catalog row {name} id={id}");
        if self.inner.crash_point(CrashPoint::CreateAfterCatalog) {
            return Err(DdlError::MetaUnavailable);
        }
        let created = self.create_job_of(&name, job, options).await;
        match created {
            Ok(table_id) => self.link_job(id, table_id, listed_as).await,
            Err(e) => {
                // Gone already (a drop of another session) is as good.
                let _ = self.catalog_write(|catalog| catalog.drop_relation(id, true));
                Err(e)
            }
        }
    }

    /// The catalog row `id` linked to its job's table (and listed as `listed_as`, when given). A row a DROP
    /// took while the job was being built (before the job was in meta's catalog, so that the DROP found no
    /// job to stop) takes its job with it: the CREATE was dropped.
    async fn link_job(
        &self,
        id: RelationId,
        table_id: TableId,
        listed_as: Option<RelationCatalog>,
    ) -> Result<DdlOutcome, DdlError> {
        let (linked, version) = self.catalog_write(|catalog| {
            let Some(r) = catalog.relation_mut(id) else {
                return Ok::<_, DdlError>(false);
            };
            if let Some(listed) = listed_as {
                let (id, job) = (r.id, r.job.clone());
                *r = RelationCatalog { id, job, ..listed };
            }
            r.table_id = Some(table_id);
            Ok(true)
        })?;
        if linked {
            return Ok(DdlOutcome {
                table_id: Some(table_id),
                version,
            });
        }
        let Some(job) = self.relation(table_id) else {
            return Err(DdlError::NotFound(format!("relation {table_id}")));
        };
        event!(
            self.inner.log,
            "ddl",
            "catalog row of {} gone: drop its job",
            job.name
        );
        match self.drop_job(table_id).await {
            Ok(()) | Err(DdlError::NotFound(_)) => Err(DdlError::NotCreated {
                kind: job.kind,
                name: job.name,
                reason: crate::progress::CreateAborted::Dropped,
            }),
            Err(e) => Err(e),
        }
    }

    /// The job of a CREATE, built by the function of its kind.
    async fn create_job_of(
        &self,
        name: &str,
        job: StreamingJob,
        options: JobOptions,
    ) -> Result<TableId, DdlError> {
        match job {
            StreamingJob::Graph {
                kind,
                graph,
                tables,
            } => {
                self.create_streaming_job(name, kind, graph, tables, options)
                    .await
            }
            StreamingJob::MaterializedView { upstream } => {
                self.create_materialized_view(name, upstream, options).await
            }
            StreamingJob::Sink { upstream, sink } => {
                self.create_sink(name, upstream, options, sink).await
            }
            StreamingJob::Table {
                column_types,
                pk,
                dist_key_in_pk,
                conflict,
                watermark,
            } => {
                let (columns, parallelism) = (column_types, options.parallelism);
                self.create_table_with_conflict(
                    name,
                    columns,
                    pk,
                    dist_key_in_pk,
                    parallelism,
                    conflict,
                    watermark,
                )
                .await
            }
            StreamingJob::Source {
                column_types,
                row_id_index,
                datagen: Some(datagen),
                generated,
            } => {
                let parallelism = options.parallelism;
                self.create_source(
                    name,
                    column_types,
                    row_id_index,
                    parallelism,
                    datagen,
                    generated,
                )
                .await
            }
            StreamingJob::Source {
                column_types,
                row_id_index,
                datagen: None,
                ..
            } => {
                let (pk, parallelism) = (vec![row_id_index], options.parallelism);
                self.create_table(name, column_types, pk, parallelism).await
            }
        }
    }
}

impl MetaNode {
    /// RisingWave's `drop_streaming_job`: the catalog rows first (the relation and, with `cascade`, its
    /// dependents), then each one's job, dependents first: out of the jobs' catalog with its fragments, its
    /// actors stopped by a Stop barrier, its tables unregistered (`MetaNode::drop_job`). A job gone already
    /// is as good.
    async fn drop_relation_whole(
        &self,
        id: RelationId,
        cascade: bool,
    ) -> Result<DdlOutcome, DdlError> {
        let (jobs, version) = self.catalog_write(|catalog| {
            let going = catalog.drop_relation(id, cascade)?;
            self.jobs_to_drop(catalog, &going)
        })?;
        if self.inner.crash_point(CrashPoint::DropAfterCatalog) {
            return Err(DdlError::MetaUnavailable);
        }
        self.drop_jobs(jobs, version).await
    }

    /// RisingWave's `drop_database`: the database's rows in one commit, then its relations' jobs, the newest
    /// first (a job reads only older ones).
    async fn drop_database_whole(&self, name: &str) -> Result<DdlOutcome, DdlError> {
        let (mut jobs, version) = self.catalog_write(|catalog| {
            let going = catalog.drop_database(name)?;
            self.jobs_to_drop(catalog, &going)
        })?;
        if self.inner.crash_point(CrashPoint::DropAfterCatalog) {
            return Err(DdlError::MetaUnavailable);
        }
        jobs.sort_unstable_by(|a, b| b.cmp(a));
        self.drop_jobs(jobs, version).await
    }

    /// The jobs of the rows a DROP takes (`catalog` is the catalog as the DROP leaves it), with the jobs
    /// without rows that read them first; refused (before its commit) when a job with a row reads one. The
    /// rows are noted as dropped by a client's request ([`MetaNode::dropped_by_ddl`]).
    fn jobs_to_drop(
        &self,
        catalog: &crate::sql_catalog::Catalog,
        going: &[RelationCatalog],
    ) -> Result<Vec<TableId>, DdlError> {
        let jobs: Vec<TableId> = going.iter().filter_map(|r| self.job_of(r)).collect();
        let jobs = self.with_dirty_downstreams(catalog, jobs)?;
        crate::meta::lock(&self.inner.dropped_by_ddl).extend(going.iter().map(|r| r.id));
        Ok(jobs)
    }

    /// The catalog rows this meta's DROPs deleted (since it started).
    pub fn dropped_by_ddl(&self) -> BTreeSet<RelationId> {
        crate::meta::lock(&self.inner.dropped_by_ddl).clone()
    }

    /// Each of `jobs` dropped in turn (one gone already is as good); the DROP's answer carries `version`,
    /// its catalog commit.
    async fn drop_jobs(
        &self,
        jobs: Vec<TableId>,
        version: NotificationVersion,
    ) -> Result<DdlOutcome, DdlError> {
        for job in jobs {
            match self.drop_job(job).await {
                Ok(()) | Err(DdlError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(DdlOutcome {
            table_id: None,
            version,
        })
    }
}

impl MetaNode {
    /// The job behind a catalog row, if it has one: its linked table, or the job of its name while its
    /// CREATE is under way.
    fn job_of(&self, r: &RelationCatalog) -> Option<TableId> {
        match r.job_link() {
            JobLink::NoJob => None,
            JobLink::Linked(t) => Some(t),
            JobLink::Pending => self.relation_by_name(&r.job_name()).map(|j| j.id),
        }
    }

    /// `jobs` with every job that reads one of them, transitively, and has no catalog row (a DROP a meta
    /// kill cut off after its catalog commit, which the next recovery would clean: RisingWave's dirty
    /// fragments) ahead of them, the newest first. A reader with a row (a dependency meta's job graph knows
    /// and the catalog rows do not) refuses the DROP before its commit: it would otherwise commit its rows,
    /// fail at that job, and leave jobs without rows.
    fn with_dirty_downstreams(
        &self,
        sql: &crate::sql_catalog::Catalog,
        mut jobs: Vec<TableId>,
    ) -> Result<Vec<TableId>, DdlError> {
        let listed: BTreeSet<TableId> = sql.relations().filter_map(|r| self.job_of(r)).collect();
        let catalog = self.inner.catalog();
        let mut dirty: Vec<TableId> = Vec::new();
        let mut to_visit = jobs.clone();
        while let Some(job) = to_visit.pop() {
            for d in catalog.downstreams(job) {
                if jobs.contains(&d.id) || dirty.contains(&d.id) {
                    continue;
                }
                if listed.contains(&d.id) || self.inner.config.unlisted_jobs {
                    let name = catalog
                        .get(job)
                        .map_or_else(|| job.to_string(), |r| r.name.clone());
                    event!(
                        self.inner.log,
                        "ddl",
                        "drop of {name} refused: {} reads it",
                        d.name
                    );
                    return Err(DdlError::HasDependents(name));
                }
                event!(
                    self.inner.log,
                    "ddl",
                    "drop takes {} too: it reads {job} and has no catalog row",
                    d.name
                );
                dirty.push(d.id);
                to_visit.push(d.id);
            }
        }
        dirty.sort_unstable_by(|a, b| b.cmp(a));
        dirty.append(&mut jobs);
        Ok(dirty)
    }
}
