//! The meta store in SQLite (RisingWave's SQL backend, its single-node default from #14951): one table per
//! kind of row, named after RisingWave's `model_v2` at f21fb9b7915 (`streaming_job`, `fragment`, `actor`,
//! `worker`, `object`, `database`, `user`, `catalog_version`, `hummock_version_delta`), plus epochlab's own,
//! named as such: `election_leader` (the meta term that may write), `sequence` (ids, row ids, the recovery
//! generation and the high-water mark of issued epochs), `job_definition` (the front end's definition of each
//! job, kept by name), `catalog_sequence` (the SQL catalog's id counters) and `hummock_version_checkpoint`.
//! Structured values (a job's plan, a catalog entry, a vnode bitmap) are JSON text, so that `sqlite3` can
//! read them with `json_extract`.
//!
//! One connection, behind a mutex, used from the simulation's one thread; every load is `ORDER BY` its key,
//! and no statement asks for the clock or randomness, so the same seed writes the same rows.

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use epochlab_common::{ActorId, FragmentId, TableId, WorkerId};
use epochlab_storage::{HummockVersion, VersionDelta};
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{
    CreateType, FragmentRow, FragmentState, MAX_STORED_DELTAS, MetaRows, MetaStore, MetaStoreError,
    Sequence, StoreOp, StreamingJobRow, WorkerRow,
};
use crate::catalog::{ActorPlacement, JobState};
use crate::sql_catalog::{Catalog as SqlCatalog, CatalogParts};

const SCHEMA: &str = "
CREATE TABLE election_leader (service TEXT PRIMARY KEY, term INTEGER NOT NULL);
CREATE TABLE catalog_version (name TEXT PRIMARY KEY, version INTEGER NOT NULL);
CREATE TABLE catalog_sequence (name TEXT PRIMARY KEY, seq INTEGER NOT NULL);
CREATE TABLE database (name TEXT PRIMARY KEY, database_id INTEGER NOT NULL, definition TEXT NOT NULL);
CREATE TABLE object (oid INTEGER PRIMARY KEY, obj_type TEXT NOT NULL, database_name TEXT NOT NULL,
    schema_name TEXT NOT NULL, name TEXT NOT NULL, definition TEXT NOT NULL);
CREATE TABLE user (name TEXT PRIMARY KEY, user_id INTEGER NOT NULL, definition TEXT NOT NULL);
CREATE TABLE job_definition (name TEXT PRIMARY KEY, definition TEXT NOT NULL);
CREATE TABLE streaming_job (job_id INTEGER PRIMARY KEY, name TEXT NOT NULL, job_status TEXT NOT NULL,
    create_type TEXT NOT NULL, definition TEXT NOT NULL);
CREATE TABLE fragment (fragment_id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, state TEXT NOT NULL);
CREATE TABLE actor (actor_id INTEGER PRIMARY KEY, fragment_id INTEGER NOT NULL, position INTEGER NOT NULL,
    worker_id INTEGER NOT NULL, vnode_bitmap TEXT NOT NULL);
CREATE TABLE worker (worker_id INTEGER PRIMARY KEY, status TEXT NOT NULL, generation INTEGER);
CREATE TABLE sequence (name TEXT NOT NULL, table_id INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (name, table_id));
CREATE TABLE hummock_version_checkpoint (id INTEGER PRIMARY KEY, version TEXT NOT NULL);
CREATE TABLE hummock_version_delta (id INTEGER PRIMARY KEY, prev_id INTEGER NOT NULL,
    max_committed_epoch INTEGER NOT NULL, group_changes TEXT NOT NULL, table_watermarks TEXT NOT NULL);
";

/// A meta store in an SQLite database (in memory for a simulated cluster; [`SqliteStore::save_to`] writes it
/// as a file).
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

fn backend(e: rusqlite::Error) -> MetaStoreError {
    MetaStoreError::Backend(e.to_string())
}

fn corrupt(table: &'static str, e: impl std::fmt::Display) -> MetaStoreError {
    MetaStoreError::Corrupt {
        table,
        reason: e.to_string(),
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("meta's rows serialize: every type has derived or total impls")
}

fn parse<T: DeserializeOwned>(table: &'static str, text: &str) -> Result<T, MetaStoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(table, e))
}

fn int<T: TryFrom<i64>>(table: &'static str, v: i64) -> Result<T, MetaStoreError> {
    T::try_from(v).map_err(|_| corrupt(table, format!("{v} is out of range")))
}

impl SqliteStore {
    /// An empty store in memory.
    pub fn open_in_memory() -> Result<Self, MetaStoreError> {
        let conn = Connection::open_in_memory().map_err(backend)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A store in memory holding `rows` (another store's, to be written as a file).
    pub fn of_rows(rows: &MetaRows) -> Result<Self, MetaStoreError> {
        let store = Self::open_in_memory()?;
        let mut conn = store.conn();
        let tx = conn.transaction().map_err(backend)?;
        exec(
            &tx,
            "INSERT INTO election_leader (service, term) VALUES ('meta', ?1)",
            [rows.term as i64],
        )?;
        // A store holds a checkpoint once it has folded deltas into one: an empty one is no row.
        if rows.hummock_checkpoint != HummockVersion::default() {
            exec(
                &tx,
                "INSERT INTO hummock_version_checkpoint (id, version) VALUES (0, ?1)",
                [json(&rows.hummock_checkpoint)],
            )?;
        }
        let ops = rows_as_ops(rows);
        for op in ops {
            apply(&tx, op)?;
        }
        tx.commit().map_err(backend)?;
        drop(conn);
        Ok(store)
    }
}

/// The commits that write `rows` into an empty store (the checkpoint and term aside).
fn rows_as_ops(rows: &MetaRows) -> Vec<StoreOp> {
    let mut ops = Vec::new();
    if let Some((v, c)) = &rows.catalog {
        ops.push(StoreOp::PutCatalog(*v, c.clone()));
    }
    ops.extend(
        rows.jobs
            .values()
            .map(|j| StoreOp::PutJob(Box::new(j.clone()))),
    );
    ops.extend(rows.fragments.values().cloned().map(StoreOp::PutFragment));
    ops.extend(rows.workers.iter().map(|(w, r)| StoreOp::PutWorker(*w, *r)));
    ops.extend(
        rows.sequences
            .iter()
            .map(|(s, v)| StoreOp::PutSequence(*s, *v)),
    );
    ops.extend(
        rows.hummock_deltas
            .iter()
            .cloned()
            .map(StoreOp::PushHummockDelta),
    );
    ops
}

fn term(tx: &Transaction<'_>) -> Result<u64, MetaStoreError> {
    let t: Option<i64> = tx
        .prepare_cached("SELECT term FROM election_leader WHERE service = 'meta'")
        .and_then(|mut st| st.query_row([], |r| r.get(0)).optional())
        .map_err(backend)?;
    Ok(t.unwrap_or(0) as u64)
}

impl MetaStore for SqliteStore {
    fn claim(&self) -> Result<u64, MetaStoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(backend)?;
        let next = term(&tx)? + 1;
        tx.execute(
            "INSERT OR REPLACE INTO election_leader (service, term) VALUES ('meta', ?1)",
            params![next as i64],
        )
        .map_err(backend)?;
        tx.commit().map_err(backend)?;
        Ok(next)
    }

    fn commit(&self, term_: u64, ops: Vec<StoreOp>) -> Result<(), MetaStoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(backend)?;
        let current = term(&tx)?;
        if term_ != current {
            return Err(MetaStoreError::Fenced {
                term: term_,
                current,
            });
        }
        for op in ops {
            apply(&tx, op)?;
        }
        tx.commit().map_err(backend)
    }

    fn load(&self) -> Result<MetaRows, MetaStoreError> {
        let mut conn = self.conn();
        let tx = conn.transaction().map_err(backend)?;
        let rows = MetaRows {
            catalog: load_catalog(&tx)?,
            jobs: load_jobs(&tx)?,
            fragments: load_fragments(&tx)?,
            workers: load_workers(&tx)?,
            sequences: load_sequences(&tx)?,
            hummock_checkpoint: load_checkpoint(&tx)?,
            hummock_deltas: load_deltas(&tx)?,
            term: term(&tx)?,
        };
        tx.commit().map_err(backend)?;
        Ok(rows)
    }

    /// `VACUUM INTO` a file beside `path`, renamed over it once whole: a reader never sees half a file.
    fn write_sqlite(&self, path: &Path) -> Result<(), MetaStoreError> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".partial");
        let tmp = std::path::PathBuf::from(tmp);
        let io = |e: std::io::Error| MetaStoreError::Backend(format!("{}: {e}", path.display()));
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
        let name = tmp.to_str().ok_or_else(|| {
            MetaStoreError::Backend(format!("{} is not a UTF-8 path", path.display()))
        })?;
        self.conn()
            .execute("VACUUM INTO ?1", params![name])
            .map_err(backend)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

/// One statement, prepared once per connection (an epoch's commit runs the same few).
fn exec(tx: &Transaction<'_>, sql: &str, p: impl rusqlite::Params) -> Result<(), MetaStoreError> {
    let mut stmt = tx.prepare_cached(sql).map_err(backend)?;
    stmt.execute(p).map(drop).map_err(backend)
}

fn apply(tx: &Transaction<'_>, op: StoreOp) -> Result<(), MetaStoreError> {
    match op {
        StoreOp::PutCatalog(version, catalog) => put_catalog(tx, version, &catalog),
        StoreOp::PutJob(row) => exec(
            tx,
            "INSERT OR REPLACE INTO streaming_job (job_id, name, job_status, create_type, definition) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                row.job_id.0,
                row.definition.name,
                job_status(row.job_status),
                create_type(row.create_type),
                json(&row.definition)
            ],
        ),
        StoreOp::DeleteJob(id) => exec(tx, "DELETE FROM streaming_job WHERE job_id = ?1", [id.0]),
        StoreOp::PutFragment(row) => put_fragment(tx, &row),
        StoreOp::DeleteFragment(id) => {
            exec(tx, "DELETE FROM actor WHERE fragment_id = ?1", [id.0])?;
            exec(tx, "DELETE FROM fragment WHERE fragment_id = ?1", [id.0])
        }
        StoreOp::PutWorker(id, row) => {
            let (status, generation) = match row {
                WorkerRow::Running { generation } => ("running", Some(generation as i64)),
                WorkerRow::Removed => ("removed", None),
            };
            exec(
                tx,
                "INSERT OR REPLACE INTO worker (worker_id, status, generation) VALUES (?1, ?2, ?3)",
                params![id.0, status, generation],
            )
        }
        StoreOp::DeleteWorker(id) => exec(tx, "DELETE FROM worker WHERE worker_id = ?1", [id.0]),
        StoreOp::PutSequence(s, v) => {
            let (name, table) = sequence_key(s);
            exec(
                tx,
                "INSERT OR REPLACE INTO sequence (name, table_id, seq) VALUES (?1, ?2, ?3)",
                params![name, table, v as i64],
            )
        }
        StoreOp::PushHummockDelta(d) => push_delta(tx, &d),
    }
}

fn put_catalog(
    tx: &Transaction<'_>,
    version: u64,
    catalog: &SqlCatalog,
) -> Result<(), MetaStoreError> {
    for t in [
        "database",
        "object",
        "user",
        "job_definition",
        "catalog_sequence",
    ] {
        exec(tx, &format!("DELETE FROM {t}"), [])?;
    }
    exec(
        tx,
        "INSERT OR REPLACE INTO catalog_version (name, version) VALUES ('notification', ?1)",
        [version as i64],
    )?;
    let p = catalog.to_parts();
    for (name, db) in &p.databases {
        exec(
            tx,
            "INSERT INTO database (name, database_id, definition) VALUES (?1, ?2, ?3)",
            params![name, db.id, json(db)],
        )?;
    }
    for (id, r) in &p.relations {
        exec(
            tx,
            "INSERT INTO object (oid, obj_type, database_name, schema_name, name, definition) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![id, r.kind.as_str(), r.database, r.schema, r.name, json(r)],
        )?;
    }
    for (id, c) in &p.connections {
        exec(
            tx,
            "INSERT INTO object (oid, obj_type, database_name, schema_name, name, definition) \
             VALUES (?1, 'connection', ?2, ?3, ?4, ?5)",
            params![id, c.database, c.schema, c.name, json(c)],
        )?;
    }
    for (name, u) in &p.users {
        exec(
            tx,
            "INSERT INTO user (name, user_id, definition) VALUES (?1, ?2, ?3)",
            params![name, u.id, json(u)],
        )?;
    }
    for (name, d) in &p.defs {
        exec(
            tx,
            "INSERT INTO job_definition (name, definition) VALUES (?1, ?2)",
            params![name, json(d)],
        )?;
    }
    for (name, v) in [("object_id", p.next_id), ("user_id", p.next_user_id)] {
        exec(
            tx,
            "INSERT INTO catalog_sequence (name, seq) VALUES (?1, ?2)",
            params![name, v],
        )?;
    }
    Ok(())
}

fn put_fragment(tx: &Transaction<'_>, row: &FragmentRow) -> Result<(), MetaStoreError> {
    exec(
        tx,
        "INSERT OR REPLACE INTO fragment (fragment_id, job_id, state) VALUES (?1, ?2, ?3)",
        params![row.fragment_id.0, row.job_id.0, fragment_state(row.state)],
    )?;
    exec(
        tx,
        "DELETE FROM actor WHERE fragment_id = ?1",
        [row.fragment_id.0],
    )?;
    for (position, a) in row.actors.iter().enumerate() {
        exec(
            tx,
            "INSERT INTO actor (actor_id, fragment_id, position, worker_id, vnode_bitmap) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                a.actor_id.0,
                row.fragment_id.0,
                position as i64,
                a.worker.0,
                json(&*a.vnodes)
            ],
        )?;
    }
    Ok(())
}

/// A delta goes in; past [`MAX_STORED_DELTAS`] the older half is folded into the checkpoint, as the memory
/// store does.
fn push_delta(tx: &Transaction<'_>, d: &VersionDelta) -> Result<(), MetaStoreError> {
    // Deltas are consecutive (each one's `prev_id` is the last one's id), so the oldest and newest ids
    // count them without a scan.
    let (lo, hi): (Option<i64>, Option<i64>) = tx
        .prepare_cached(
            // Each in a query of its own: SQLite reads one end of the key then, both together scan it.
            "SELECT (SELECT min(id) FROM hummock_version_delta), \
                    (SELECT max(id) FROM hummock_version_delta)",
        )
        .and_then(|mut st| st.query_row([], |r| Ok((r.get(0)?, r.get(1)?))))
        .map_err(backend)?;
    if let Some(hi) = hi
        && d.id as i64 != hi + 1
    {
        return Err(corrupt(
            "hummock_version_delta",
            format!("delta {} does not follow delta {hi}", d.id),
        ));
    }
    exec(
        tx,
        "INSERT INTO hummock_version_delta \
         (id, prev_id, max_committed_epoch, group_changes, table_watermarks) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            d.id as i64,
            d.prev_id as i64,
            d.max_committed_epoch.0 as i64,
            json(&d.group_changes),
            json(&d.table_watermarks)
        ],
    )?;
    let n = lo.map_or(1, |lo| d.id as i64 - lo + 1);
    if n as usize <= MAX_STORED_DELTAS {
        return Ok(());
    }
    let mut version = load_checkpoint(tx)?;
    let deltas = load_deltas(tx)?;
    let folded = &deltas[..MAX_STORED_DELTAS / 2];
    for d in folded {
        version.apply(d);
    }
    exec(
        tx,
        "DELETE FROM hummock_version_delta WHERE id <= ?1",
        [folded[folded.len() - 1].id as i64],
    )?;
    exec(
        tx,
        "INSERT OR REPLACE INTO hummock_version_checkpoint (id, version) VALUES (0, ?1)",
        [json(&version)],
    )
}

fn job_status(s: JobState) -> &'static str {
    match s {
        JobState::Creating => "CREATING",
        JobState::Created => "CREATED",
    }
}

fn create_type(t: CreateType) -> &'static str {
    match t {
        CreateType::Foreground => "FOREGROUND",
        CreateType::Background => "BACKGROUND",
    }
}

fn fragment_state(s: FragmentState) -> &'static str {
    match s {
        FragmentState::Initial => "INITIAL",
        FragmentState::Creating => "CREATING",
        FragmentState::Created => "CREATED",
    }
}

fn sequence_key(s: Sequence) -> (&'static str, u32) {
    match s {
        Sequence::Table => ("table", 0),
        Sequence::Fragment => ("fragment", 0),
        Sequence::Actor => ("actor", 0),
        Sequence::Generation => ("generation", 0),
        Sequence::LastAllocatedGeneration => ("last_allocated_generation", 0),
        Sequence::RowId(t) => ("row_id", t.0),
        Sequence::EpochHighWater => ("epoch_high_water", 0),
    }
}

fn sequence_of(name: &str, table: u32) -> Option<Sequence> {
    Some(match name {
        "table" => Sequence::Table,
        "fragment" => Sequence::Fragment,
        "actor" => Sequence::Actor,
        "generation" => Sequence::Generation,
        "last_allocated_generation" => Sequence::LastAllocatedGeneration,
        "row_id" => Sequence::RowId(TableId(table)),
        "epoch_high_water" => Sequence::EpochHighWater,
        _ => return None,
    })
}

/// Every row of `sql` (which orders them), each through `f`.
fn rows<T>(
    tx: &Transaction<'_>,
    sql: &str,
    mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<T, MetaStoreError>,
) -> Result<Vec<T>, MetaStoreError> {
    let mut stmt = tx.prepare(sql).map_err(backend)?;
    let mut it = stmt.query([]).map_err(backend)?;
    let mut out = Vec::new();
    while let Some(row) = it.next().map_err(backend)? {
        out.push(f(row)?);
    }
    Ok(out)
}

fn col<T: rusqlite::types::FromSql>(r: &rusqlite::Row<'_>, i: usize) -> Result<T, MetaStoreError> {
    r.get(i).map_err(backend)
}

/// The rows of `table`, a name and its JSON definition each, by name.
fn named<T: DeserializeOwned>(
    tx: &Transaction<'_>,
    table: &'static str,
) -> Result<Vec<(String, T)>, MetaStoreError> {
    let sql = format!("SELECT name, definition FROM {table} ORDER BY name");
    rows(tx, &sql, |r| {
        let name = col::<String>(r, 0)?;
        Ok((name, parse(table, &col::<String>(r, 1)?)?))
    })
}

fn load_catalog(tx: &Transaction<'_>) -> Result<Option<(u64, Arc<SqlCatalog>)>, MetaStoreError> {
    let version: Option<i64> = tx
        .query_row(
            "SELECT version FROM catalog_version WHERE name = 'notification'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(backend)?;
    let Some(version) = version else {
        return Ok(None);
    };
    let databases = named(tx, "database")?;
    let users = named(tx, "user")?;
    let defs = named(tx, "job_definition")?;
    let mut parts = CatalogParts {
        databases,
        users,
        defs,
        ..CatalogParts::default()
    };
    let objects = rows(
        tx,
        "SELECT oid, obj_type, definition FROM object ORDER BY oid",
        |r| {
            Ok((
                col::<u32>(r, 0)?,
                col::<String>(r, 1)?,
                col::<String>(r, 2)?,
            ))
        },
    )?;
    for (oid, ty, def) in objects {
        if ty == "connection" {
            parts.connections.push((oid, parse("object", &def)?));
        } else {
            parts.relations.push((oid, parse("object", &def)?));
        }
    }
    let seqs = rows(
        tx,
        "SELECT name, seq FROM catalog_sequence ORDER BY name",
        |r| Ok((col::<String>(r, 0)?, col::<i64>(r, 1)?)),
    )?;
    for (name, v) in seqs {
        match name.as_str() {
            "object_id" => parts.next_id = int("catalog_sequence", v)?,
            "user_id" => parts.next_user_id = int("catalog_sequence", v)?,
            other => return Err(corrupt("catalog_sequence", format!("no sequence {other}"))),
        }
    }
    let version = version as u64;
    Ok(Some((version, Arc::new(SqlCatalog::from_parts(parts)))))
}

fn load_jobs(
    tx: &Transaction<'_>,
) -> Result<std::collections::BTreeMap<TableId, StreamingJobRow>, MetaStoreError> {
    let t = "streaming_job";
    rows(
        tx,
        "SELECT job_id, job_status, create_type, definition FROM streaming_job ORDER BY job_id",
        |r| {
            let job_id = TableId(col(r, 0)?);
            let job_status = match col::<String>(r, 1)?.as_str() {
                "CREATING" => JobState::Creating,
                "CREATED" => JobState::Created,
                s => return Err(corrupt(t, format!("job status {s}"))),
            };
            let create_type = match col::<String>(r, 2)?.as_str() {
                "FOREGROUND" => CreateType::Foreground,
                "BACKGROUND" => CreateType::Background,
                s => return Err(corrupt(t, format!("create type {s}"))),
            };
            let definition = parse(t, &col::<String>(r, 3)?)?;
            let row = StreamingJobRow {
                job_id,
                job_status,
                create_type,
                definition,
            };
            Ok((job_id, row))
        },
    )
    .map(|v| v.into_iter().collect())
}

fn load_fragments(
    tx: &Transaction<'_>,
) -> Result<std::collections::BTreeMap<FragmentId, FragmentRow>, MetaStoreError> {
    let mut fragments: std::collections::BTreeMap<FragmentId, FragmentRow> = rows(
        tx,
        "SELECT fragment_id, job_id, state FROM fragment ORDER BY fragment_id",
        |r| {
            let state = match col::<String>(r, 2)?.as_str() {
                "INITIAL" => FragmentState::Initial,
                "CREATING" => FragmentState::Creating,
                "CREATED" => FragmentState::Created,
                s => return Err(corrupt("fragment", format!("state {s}"))),
            };
            let row = FragmentRow {
                fragment_id: FragmentId(col(r, 0)?),
                job_id: TableId(col(r, 1)?),
                state,
                actors: Vec::new(),
            };
            Ok((row.fragment_id, row))
        },
    )?
    .into_iter()
    .collect();
    let actors = rows(
        tx,
        "SELECT fragment_id, actor_id, worker_id, vnode_bitmap FROM actor \
         ORDER BY fragment_id, position",
        |r| {
            let placement = ActorPlacement {
                actor_id: ActorId(col(r, 1)?),
                worker: WorkerId(col(r, 2)?),
                vnodes: Arc::new(parse("actor", &col::<String>(r, 3)?)?),
            };
            Ok((FragmentId(col(r, 0)?), placement))
        },
    )?;
    for (f, a) in actors {
        fragments
            .get_mut(&f)
            .ok_or_else(|| corrupt("actor", format!("actor {} of no fragment {f}", a.actor_id)))?
            .actors
            .push(a);
    }
    Ok(fragments)
}

fn load_workers(
    tx: &Transaction<'_>,
) -> Result<std::collections::BTreeMap<WorkerId, WorkerRow>, MetaStoreError> {
    rows(
        tx,
        "SELECT worker_id, status, generation FROM worker ORDER BY worker_id",
        |r| {
            let row = match (col::<String>(r, 1)?.as_str(), col::<Option<i64>>(r, 2)?) {
                ("running", Some(g)) => WorkerRow::Running {
                    generation: g as u64,
                },
                ("removed", None) => WorkerRow::Removed,
                (s, g) => return Err(corrupt("worker", format!("status {s} at {g:?}"))),
            };
            Ok((WorkerId(col(r, 0)?), row))
        },
    )
    .map(|v| v.into_iter().collect())
}

fn load_sequences(
    tx: &Transaction<'_>,
) -> Result<std::collections::BTreeMap<Sequence, u64>, MetaStoreError> {
    rows(
        tx,
        "SELECT name, table_id, seq FROM sequence ORDER BY name, table_id",
        |r| {
            let (name, table) = (col::<String>(r, 0)?, col::<u32>(r, 1)?);
            let s = sequence_of(&name, table)
                .ok_or_else(|| corrupt("sequence", format!("no sequence {name}")))?;
            Ok((s, col::<i64>(r, 2)? as u64))
        },
    )
    .map(|v| v.into_iter().collect())
}

fn load_checkpoint(tx: &Transaction<'_>) -> Result<HummockVersion, MetaStoreError> {
    let v: Option<String> = tx
        .query_row(
            "SELECT version FROM hummock_version_checkpoint WHERE id = 0",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(backend)?;
    v.map_or(Ok(HummockVersion::default()), |v| {
        parse("hummock_version_checkpoint", &v)
    })
}

fn load_deltas(tx: &Transaction<'_>) -> Result<Vec<Arc<VersionDelta>>, MetaStoreError> {
    let t = "hummock_version_delta";
    // u64s are stored as i64s bit for bit (an epoch above 2^63 reads back unchanged).
    rows(
        tx,
        "SELECT id, prev_id, max_committed_epoch, group_changes, table_watermarks \
         FROM hummock_version_delta \
         ORDER BY id",
        |r| {
            Ok(Arc::new(VersionDelta {
                id: col::<i64>(r, 0)? as u64,
                prev_id: col::<i64>(r, 1)? as u64,
                max_committed_epoch: epochlab_common::Epoch(col::<i64>(r, 2)? as u64),
                group_changes: parse(t, &col::<String>(r, 3)?)?,
                table_watermarks: parse(t, &col::<String>(r, 4)?)?,
            }))
        },
    )
}
