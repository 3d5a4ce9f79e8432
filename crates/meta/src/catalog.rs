//! The catalog: relations (tables, materialized views, sinks), each one streaming job. A job's first
//! fragment (its root: the `Materialize`, or a sink's backfill) is `Relation::actors`; a job built from a
//! fragment graph keeps the graph's other fragments, their actors and the edges between them in
//! `Relation::graph`, and every actor's plan is instantiated from the stored trees (at creation and at each
//! recovery alike).

use std::collections::BTreeMap;
use std::sync::Arc;

use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{
    ActorMapping, ConflictBehavior, DispatchStrategy, DispatcherDesc, DispatcherKind, SinkDesc,
    StreamActorDesc, StreamFragmentEdge, StreamNode,
};
use epochlab_common::{ActorId, Bitmap, DataType, FragmentId, TableId, WorkerId};
use serde::{Deserialize, Serialize};

/// Rows per arrangement-backfill snapshot chunk at most (RisingWave's `stream_chunk_size`).
pub const BACKFILL_CHUNK_SIZE: usize = 256;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelationKind {
    Table,
    MaterializedView,
    Sink,
}

impl RelationKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::MaterializedView => "materialized view",
            RelationKind::Sink => "sink",
        }
    }
}

pub use epochlab_common::plan::StreamScanType;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Its creating barrier has not been collected yet.
    Creating,
    Created,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ActorPlacement {
    pub actor_id: ActorId,
    pub worker: WorkerId,
    pub vnodes: Arc<Bitmap>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Relation {
    pub id: TableId,
    pub name: String,
    pub kind: RelationKind,
    /// The relation's own table (tables and views); its output schema in any case.
    pub desc: Arc<TableDesc>,
    pub upstream: Option<TableId>,
    pub state: JobState,
    /// RisingWave's `TableFragments` state `Initial`: the job's fragments are in meta, but its Add barrier has
    /// not been collected (the post-collect of `CreateStreamingJob` clears it, where RisingWave's
    /// `post_create_table_fragments` moves the fragments to `Creating`). Recovery drops such a job even when it
    /// is a background one (RisingWave's `CatalogManager::clean_dirty_tables`, case 3), and a create that fails
    /// cleans it up itself only while it is set (`DdlController::create_streaming_job_inner`).
    pub fragments_initial: bool,
    pub fragment_id: FragmentId,
    pub actors: Vec<ActorPlacement>,
    pub sink: Option<SinkDesc>,
    /// Backfill: snapshot rows per second per actor.
    pub rate_limit: Option<u32>,
    /// A sink's limit on all rows it writes, per second per actor.
    pub sink_rate_limit: Option<u32>,
    /// The backfill's progress table (views and sinks).
    pub progress_table: Option<Arc<TableDesc>>,
    /// How a view or sink reads its upstream; a no-shuffle job's actor `i` has the vnodes and the worker of
    /// its upstream's actor `i`.
    pub scan_type: StreamScanType,
    /// Created in the background: DDL returned before the backfill finished, and the job survives recovery.
    pub background: bool,
    /// A sink's own fragment, fed by the backfill fragment (`actors`) through a hash exchange: the sink's
    /// pace reaches the backfill only through the exchange's permits, as in RisingWave.
    pub sink_fragment: Option<Fragment>,
    /// The job's plan: a materialized view's fragment graph (`MetaNode::create_streaming_job`), or a table's
    /// one fragment (its DML entry, materialized with its conflict behavior): the root's tree and the other
    /// fragments. `None`: a sink, planned by kind.
    pub graph: Option<JobGraph>,
}

/// A job's fragment graph as meta keeps it: each fragment's tree as planned (`Exchange` leaves where an edge
/// enters; each `StreamScan` with its progress table), the global ids and actors of the fragments other than
/// the root, and the edges (by local id).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct JobGraph {
    /// Local id of the root fragment (its actors are `Relation::actors`).
    pub root: u32,
    pub root_node: StreamNode,
    pub fragments: Vec<GraphFragment>,
    pub edges: Vec<StreamFragmentEdge>,
    /// The root fragment is a singleton (`FragmentDistribution::Single`).
    #[serde(default)]
    pub root_single: bool,
}

/// A fragment of a graph job other than its root.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct GraphFragment {
    pub local_id: u32,
    pub fragment_id: FragmentId,
    pub actors: Vec<ActorPlacement>,
    pub node: StreamNode,
    /// Planned `FragmentDistribution::Single`.
    #[serde(default)]
    pub single: bool,
}

/// One fragment of a job as `rw_fragments` lists it (RisingWave's `FragmentDistribution`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FragmentInfo {
    pub fragment_id: FragmentId,
    /// A singleton (`SINGLE`), or hash-distributed (`HASH`).
    pub single: bool,
    /// The state tables its executors write (its materialized view's, progress and internal tables).
    pub state_tables: Vec<TableId>,
    /// The fragments its merges read.
    pub upstream_fragments: Vec<FragmentId>,
    /// RisingWave's `FragmentTypeFlag` names of its nodes (`MVIEW`, `DML`, `STREAM_SCAN`, ..).
    pub flags: Vec<&'static str>,
    /// Its actors.
    pub parallelism: usize,
}

/// RisingWave's `FragmentTypeFlag` of a node, in the flags' bit order.
fn fragment_flag(node: &StreamNode) -> Option<(u32, &'static str)> {
    Some(match node {
        StreamNode::Source { .. } => (1, "SOURCE"),
        StreamNode::Materialize { .. } => (2, "MVIEW"),
        StreamNode::Sink { .. } => (4, "SINK"),
        StreamNode::Now { .. } => (8, "NOW"),
        StreamNode::StreamScan { .. } => (16, "STREAM_SCAN"),
        StreamNode::Values { .. } => (64, "VALUES"),
        StreamNode::Dml { .. } => (128, "DML"),
        _ => return None,
    })
}

/// What `rw_fragments` lists of a fragment whose actor trees are `nodes`.
fn fragment_info(fragment_id: FragmentId, single: bool, nodes: &[&StreamNode]) -> FragmentInfo {
    let walk = nodes[0].walk();
    let mut flags: Vec<(u32, &'static str)> =
        walk.iter().filter_map(|n| fragment_flag(n)).collect();
    flags.sort();
    flags.dedup();
    let mut state_tables: Vec<TableId> = walk
        .iter()
        .flat_map(|n| match n {
            StreamNode::Materialize { table, .. } => vec![table.table_id],
            StreamNode::StreamScan { state_table, .. } => vec![state_table.table_id],
            other => other.internal_tables().iter().map(|t| t.table_id).collect(),
        })
        .collect();
    state_tables.sort();
    state_tables.dedup();
    let mut upstream_fragments: Vec<FragmentId> = walk
        .iter()
        .filter_map(|n| match n {
            StreamNode::Merge {
                upstream_fragment, ..
            } => Some(*upstream_fragment),
            _ => None,
        })
        .collect();
    upstream_fragments.sort();
    upstream_fragments.dedup();
    FragmentInfo {
        fragment_id,
        single,
        state_tables,
        upstream_fragments,
        flags: flags.into_iter().map(|(_, f)| f).collect(),
        parallelism: nodes.len(),
    }
}

/// Where a job reads an existing table: the fragment holding the `StreamScan` and how it reads.
#[derive(Clone, Debug)]
pub struct ScanSite<'a> {
    pub upstream: TableId,
    pub scan_type: StreamScanType,
    pub fragment_id: FragmentId,
    pub actors: &'a [ActorPlacement],
}

/// The `StreamScan`s of a tree: (upstream table, scan type, progress table).
fn scans_in(node: &StreamNode) -> Vec<(TableId, StreamScanType, Arc<TableDesc>)> {
    node.walk()
        .into_iter()
        .filter_map(|n| match n {
            StreamNode::StreamScan {
                upstream_table,
                state_table,
                scan_type,
                ..
            } => Some((upstream_table.table_id, *scan_type, state_table.clone())),
            _ => None,
        })
        .collect()
}

/// Whether a tree's actors report creation progress (a backfill, or a values source).
fn reports_progress(node: &StreamNode) -> bool {
    node.walk()
        .iter()
        .any(|n| matches!(n, StreamNode::StreamScan { .. } | StreamNode::Values { .. }))
}

/// What a job's backfill of one table is, whatever its actor: see `StreamNode::StreamScan`.
struct ScanSpec {
    scan_type: StreamScanType,
    up_id: TableId,
    output_indices: Vec<usize>,
    state_table: Arc<TableDesc>,
    chunk_size: usize,
}

/// A fragment of a job other than its first: its id and its actors.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Fragment {
    pub fragment_id: FragmentId,
    pub actors: Vec<ActorPlacement>,
}

impl Relation {
    /// Every state table of the job (registered in storage while the job exists).
    pub fn state_tables(&self) -> Vec<TableId> {
        let mut t = Vec::new();
        if self.kind != RelationKind::Sink {
            t.push(self.id);
        }
        t.extend(self.progress_tables().iter().map(|d| d.table_id));
        t.extend(self.internal_tables().iter().map(|d| d.table_id));
        t
    }

    /// The internal state tables of the job's stateful executors (aggregations' result, materialized-input
    /// and dedup tables), in plan order.
    pub fn internal_tables(&self) -> Vec<Arc<TableDesc>> {
        let Some(g) = &self.graph else {
            return Vec::new();
        };
        std::iter::once(&g.root_node)
            .chain(g.fragments.iter().map(|f| &f.node))
            .flat_map(|n| n.walk())
            .flat_map(|n| n.internal_tables().into_iter().cloned())
            .collect()
    }

    /// The backfill progress tables of every `StreamScan` of the job.
    pub fn progress_tables(&self) -> Vec<Arc<TableDesc>> {
        match &self.graph {
            None => self.progress_table.iter().cloned().collect(),
            Some(g) => std::iter::once(&g.root_node)
                .chain(g.fragments.iter().map(|f| &f.node))
                .flat_map(scans_in)
                .map(|(_, _, t)| t)
                .collect(),
        }
    }

    /// Every fragment of the job: (local id in its graph, global id, actors, planned tree). A job planned by
    /// kind has one (local id 0, tree `None`), and a sink's fragment after it.
    fn fragments(&self) -> Vec<(u32, FragmentId, &[ActorPlacement], Option<&StreamNode>)> {
        let root_local = self.graph.as_ref().map_or(0, |g| g.root);
        let root_node = self.graph.as_ref().map(|g| &g.root_node);
        let mut out = vec![(root_local, self.fragment_id, &self.actors[..], root_node)];
        if let Some(g) = &self.graph {
            for f in &g.fragments {
                out.push((f.local_id, f.fragment_id, &f.actors[..], Some(&f.node)));
            }
        }
        out
    }

    /// Every place the job reads an existing table.
    pub fn scan_sites(&self) -> Vec<ScanSite<'_>> {
        if self.graph.is_none() {
            return self
                .upstream
                .iter()
                .map(|&upstream| ScanSite {
                    upstream,
                    scan_type: self.scan_type,
                    fragment_id: self.fragment_id,
                    actors: &self.actors,
                })
                .collect();
        }
        let mut out = Vec::new();
        for (_, fragment_id, actors, node) in self.fragments() {
            for (upstream, scan_type, _) in node.map(scans_in).unwrap_or_default() {
                out.push(ScanSite {
                    upstream,
                    scan_type,
                    fragment_id,
                    actors,
                });
            }
        }
        out
    }

    /// Every table the job reads, each once.
    pub fn upstream_tables(&self) -> Vec<TableId> {
        let mut t: Vec<TableId> = self.scan_sites().iter().map(|s| s.upstream).collect();
        t.sort();
        t.dedup();
        t
    }

    /// The actors whose progress reports decide when the job is created: a sink's first fragment; a graph
    /// job's fragments with a backfill or a values source (none for a table).
    pub fn progress_actors(&self) -> std::collections::BTreeSet<ActorId> {
        match &self.graph {
            None if self.kind == RelationKind::Table => Default::default(),
            None => self.actors.iter().map(|a| a.actor_id).collect(),
            Some(_) => self
                .fragments()
                .into_iter()
                .filter(|(_, _, _, node)| node.is_some_and(reports_progress))
                .flat_map(|(_, _, actors, _)| actors.iter().map(|a| a.actor_id))
                .collect(),
        }
    }

    /// The global id and the actors of the graph fragment `local`.
    pub fn fragment_by_local(&self, local: u32) -> (FragmentId, &[ActorPlacement]) {
        self.fragments()
            .into_iter()
            .find(|(l, ..)| *l == local)
            .map(|(_, id, actors, _)| (id, actors))
            .unwrap_or_else(|| panic!("{} has no fragment {local}", self.name))
    }

    /// The dispatcher actor `i` of an edge's upstream fragment uses towards its downstream fragment.
    pub fn edge_dispatcher(&self, edge: &StreamFragmentEdge, i: usize) -> DispatcherDesc {
        let (fragment_id, actors) = self.fragment_by_local(edge.downstream);
        let all = actors.iter().map(|a| a.actor_id).collect();
        let (kind, downstream_actors) = match &edge.dispatch {
            DispatchStrategy::Hash(keys) => (
                DispatcherKind::Hash {
                    dist_key_indices: keys.clone(),
                    mapping: mapping_of(actors),
                    vnode_count: self.desc.vnode_count,
                    // A table's DML fragment sends rows of the table's columns.
                    row_id_key: self.kind == RelationKind::Table
                        && is_row_id_key(&self.desc.column_types, keys),
                },
                all,
            ),
            // A simple dispatch has one downstream actor: a broadcast to it.
            DispatchStrategy::Simple | DispatchStrategy::Broadcast => {
                (DispatcherKind::Broadcast, all)
            }
            DispatchStrategy::NoShuffle => (DispatcherKind::NoShuffle, vec![actors[i].actor_id]),
        };
        DispatcherDesc {
            downstream_fragment: fragment_id,
            kind,
            downstream_actors,
        }
    }

    /// Whether the job has fragments beside its first (and a sink's own): those move whole at a scale-in
    /// and cannot be rescheduled yet.
    pub fn has_graph_fragments(&self) -> bool {
        self.graph.as_ref().is_some_and(|g| !g.fragments.is_empty())
    }

    /// vnode → actor of the first fragment.
    pub fn mapping(&self) -> Arc<ActorMapping> {
        mapping_of(&self.actors)
    }

    /// The actors a table's DML goes to, those of the fragment holding its DML entry, and their vnode
    /// mapping; `None` for a job without one.
    pub fn dml_actors(&self) -> Option<(&[ActorPlacement], Arc<ActorMapping>)> {
        let dml = self
            .graph
            .iter()
            .flat_map(|g| g.fragments.iter())
            .find(|f| {
                f.node
                    .walk()
                    .iter()
                    .any(|n| matches!(n, StreamNode::Dml { .. }))
            });
        dml.map(|f| (&f.actors[..], mapping_of(&f.actors)))
    }

    /// Every actor of the job, of every fragment.
    pub fn all_actors(&self) -> impl Iterator<Item = &ActorPlacement> {
        let sink = self.sink_fragment.iter().flat_map(|f| f.actors.iter());
        let graph = self
            .graph
            .iter()
            .flat_map(|g| g.fragments.iter().flat_map(|f| f.actors.iter()));
        self.actors.iter().chain(graph).chain(sink)
    }

    pub fn all_actors_mut(&mut self) -> impl Iterator<Item = &mut ActorPlacement> {
        let sink = self
            .sink_fragment
            .iter_mut()
            .flat_map(|f| f.actors.iter_mut());
        let graph = self
            .graph
            .iter_mut()
            .flat_map(|g| g.fragments.iter_mut().flat_map(|f| f.actors.iter_mut()));
        self.actors.iter_mut().chain(graph).chain(sink)
    }

    /// The dispatchers upstream actor `i` of `upstream` uses towards this job, one per fragment that scans
    /// it: a hash dispatcher to every actor of the fragment, or (no-shuffle backfill) a `NoShuffle` one to
    /// the fragment's actor `i`.
    pub fn dispatchers_from(&self, upstream: &Relation, i: usize) -> Vec<DispatcherDesc> {
        self.scan_sites()
            .into_iter()
            .filter(|s| s.upstream == upstream.id)
            .map(|s| match s.scan_type {
                StreamScanType::Backfill | StreamScanType::UpstreamOnly => DispatcherDesc {
                    downstream_fragment: s.fragment_id,
                    kind: DispatcherKind::NoShuffle,
                    downstream_actors: vec![s.actors[i].actor_id],
                },
                StreamScanType::ArrangementBackfill => DispatcherDesc {
                    downstream_fragment: s.fragment_id,
                    kind: DispatcherKind::Hash {
                        dist_key_indices: upstream.desc.dist_key_indices(),
                        mapping: mapping_of(s.actors),
                        vnode_count: self.desc.vnode_count,
                        row_id_key: is_row_id_key(
                            &upstream.desc.column_types,
                            &upstream.desc.dist_key_indices(),
                        ),
                    },
                    downstream_actors: s.actors.iter().map(|a| a.actor_id).collect(),
                },
            })
            .collect()
    }
}

/// Whether a hash key over columns of `types` is one row id (`serial`) column.
fn is_row_id_key(types: &[DataType], keys: &[usize]) -> bool {
    matches!(keys, [k] if types.get(*k) == Some(&DataType::Serial))
}

/// vnode → actor of a fragment's actors.
fn mapping_of(actors: &[ActorPlacement]) -> Arc<ActorMapping> {
    let bitmaps: Vec<(ActorId, Arc<Bitmap>)> = actors
        .iter()
        .map(|a| (a.actor_id, a.vnodes.clone()))
        .collect();
    Arc::new(ActorMapping::from_bitmaps(&bitmaps))
}

#[derive(Default, Debug)]
pub struct Catalog {
    pub relations: BTreeMap<TableId, Relation>,
}

impl Catalog {
    pub fn get(&self, id: TableId) -> Option<&Relation> {
        self.relations.get(&id)
    }

    pub fn downstreams(&self, id: TableId) -> impl Iterator<Item = &Relation> {
        self.relations
            .values()
            .filter(move |r| r.upstream_tables().contains(&id))
    }

    /// Every state table of every relation in the catalog.
    pub fn state_tables(&self) -> Vec<TableId> {
        self.relations
            .values()
            .flat_map(Relation::state_tables)
            .collect()
    }

    /// The backfill of `rel`'s actor `i` over its upstream (a job planned by kind).
    fn backfill_node(&self, rel: &Relation, i: usize) -> StreamNode {
        let up_id = rel.upstream.expect("a job over a table has an upstream");
        let state_table = rel
            .progress_table
            .clone()
            .expect("a job over a table has a progress table");
        // A job planned by kind copies its upstream's columns as they were at its creation.
        let output_indices = (0..rel.desc.column_types.len()).collect();
        let scan = ScanSpec {
            scan_type: rel.scan_type,
            up_id,
            output_indices,
            state_table,
            chunk_size: BACKFILL_CHUNK_SIZE,
        };
        self.scan_node(rel, scan, i)
    }

    /// The backfill of actor `i` of a fragment over table `up_id` (arrangement backfill over a merge of every
    /// upstream actor, or no-shuffle backfill over upstream actor `i`) under the job's rate limit. Where that
    /// limit holds rows (a flow-control executor after it, or the backfill's own reads) is the compute node's
    /// choice, as in RisingWave (`BackfillRateLimit` in the stream crate's builder).
    fn scan_node(&self, rel: &Relation, scan: ScanSpec, i: usize) -> StreamNode {
        let ScanSpec {
            scan_type,
            up_id,
            output_indices,
            state_table,
            chunk_size,
        } = scan;
        // A job enters the catalog only while its upstream is there, and a drop refuses a table with
        // dependents (`MetaNode::create_job`, `remove_from_catalog`).
        let up = self.relations.get(&up_id).unwrap_or_else(|| {
            panic!(
                "the upstream {up_id} of {} {} is not in the catalog",
                rel.kind.as_str(),
                rel.name
            )
        });
        let upstream_actors = match scan_type {
            StreamScanType::ArrangementBackfill => up.actors.iter().map(|a| a.actor_id).collect(),
            StreamScanType::Backfill | StreamScanType::UpstreamOnly => vec![up.actors[i].actor_id],
        };
        StreamNode::StreamScan {
            scan_type,
            upstream_table: up.desc.clone(),
            output_indices,
            state_table,
            rate_limit: rel.rate_limit,
            chunk_size,
            input: Box::new(StreamNode::Merge {
                upstream_fragment: up.fragment_id,
                upstream_actors,
            }),
        }
    }

    /// Actor `i`'s tree of the graph fragment `local` of `rel`, from its planned tree `node`: each `Exchange`
    /// becomes a merge of the upstream fragment's actors (the one with the same index over a no-shuffle
    /// edge), each `StreamScan` reads its table's actors under the job's current rate limit.
    fn instantiate(&self, rel: &Relation, local: u32, node: &StreamNode, i: usize) -> StreamNode {
        match node {
            StreamNode::Exchange { upstream } => {
                let g = rel.graph.as_ref().expect("an Exchange is in a graph job");
                let edge = g
                    .edges
                    .iter()
                    .find(|e| e.upstream == *upstream && e.downstream == local)
                    .expect("every Exchange has its edge (checked at creation)");
                let (fragment_id, actors) = rel.fragment_by_local(*upstream);
                let upstream_actors = match edge.dispatch {
                    DispatchStrategy::NoShuffle => vec![actors[i].actor_id],
                    _ => actors.iter().map(|a| a.actor_id).collect(),
                };
                StreamNode::Merge {
                    upstream_fragment: fragment_id,
                    upstream_actors,
                }
            }
            StreamNode::StreamScan {
                scan_type,
                upstream_table,
                output_indices,
                state_table,
                chunk_size,
                ..
            } => {
                // A job stored before scans had output columns read its upstream as it was planned.
                let output_indices = match output_indices.is_empty() {
                    true => (0..upstream_table.column_types.len()).collect(),
                    false => output_indices.clone(),
                };
                let scan = ScanSpec {
                    scan_type: *scan_type,
                    up_id: upstream_table.table_id,
                    output_indices,
                    state_table: state_table.clone(),
                    chunk_size: *chunk_size,
                };
                self.scan_node(rel, scan, i)
            }
            _ => {
                let mut out = node.clone();
                for (child, planned) in out.inputs_mut().into_iter().zip(node.inputs()) {
                    *child = self.instantiate(rel, local, planned, i);
                }
                out
            }
        }
    }

    /// The executor tree of actor `i` of `rel`'s first fragment.
    pub fn node_of(&self, rel: &Relation, i: usize) -> StreamNode {
        if let Some(g) = &rel.graph {
            return self.instantiate(rel, g.root, &g.root_node, i);
        }
        match rel.kind {
            RelationKind::Table => unreachable!("table {} is planned with its fragments", rel.id),
            RelationKind::MaterializedView => StreamNode::Materialize {
                table: rel.desc.clone(),
                conflict: ConflictBehavior::NoCheck,
                input: Box::new(self.backfill_node(rel, i)),
            },
            RelationKind::Sink => self.backfill_node(rel, i),
        }
    }

    /// The executor tree of a sink actor: a merge of its one backfill actor (no shuffle: both fragments
    /// split the vnodes alike), then the sink.
    fn sink_node(rel: &Relation, upstream_actor: ActorId) -> StreamNode {
        let merge = StreamNode::Merge {
            upstream_fragment: rel.fragment_id,
            upstream_actors: vec![upstream_actor],
        };
        let input = match rel.sink_rate_limit {
            Some(limit) => StreamNode::FlowControl {
                rate_limit: Some(limit),
                input: Box::new(merge),
            },
            None => merge,
        };
        StreamNode::Sink {
            sink: rel.sink.clone().expect("a sink has a sink description"),
            input: Box::new(input),
        }
    }

    /// Every fragment of `rel` as `rw_fragments` lists it, in the order of [`Catalog::actor_descs`].
    pub fn fragment_infos(&self, rel: &Relation) -> Vec<FragmentInfo> {
        let descs = self.actor_descs(rel);
        let mut order: Vec<FragmentId> = Vec::new();
        for d in &descs {
            if !order.contains(&d.fragment_id) {
                order.push(d.fragment_id);
            }
        }
        let single = |id: FragmentId| match &rel.graph {
            Some(g) if id == rel.fragment_id => g.root_single,
            Some(g) => g.fragments.iter().any(|f| f.fragment_id == id && f.single),
            None => false,
        };
        order
            .into_iter()
            .map(|id| {
                let nodes: Vec<&StreamNode> = descs
                    .iter()
                    .filter(|d| d.fragment_id == id)
                    .map(|d| &d.node)
                    .collect();
                fragment_info(id, single(id), &nodes)
            })
            .collect()
    }

    /// Plans of `rel`'s actors, of every fragment, with dispatchers towards every downstream job in the
    /// catalog (a job being created gets its upstream's dispatchers by its Add barrier instead: build it
    /// before adding it here). A sink's backfill actor `i` feeds its sink actor `i` without a shuffle.
    pub fn actor_descs(&self, rel: &Relation) -> Vec<StreamActorDesc> {
        let dispatchers = |i: usize| -> Vec<DispatcherDesc> {
            self.downstreams(rel.id)
                .flat_map(|d| d.dispatchers_from(rel, i))
                .collect()
        };
        let desc = |a: &ActorPlacement, fragment_id, node: StreamNode, d: Vec<DispatcherDesc>| {
            StreamActorDesc {
                actor_id: a.actor_id,
                fragment_id,
                job_id: rel.id,
                vnodes: a.vnodes.clone(),
                node,
                dispatchers: d,
            }
        };
        let mut out = Vec::new();
        for (i, a) in rel.actors.iter().enumerate() {
            let mut d = dispatchers(i);
            if let Some(f) = &rel.sink_fragment {
                d.push(DispatcherDesc {
                    downstream_fragment: f.fragment_id,
                    kind: DispatcherKind::NoShuffle,
                    downstream_actors: vec![f.actors[i].actor_id],
                });
            }
            out.push(desc(a, rel.fragment_id, self.node_of(rel, i), d));
        }
        if let Some(g) = &rel.graph {
            for f in &g.fragments {
                for (i, a) in f.actors.iter().enumerate() {
                    let node = self.instantiate(rel, f.local_id, &f.node, i);
                    let d = g
                        .edges
                        .iter()
                        .filter(|e| e.upstream == f.local_id)
                        .map(|e| rel.edge_dispatcher(e, i))
                        .collect();
                    out.push(desc(a, f.fragment_id, node, d));
                }
            }
        }
        if let Some(f) = &rel.sink_fragment {
            for (a, up) in f.actors.iter().zip(&rel.actors) {
                let sink = Self::sink_node(rel, up.actor_id);
                out.push(desc(a, f.fragment_id, sink, Vec::new()));
            }
        }
        out
    }
}
