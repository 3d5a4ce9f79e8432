//! The meta store: what meta keeps beyond its own life (RisingWave's `MetaStore`; at f21fb9b7915 its SQL
//! backend's model, `src/meta/model_v2/`, names the tables). Rows are typed, one struct per table:
//! streaming jobs with their status and create type ([`StreamingJobRow`]), fragments with their state and
//! actors ([`FragmentRow`]), workers ([`WorkerRow`]), id sequences ([`Sequence`]), the SQL catalog with its
//! notification version, and Hummock's version deltas (the max committed epoch lives in the version, as in
//! RisingWave). A commit is a list of [`StoreOp`]s applied whole or not at all.
//!
//! Each manager commits on its own, as at f21fb9b7915: a change to the SQL catalog is one commit, a change
//! to the jobs' catalog two (the jobs, then their fragments), the workers and the sequences theirs, Hummock
//! one per delta; so a failure can fall between them. What RisingWave keeps only in memory (barrier state,
//! queued commands, DDL replies, the progress tracker) is not stored here either. Nothing here awaits, draws
//! from the RNG or logs an event: the store never moves a seed's event log.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use epochlab_common::{FragmentId, TableId, WorkerId};
use epochlab_storage::{HummockVersion, VersionDelta};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::catalog::{ActorPlacement, JobState, Relation};
use crate::notification::NotificationVersion;
use crate::sql_catalog::Catalog as SqlCatalog;

mod sqlite;
pub use sqlite::SqliteStore;

/// Deltas a store keeps before it folds the older half into its version checkpoint (RisingWave's Hummock
/// version checkpoint), so that a long run's store stays bounded.
pub const MAX_STORED_DELTAS: usize = 4096;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MetaStoreError {
    #[error("meta store: {0}")]
    Backend(String),
    /// A row the store holds does not decode (a store file written by something else, or damaged).
    #[error("meta store: a bad row in table {table}: {reason}")]
    Corrupt { table: &'static str, reason: String },
    /// A write of a meta that a later one has replaced (RisingWave fences a meta that lost its lease).
    #[error("meta store: the write of meta term {term} is fenced (term {current} leads)")]
    Fenced { term: u64, current: u64 },
}

/// How a job was created (RisingWave's `streaming_job.create_type`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreateType {
    Foreground,
    Background,
}

/// A fragment's state (RisingWave's `table_fragments.state`): `Initial` until the job's Add barrier is
/// collected, `Creating` while its backfill runs, `Created` after.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragmentState {
    Initial,
    Creating,
    Created,
}

/// A streaming job: the job as meta's catalog has it, its actors left to its fragments' rows.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct StreamingJobRow {
    pub job_id: TableId,
    pub job_status: JobState,
    pub create_type: CreateType,
    pub definition: Relation,
}

/// A fragment of a job and its actors, with their workers and vnodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct FragmentRow {
    pub fragment_id: FragmentId,
    pub job_id: TableId,
    pub state: FragmentState,
    pub actors: Vec<ActorPlacement>,
}

/// A compute node meta knows: running at a generation, or removed from the cluster for good.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerRow {
    Running { generation: u64 },
    Removed,
}

/// A sequence meta hands values out of. `Generation`, `LastAllocatedGeneration` and the row ids are
/// epochlab's own (RisingWave has no recovery generation, and its row ids come from the table's actors).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Sequence {
    Table,
    Fragment,
    Actor,
    Generation,
    LastAllocatedGeneration,
    RowId(TableId),
    /// The highest epoch a barrier has carried (epochlab's own: RisingWave relies on physical time).
    EpochHighWater,
}

/// One write in a commit.
#[derive(Clone, Debug)]
pub enum StoreOp {
    PutCatalog(NotificationVersion, Arc<SqlCatalog>),
    PutJob(Box<StreamingJobRow>),
    DeleteJob(TableId),
    PutFragment(FragmentRow),
    DeleteFragment(FragmentId),
    PutWorker(WorkerId, WorkerRow),
    DeleteWorker(WorkerId),
    PutSequence(Sequence, u64),
    PushHummockDelta(Arc<VersionDelta>),
}

/// Every row of a store, as loaded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaRows {
    pub catalog: Option<(NotificationVersion, Arc<SqlCatalog>)>,
    pub jobs: BTreeMap<TableId, StreamingJobRow>,
    pub fragments: BTreeMap<FragmentId, FragmentRow>,
    pub workers: BTreeMap<WorkerId, WorkerRow>,
    pub sequences: BTreeMap<Sequence, u64>,
    /// The Hummock version the deltas below start from.
    pub hummock_checkpoint: HummockVersion,
    pub hummock_deltas: Vec<Arc<VersionDelta>>,
    /// The term of the meta that leads: the last to [`MetaStore::claim`] the store.
    pub term: u64,
}

impl MetaRows {
    fn apply(&mut self, op: StoreOp) {
        match op {
            StoreOp::PutCatalog(v, c) => self.catalog = Some((v, c)),
            StoreOp::PutJob(row) => drop(self.jobs.insert(row.job_id, *row)),
            StoreOp::DeleteJob(id) => drop(self.jobs.remove(&id)),
            StoreOp::PutFragment(row) => drop(self.fragments.insert(row.fragment_id, row)),
            StoreOp::DeleteFragment(id) => drop(self.fragments.remove(&id)),
            StoreOp::PutWorker(id, row) => drop(self.workers.insert(id, row)),
            StoreOp::DeleteWorker(id) => drop(self.workers.remove(&id)),
            StoreOp::PutSequence(s, v) => drop(self.sequences.insert(s, v)),
            StoreOp::PushHummockDelta(d) => {
                self.hummock_deltas.push(d);
                if self.hummock_deltas.len() > MAX_STORED_DELTAS {
                    let folded: Vec<_> =
                        self.hummock_deltas.drain(..MAX_STORED_DELTAS / 2).collect();
                    for d in folded {
                        self.hummock_checkpoint.apply(&d);
                    }
                }
            }
        }
    }

    /// The Hummock version the stored deltas lead to; a delta that does not follow the one before is a
    /// corrupt row.
    pub fn hummock_version(&self) -> Result<HummockVersion, MetaStoreError> {
        let mut v = self.hummock_checkpoint.clone();
        for d in &self.hummock_deltas {
            v.check_follows(d).map_err(|e| MetaStoreError::Corrupt {
                table: "hummock_version_delta",
                reason: e.to_string(),
            })?;
            v.apply(d);
        }
        Ok(v)
    }

    /// The jobs' catalog as the rows give it: each job's definition with its fragments' actors and states.
    /// A job whose fragments are missing has no actors (a failure fell between the two commits).
    pub fn relations(&self) -> BTreeMap<TableId, Relation> {
        let mut by_fragment: BTreeMap<FragmentId, &FragmentRow> = BTreeMap::new();
        for f in self.fragments.values() {
            by_fragment.insert(f.fragment_id, f);
        }
        self.jobs
            .values()
            .map(|row| (row.job_id, assemble(row, &by_fragment)))
            .collect()
    }
}

/// The rows a catalog of jobs is kept as: each job's row, and every fragment's.
pub fn catalog_rows<'a>(
    relations: impl IntoIterator<Item = &'a Relation>,
) -> (
    BTreeMap<TableId, StreamingJobRow>,
    BTreeMap<FragmentId, FragmentRow>,
) {
    let (mut jobs, mut fragments) = (BTreeMap::new(), BTreeMap::new());
    for rel in relations {
        let (job, rows) = job_rows(rel);
        jobs.insert(job.job_id, job);
        fragments.extend(rows.into_iter().map(|f| (f.fragment_id, f)));
    }
    (jobs, fragments)
}

/// The rows a job is kept as: its job row, then one row per fragment.
pub fn job_rows(rel: &Relation) -> (StreamingJobRow, Vec<FragmentRow>) {
    let state = match (rel.fragments_initial, rel.state) {
        (true, _) => FragmentState::Initial,
        (false, JobState::Creating) => FragmentState::Creating,
        (false, JobState::Created) => FragmentState::Created,
    };
    let fragment = |fragment_id, actors: &[ActorPlacement]| FragmentRow {
        fragment_id,
        job_id: rel.id,
        state,
        actors: actors.to_vec(),
    };
    let mut fragments = vec![fragment(rel.fragment_id, &rel.actors)];
    if let Some(g) = &rel.graph {
        fragments.extend(
            g.fragments
                .iter()
                .map(|f| fragment(f.fragment_id, &f.actors)),
        );
    }
    if let Some(s) = &rel.sink_fragment {
        fragments.push(fragment(s.fragment_id, &s.actors));
    }
    let mut definition = rel.clone();
    for a in [&mut definition.actors]
        .into_iter()
        .chain(
            definition
                .graph
                .iter_mut()
                .flat_map(|g| g.fragments.iter_mut().map(|f| &mut f.actors)),
        )
        .chain(definition.sink_fragment.iter_mut().map(|f| &mut f.actors))
    {
        a.clear();
    }
    let job = StreamingJobRow {
        job_id: rel.id,
        job_status: rel.state,
        create_type: if rel.background {
            CreateType::Background
        } else {
            CreateType::Foreground
        },
        definition,
    };
    (job, fragments)
}

fn assemble(row: &StreamingJobRow, fragments: &BTreeMap<FragmentId, &FragmentRow>) -> Relation {
    let mut rel = row.definition.clone();
    rel.state = row.job_status;
    rel.background = row.create_type == CreateType::Background;
    let actors = |id: FragmentId| {
        fragments
            .get(&id)
            .map(|f| f.actors.clone())
            .unwrap_or_default()
    };
    rel.fragments_initial = fragments
        .get(&rel.fragment_id)
        .is_some_and(|f| f.state == FragmentState::Initial);
    rel.actors = actors(rel.fragment_id);
    if let Some(g) = &mut rel.graph {
        for f in &mut g.fragments {
            f.actors = actors(f.fragment_id);
        }
    }
    if let Some(s) = &mut rel.sink_fragment {
        s.actors = actors(s.fragment_id);
    }
    rel
}

/// Which store a meta keeps its rows in (`--meta-store`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetaBackend {
    /// [`MemStore`]: rows as Rust values; the fastest.
    Memory,
    /// [`SqliteStore`]: an SQLite database in memory (RisingWave's SQL backend), the default.
    #[default]
    Sqlite,
}

impl MetaBackend {
    pub const ALL: [MetaBackend; 2] = [MetaBackend::Memory, MetaBackend::Sqlite];

    pub fn as_str(self) -> &'static str {
        match self {
            MetaBackend::Memory => "memory",
            MetaBackend::Sqlite => "sqlite",
        }
    }

    /// A new, empty store of this kind.
    pub fn open(self) -> Result<Arc<dyn MetaStore>, MetaStoreError> {
        Ok(match self {
            MetaBackend::Memory => Arc::new(MemStore::default()),
            MetaBackend::Sqlite => Arc::new(SqliteStore::open_in_memory()?),
        })
    }
}

/// Where meta's rows go.
pub trait MetaStore: Send + Sync {
    /// A meta starting claims the store: the term it writes under from now on, one above the last. Every
    /// meta of an earlier term is fenced.
    fn claim(&self) -> Result<u64, MetaStoreError>;

    /// Apply `ops` whole, or none of them; refused (`Fenced`) unless `term` leads.
    fn commit(&self, term: u64, ops: Vec<StoreOp>) -> Result<(), MetaStoreError>;

    /// Every row.
    fn load(&self) -> Result<MetaRows, MetaStoreError>;

    /// Write every row as an SQLite database file at `path`, replacing what is there (`--meta-store-out`):
    /// the tables of [`SqliteStore`], whichever store this is.
    fn write_sqlite(&self, path: &std::path::Path) -> Result<(), MetaStoreError> {
        SqliteStore::of_rows(&self.load()?)?.write_sqlite(path)
    }
}

/// A store in memory: it outlives the meta that writes it only as long as whoever holds it.
#[derive(Default)]
pub struct MemStore {
    rows: Mutex<MetaRows>,
}

impl MemStore {
    fn rows(&self) -> MutexGuard<'_, MetaRows> {
        self.rows.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MetaStore for MemStore {
    fn claim(&self) -> Result<u64, MetaStoreError> {
        let mut rows = self.rows();
        rows.term += 1;
        Ok(rows.term)
    }

    fn commit(&self, term: u64, ops: Vec<StoreOp>) -> Result<(), MetaStoreError> {
        let mut rows = self.rows();
        if term != rows.term {
            return Err(MetaStoreError::Fenced {
                term,
                current: rows.term,
            });
        }
        for op in ops {
            rows.apply(op);
        }
        Ok(())
    }

    fn load(&self) -> Result<MetaRows, MetaStoreError> {
        Ok(self.rows().clone())
    }
}

/// How a store's rows differ from live meta's (each names what differs).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StoreMismatch {
    #[error("the store could not be loaded: {0}")]
    Load(#[from] MetaStoreError),
    #[error("the stored SQL catalog (version {stored:?}) is not live meta's (version {live:?})")]
    Catalog {
        stored: Option<NotificationVersion>,
        live: Option<NotificationVersion>,
    },
    #[error("streaming jobs differ: {0:?}")]
    Jobs(Vec<TableId>),
    #[error("fragments differ: {0:?}")]
    Fragments(Vec<FragmentId>),
    #[error("workers differ: {0:?}")]
    Workers(Vec<WorkerId>),
    #[error("sequences differ: {0:?}")]
    Sequences(Vec<Sequence>),
    #[error("the stored deltas lead to Hummock version {stored}, live meta is at {live}")]
    Hummock { stored: u64, live: u64 },
    #[error("jobs assembled from the rows differ from meta's catalog: {0:?}")]
    Relations(Vec<TableId>),
}

/// The keys whose values differ between two maps (either side missing counts).
fn differing<K: Ord + Copy, V: PartialEq>(a: &BTreeMap<K, V>, b: &BTreeMap<K, V>) -> Vec<K> {
    let mut keys: Vec<K> = a.keys().chain(b.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    keys.retain(|k| a.get(k) != b.get(k));
    keys
}

impl MetaRows {
    /// Every way these rows (loaded from a store) differ from `live` (meta's live state as rows, Hummock's
    /// version as its checkpoint) and from `relations` (meta's live catalog of jobs).
    pub fn mismatches(
        &self,
        live: &MetaRows,
        relations: &BTreeMap<TableId, Relation>,
    ) -> Vec<StoreMismatch> {
        let mut out = Vec::new();
        if self.catalog != live.catalog {
            out.push(StoreMismatch::Catalog {
                stored: self.catalog.as_ref().map(|c| c.0),
                live: live.catalog.as_ref().map(|c| c.0),
            });
        }
        let jobs = differing(&self.jobs, &live.jobs);
        if !jobs.is_empty() {
            out.push(StoreMismatch::Jobs(jobs));
        }
        let fragments = differing(&self.fragments, &live.fragments);
        if !fragments.is_empty() {
            out.push(StoreMismatch::Fragments(fragments));
        }
        let workers = differing(&self.workers, &live.workers);
        if !workers.is_empty() {
            out.push(StoreMismatch::Workers(workers));
        }
        let sequences = differing(&self.sequences, &live.sequences);
        if !sequences.is_empty() {
            out.push(StoreMismatch::Sequences(sequences));
        }
        match self.hummock_version() {
            Ok(stored) if stored != live.hummock_checkpoint => out.push(StoreMismatch::Hummock {
                stored: stored.id,
                live: live.hummock_checkpoint.id,
            }),
            Ok(_) => {}
            Err(e) => out.push(StoreMismatch::Load(e)),
        }
        let assembled = differing(&self.relations(), relations);
        if !assembled.is_empty() {
            out.push(StoreMismatch::Relations(assembled));
        }
        out
    }
}
