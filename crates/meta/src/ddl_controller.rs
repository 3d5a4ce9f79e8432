//! Meta's DDL controller (RisingWave's `DdlController`, `src/meta/src/rpc/ddl_controller.rs` at f21fb9b7915):
//! the CREATE of a streaming job is one request, run in a task meta owns ([`MetaNode::run_command`]), so a
//! client that goes away does not end it and a killed meta does (its tasks are aborted where they stand, and
//! the next meta's bootstrap cleans what they left). Each step commits on its own, in RisingWave's order:
//! the catalog row, then the job and its fragments (`Initial`), the Hummock registration, the first barrier,
//! the fragments `Creating` and `Created`, and the catalog row linked to its job last. A DROP deletes the
//! catalog rows first, then each job (its fragments, its Stop barrier, its tables unregistered).
//!
//! Behind [`crate::MetaConfig::ddl_in_meta`] (off: the front end's several requests, the path this replaces
//! once its figures are measured).

use std::sync::Arc;

use epochlab_barrier::{BarrierError, SchedulerStatus};
use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{ConflictBehavior, StreamFragmentGraph};
use epochlab_common::source::DatagenSpec;
use epochlab_common::{DataType, ExprNode, TableId, event};

use crate::catalog::RelationKind;
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
}

impl DdlCommand {
    /// RisingWave's `allow_in_recovery`: a drop runs while the cluster bootstraps or recovers (recovery
    /// pre-applies it); any other DDL is refused at its start.
    fn allowed_in_recovery(&self) -> bool {
        matches!(self, DdlCommand::DropRelation { .. })
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
        let created = self.create_job_of(&name, job, options).await;
        match created {
            Ok(table_id) => {
                let ((), version) = self.catalog_write(|catalog| {
                    if let Some(r) = catalog.relation_mut(id) {
                        if let Some(listed) = listed_as {
                            let (id, job) = (r.id, r.job.clone());
                            *r = RelationCatalog { id, job, ..listed };
                        }
                        r.table_id = Some(table_id);
                    }
                    Ok::<_, DdlError>(())
                })?;
                Ok(DdlOutcome {
                    table_id: Some(table_id),
                    version,
                })
            }
            Err(e) => {
                // Gone already (a drop of another session) is as good.
                let _ = self.catalog_write(|catalog| catalog.drop_relation(id, true));
                Err(e)
            }
        }
    }

    /// The job of a CREATE, built by the function of its kind (the front end's path without
    /// `ddl_in_meta` calls it too, after its own catalog row).
    pub async fn create_job_of(
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
        let (going, version) = self.catalog_write(|catalog| catalog.drop_relation(id, cascade))?;
        for r in &going {
            let job = match r.job_link() {
                JobLink::NoJob => continue,
                JobLink::Linked(t) => Some(t),
                JobLink::Pending => self.relation_by_name(&r.job_name()).map(|j| j.id),
            };
            let Some(job) = job else { continue };
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
