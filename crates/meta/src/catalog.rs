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
    /// The arrangement backfill's progress table (views and sinks).
    pub progress_table: Option<Arc<TableDesc>>,
    /// Created in the background: DDL returned before the backfill finished, and the job survives recovery.
    pub background: bool,
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

    pub fn mapping(&self) -> Arc<ActorMapping> {
        let actors: Vec<(ActorId, Arc<Bitmap>)> = self
            .actors
            .iter()
            .map(|a| (a.actor_id, a.vnodes.clone()))
            .collect();
        Arc::new(ActorMapping::from_bitmaps(&actors))
    }

    /// The hash dispatcher an upstream actor uses towards this job.
    pub fn dispatcher_from(&self, upstream: &Relation) -> DispatcherDesc {
        DispatcherDesc {
            downstream_fragment: self.fragment_id,
            kind: DispatcherKind::Hash {
                dist_key_indices: upstream.desc.pk_indices.clone(),
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

    /// The executor tree of `rel`'s actors.
    pub fn node_of(&self, rel: &Relation) -> StreamNode {
        let backfill = |rel: &Relation| {
            let up = &self.relations[&rel.upstream.expect("a job over a table has an upstream")];
            StreamNode::ArrangementBackfill {
                upstream_table: up.desc.clone(),
                state_table: rel
                    .progress_table
                    .clone()
                    .expect("a job over a table has a progress table"),
                rate_limit: rel.rate_limit,
                chunk_size: BACKFILL_CHUNK_SIZE,
                input: Box::new(StreamNode::Merge {
                    upstream_fragment: up.fragment_id,
                    upstream_actors: up.actors.iter().map(|a| a.actor_id).collect(),
                }),
            }
        };
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
                input: Box::new(backfill(rel)),
            },
            RelationKind::Sink => {
                let input = match rel.sink_rate_limit {
                    Some(limit) => StreamNode::FlowControl {
                        rate_limit: Some(limit),
                        input: Box::new(backfill(rel)),
                    },
                    None => backfill(rel),
                };
                StreamNode::Sink {
                    sink: rel.sink.clone().expect("a sink has a sink description"),
                    input: Box::new(input),
                }
            }
        }
    }

    /// Plans of `rel`'s actors, with dispatchers towards every downstream job in the catalog (a job being
    /// created gets its upstream's dispatchers by its Add barrier instead: build it before adding it here).
    pub fn actor_descs(&self, rel: &Relation) -> Vec<StreamActorDesc> {
        let node = self.node_of(rel);
        let dispatchers: Vec<DispatcherDesc> = self
            .downstreams(rel.id)
            .map(|d| d.dispatcher_from(rel))
            .collect();
        rel.actors
            .iter()
            .map(|a| StreamActorDesc {
                actor_id: a.actor_id,
                fragment_id: rel.fragment_id,
                job_id: rel.id,
                vnodes: a.vnodes.clone(),
                node: node.clone(),
                dispatchers: dispatchers.clone(),
            })
            .collect()
    }
}
