//! The catalog: relations (tables, materialized views, sinks), each one streaming job with one fragment whose
//! actors split the vnodes among them.

use std::collections::BTreeMap;
use std::sync::Arc;

use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{
    ActorMapping, DispatcherDesc, DispatcherKind, SinkDesc, StreamActorDesc, StreamNode,
};
use epochlab_common::{ActorId, Bitmap, FragmentId, TableId, WorkerId};

/// Rows per arrangement-backfill snapshot chunk at most (RisingWave's `stream_chunk_size`).
pub const BACKFILL_CHUNK_SIZE: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobState {
    /// Its creating barrier has not been collected yet.
    Creating,
    Created,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActorPlacement {
    pub actor_id: ActorId,
    pub worker: WorkerId,
    pub vnodes: Arc<Bitmap>,
}

#[derive(Clone, Debug)]
pub struct Relation {
    pub id: TableId,
    pub name: String,
    pub kind: RelationKind,
    /// The relation's own table (tables and views); its output schema in any case.
    pub desc: Arc<TableDesc>,
    pub upstream: Option<TableId>,
    pub state: JobState,
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
}

/// A fragment of a job other than its first: its id and its actors.
#[derive(Clone, Debug)]
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
        t.extend(self.progress_table.iter().map(|d| d.table_id));
        t
    }

    /// vnode → actor of the first fragment.
    pub fn mapping(&self) -> Arc<ActorMapping> {
        let bitmaps: Vec<(ActorId, Arc<Bitmap>)> = self
            .actors
            .iter()
            .map(|a| (a.actor_id, a.vnodes.clone()))
            .collect();
        Arc::new(ActorMapping::from_bitmaps(&bitmaps))
    }

    /// Every actor of the job, of every fragment.
    pub fn all_actors(&self) -> impl Iterator<Item = &ActorPlacement> {
        let sink = self.sink_fragment.iter().flat_map(|f| f.actors.iter());
        self.actors.iter().chain(sink)
    }

    pub fn all_actors_mut(&mut self) -> impl Iterator<Item = &mut ActorPlacement> {
        let sink = self
            .sink_fragment
            .iter_mut()
            .flat_map(|f| f.actors.iter_mut());
        self.actors.iter_mut().chain(sink)
    }

    /// The dispatcher upstream actor `i` of `upstream` uses towards this job: a hash dispatcher to every
    /// actor, or (no-shuffle backfill) a `NoShuffle` one to actor `i`.
    pub fn dispatcher_from(&self, upstream: &Relation, i: usize) -> DispatcherDesc {
        if self.scan_type == StreamScanType::Backfill {
            return DispatcherDesc {
                downstream_fragment: self.fragment_id,
                kind: DispatcherKind::NoShuffle,
                downstream_actors: vec![self.actors[i].actor_id],
            };
        }
        DispatcherDesc {
            downstream_fragment: self.fragment_id,
            kind: DispatcherKind::Hash {
                dist_key_indices: upstream.desc.dist_key_indices(),
                mapping: self.mapping(),
                vnode_count: self.desc.vnode_count,
            },
            downstream_actors: self.actors.iter().map(|a| a.actor_id).collect(),
        }
    }
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
            .filter(move |r| r.upstream == Some(id))
    }

    /// Every state table of every relation in the catalog.
    pub fn state_tables(&self) -> Vec<TableId> {
        self.relations
            .values()
            .flat_map(Relation::state_tables)
            .collect()
    }

    /// The backfill of `rel`'s actor `i` over its upstream (arrangement backfill over a merge of every upstream
    /// actor, or no-shuffle backfill over upstream actor `i`), followed (under a rate limit) by a flow-control
    /// executor, as RisingWave's plan puts one after a rate-limited `StreamScan`.
    fn backfill_node(&self, rel: &Relation, i: usize) -> StreamNode {
        let up_id = rel.upstream.expect("a job over a table has an upstream");
        // A job enters the catalog only while its upstream is there, and a drop refuses a table with
        // dependents (`MetaNode::create_job`, `remove_from_catalog`).
        let up = self.relations.get(&up_id).unwrap_or_else(|| {
            panic!(
                "the upstream {up_id} of {} {} is not in the catalog",
                rel.kind.as_str(),
                rel.name
            )
        });
        let upstream_table = up.desc.clone();
        let state_table = rel
            .progress_table
            .clone()
            .expect("a job over a table has a progress table");
        let (rate_limit, chunk_size) = (rel.rate_limit, BACKFILL_CHUNK_SIZE);
        // Arrangement backfill merges every upstream actor; no-shuffle backfill its one peer.
        let upstream_actors = match rel.scan_type {
            StreamScanType::ArrangementBackfill => up.actors.iter().map(|a| a.actor_id).collect(),
            StreamScanType::Backfill => vec![up.actors[i].actor_id],
        };
        let backfill = StreamNode::StreamScan {
            scan_type: rel.scan_type,
            upstream_table,
            state_table,
            rate_limit,
            chunk_size,
            input: Box::new(StreamNode::Merge {
                upstream_fragment: up.fragment_id,
                upstream_actors,
            }),
        };
        match rel.rate_limit {
            Some(limit) => StreamNode::FlowControl {
                rate_limit: Some(limit),
                input: Box::new(backfill),
            },
            None => backfill,
        }
    }

    /// The executor tree of actor `i` of `rel`'s first fragment.
    pub fn node_of(&self, rel: &Relation, i: usize) -> StreamNode {
        match rel.kind {
            RelationKind::Table => StreamNode::Materialize {
                table: rel.desc.clone(),
                input: Box::new(StreamNode::Dml {
                    table_id: rel.id,
                    column_types: rel.desc.column_types.clone(),
                }),
            },
            RelationKind::MaterializedView => StreamNode::Materialize {
                table: rel.desc.clone(),
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

    /// Plans of `rel`'s actors, of every fragment, with dispatchers towards every downstream job in the
    /// catalog (a job being created gets its upstream's dispatchers by its Add barrier instead: build it
    /// before adding it here). A sink's backfill actor `i` feeds its sink actor `i` without a shuffle.
    pub fn actor_descs(&self, rel: &Relation) -> Vec<StreamActorDesc> {
        let dispatchers = |i: usize| -> Vec<DispatcherDesc> {
            self.downstreams(rel.id)
                .map(|d| d.dispatcher_from(rel, i))
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
        if let Some(f) = &rel.sink_fragment {
            for (a, up) in f.actors.iter().zip(&rel.actors) {
                let sink = Self::sink_node(rel, up.actor_id);
                out.push(desc(a, f.fragment_id, sink, Vec::new()));
            }
        }
        out
    }
}
