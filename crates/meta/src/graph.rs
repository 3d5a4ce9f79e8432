//! Streaming jobs from a fragment graph (RisingWave's `create_streaming_job` with its `ActorGraphBuilder`):
//! the graph is checked, each `StreamScan` gets a backfill progress table, each fragment its actors (a hash
//! fragment the job's parallelism, each actor a share of the vnodes; a singleton one actor; a fragment behind
//! a no-shuffle edge or with a no-shuffle backfill its upstream's vnodes and workers), and the job enters the
//! catalog with its trees, from which every actor's plan is instantiated (`Catalog::actor_descs`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::{
    DispatchStrategy, FragmentDistribution, StreamFragment, StreamFragmentGraph, StreamNode,
};
use epochlab_common::{FragmentId, TableId};
use thiserror::Error;

use crate::catalog::{
    ActorPlacement, GraphFragment, JobGraph, JobState, Relation, RelationKind, StreamScanType,
};
use crate::meta::{DdlError, JobOptions, MetaNode};

/// Why a fragment graph was refused.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum GraphError {
    #[error("the graph has no fragment")]
    Empty,
    #[error("fragment {0} appears twice")]
    DuplicateFragment(u32),
    #[error("edge {upstream} -> {downstream} names a fragment not in the graph")]
    UnknownEndpoint { upstream: u32, downstream: u32 },
    #[error(
        "fragment {fragment}: its Exchange leaves {exchanges:?} are not its input edges {edges:?}"
    )]
    ExchangeMismatch {
        fragment: u32,
        exchanges: Vec<u32>,
        edges: Vec<u32>,
    },
    #[error("fragment {0} has more than one StreamScan")]
    TwoScans(u32),
    #[error("the graph has a cycle")]
    Cycle,
    #[error("the graph must have exactly one root (a fragment no edge leaves), found {0:?}")]
    Roots(Vec<u32>),
    #[error("the root fragment must materialize table {0}")]
    NoMaterialize(TableId),
    #[error("a sink's graph has one Sink, at the root of its root fragment, writing sink {0}")]
    NoSink(TableId),
    #[error("fragment {0} holds a {1} node, which meta plans itself")]
    Reserved(u32, &'static str),
    #[error("edge {upstream} -> {downstream}: a simple dispatch needs a singleton downstream")]
    SimpleToHash { upstream: u32, downstream: u32 },
    #[error(
        "fragment {0} holds a Values node: it must be a singleton (each actor would emit the rows)"
    )]
    ValuesNotSingle(u32),
    #[error(
        "a job built from a graph is a materialized view or a sink (tables are planned by kind)"
    )]
    Kind,
    #[error("a graph job writes exactly one table, got {0}")]
    Tables(usize),
    #[error("parallelism must be at least 1")]
    Parallelism,
    /// The root's actors own the vnodes of the rows they materialize: the fragment is hashed by the
    /// table's distribution key.
    #[error("the root fragment is hashed by {fragment:?}, its table by {table:?}")]
    RootDistribution {
        fragment: Vec<usize>,
        table: Vec<usize>,
    },
}

impl From<GraphError> for DdlError {
    fn from(e: GraphError) -> Self {
        DdlError::Invalid(e.to_string())
    }
}

/// The local ids of the `Exchange` leaves of a tree (a `StreamScan`'s input is meta's, not looked into).
fn exchanges(node: &StreamNode) -> Vec<u32> {
    match node {
        StreamNode::Exchange { upstream } => vec![*upstream],
        StreamNode::StreamScan { .. } => Vec::new(),
        _ => node.inputs().into_iter().flat_map(exchanges).collect(),
    }
}

/// Nodes a planner must not put in a graph (meta plans them), outside a `StreamScan`'s input.
fn reserved(node: &StreamNode) -> Option<&'static str> {
    match node {
        StreamNode::Dml { .. } => Some("Dml"),
        StreamNode::Merge { .. } => Some("Merge"),
        StreamNode::StreamScan { .. } => None,
        _ => node.inputs().into_iter().find_map(reserved),
    }
}

fn scans(node: &StreamNode) -> usize {
    node.walk()
        .iter()
        .filter(|n| matches!(n, StreamNode::StreamScan { .. }))
        .count()
}

/// Check a graph's shape; returns its fragments' local ids upstreams first, the root last.
pub fn check_graph(graph: &StreamFragmentGraph) -> Result<Vec<u32>, GraphError> {
    if graph.fragments.is_empty() {
        return Err(GraphError::Empty);
    }
    let mut ids = BTreeSet::new();
    for f in &graph.fragments {
        if !ids.insert(f.fragment_id) {
            return Err(GraphError::DuplicateFragment(f.fragment_id));
        }
    }
    for e in &graph.edges {
        if !ids.contains(&e.upstream) || !ids.contains(&e.downstream) {
            return Err(GraphError::UnknownEndpoint {
                upstream: e.upstream,
                downstream: e.downstream,
            });
        }
    }
    for f in &graph.fragments {
        check_fragment(graph, f)?;
    }
    let roots: Vec<u32> = ids
        .iter()
        .copied()
        .filter(|&id| graph.outputs_of(id).next().is_none())
        .collect();
    if roots.len() != 1 {
        return Err(GraphError::Roots(roots));
    }
    let order = topological_order(graph, &ids)?;
    debug_assert_eq!(order.last(), roots.first());
    Ok(order)
}

fn check_fragment(graph: &StreamFragmentGraph, f: &StreamFragment) -> Result<(), GraphError> {
    let id = f.fragment_id;
    let mut exch = exchanges(&f.node);
    let mut edges: Vec<u32> = graph.inputs_of(id).map(|e| e.upstream).collect();
    exch.sort_unstable();
    edges.sort_unstable();
    if exch != edges {
        return Err(GraphError::ExchangeMismatch {
            fragment: id,
            exchanges: exch,
            edges,
        });
    }
    if scans(&f.node) > 1 {
        return Err(GraphError::TwoScans(id));
    }
    if let Some(what) = reserved(&f.node) {
        return Err(GraphError::Reserved(id, what));
    }
    let values = f
        .node
        .walk()
        .iter()
        .any(|n| matches!(n, StreamNode::Values { .. }));
    if values && f.distribution != FragmentDistribution::Single {
        return Err(GraphError::ValuesNotSingle(id));
    }
    for e in graph.inputs_of(id) {
        if e.dispatch == DispatchStrategy::Simple && f.distribution != FragmentDistribution::Single
        {
            return Err(GraphError::SimpleToHash {
                upstream: e.upstream,
                downstream: id,
            });
        }
    }
    Ok(())
}

/// Kahn's order, smallest ready id first (deterministic).
fn topological_order(
    graph: &StreamFragmentGraph,
    ids: &BTreeSet<u32>,
) -> Result<Vec<u32>, GraphError> {
    let mut indegree: BTreeMap<u32, usize> = ids.iter().map(|&id| (id, 0)).collect();
    for e in &graph.edges {
        *indegree.get_mut(&e.downstream).expect("checked endpoint") += 1;
    }
    let mut ready: BTreeSet<u32> = indegree
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut order = Vec::with_capacity(ids.len());
    while let Some(id) = ready.pop_first() {
        order.push(id);
        for e in graph.outputs_of(id) {
            let d = indegree.get_mut(&e.downstream).expect("checked endpoint");
            *d -= 1;
            if *d == 0 {
                ready.insert(e.downstream);
            }
        }
    }
    if order.len() != ids.len() {
        return Err(GraphError::Cycle);
    }
    Ok(order)
}

/// What the planning of a graph job decided about one fragment.
struct Planned {
    local: u32,
    fragment_id: FragmentId,
    actors: Vec<ActorPlacement>,
    node: StreamNode,
    single: bool,
}

impl MetaNode {
    /// Create a streaming job from a fragment graph (see the module doc). `tables[0]` is the table the root's
    /// `Materialize` writes (any id: meta gives the job its own, and rewrites the `Materialize` nodes that name
    /// it). Each `StreamScan` names its upstream table; its progress table, input and rate limit are meta's.
    pub async fn create_streaming_job(
        &self,
        name: &str,
        kind: RelationKind,
        graph: StreamFragmentGraph,
        tables: Vec<Arc<TableDesc>>,
        options: JobOptions,
    ) -> Result<TableId, DdlError> {
        let rel = self.plan_graph_job(name, kind, graph, tables, &options)?;
        self.create_job(rel).await
    }

    fn plan_graph_job(
        &self,
        name: &str,
        kind: RelationKind,
        graph: StreamFragmentGraph,
        tables: Vec<Arc<TableDesc>>,
        options: &JobOptions,
    ) -> Result<Relation, DdlError> {
        if !matches!(kind, RelationKind::MaterializedView | RelationKind::Sink) {
            return Err(GraphError::Kind.into());
        }
        if tables.len() != 1 {
            return Err(GraphError::Tables(tables.len()).into());
        }
        if options.parallelism == 0 {
            return Err(GraphError::Parallelism.into());
        }
        let order = check_graph(&graph)?;
        let root = *order.last().expect("a checked graph has a root");
        let root_fragment = graph.fragment(root).expect("the root is a fragment");
        if let FragmentDistribution::Hash { dist_key } = &root_fragment.distribution
            && *dist_key != tables[0].dist_key_indices()
        {
            return Err(GraphError::RootDistribution {
                fragment: dist_key.clone(),
                table: tables[0].dist_key_indices(),
            }
            .into());
        }
        let placeholder = tables[0].table_id;
        let id = self.inner.next_table_id();
        let mut desc = (*tables[0]).clone();
        desc.table_id = id;
        let desc = Arc::new(desc);
        // Ids as a job planned by kind takes them: the job's, then the progress tables', then the fragments'.
        let mut nodes = BTreeMap::new();
        for f in &graph.fragments {
            let node = self.resolve_node(&f.node, placeholder, &desc)?;
            nodes.insert(f.fragment_id, node);
        }
        check_root(kind, &nodes, root, id, placeholder)?;
        let planned = self.place_fragments(&graph, &order, nodes, id, options)?;
        Ok(graph_relation(name, kind, desc, planned, graph, options))
    }

    /// A fragment's tree with each `StreamScan`'s upstream table and new progress table filled in, and the
    /// job's own table in each `Materialize` that names the placeholder.
    fn resolve_node(
        &self,
        node: &StreamNode,
        placeholder: TableId,
        desc: &Arc<TableDesc>,
    ) -> Result<StreamNode, DdlError> {
        let mut out = node.clone();
        match &mut out {
            StreamNode::StreamScan {
                upstream_table,
                state_table,
                rate_limit,
                ..
            } => {
                let up = self.upstream_table(upstream_table.table_id)?;
                let progress_id = self.inner.next_table_id();
                *state_table = Arc::new(TableDesc::backfill_state(
                    progress_id,
                    &up.desc.pk_types(),
                    up.desc.vnode_count,
                ));
                *upstream_table = up.desc.clone();
                // The job's current limit is applied when actors are built (it changes by ALTER).
                *rate_limit = None;
                return Ok(out);
            }
            StreamNode::Materialize { table, .. } if table.table_id == placeholder => {
                *table = desc.clone();
            }
            StreamNode::Sink { sink, .. } if sink.sink_id == placeholder => {
                sink.sink_id = desc.table_id;
            }
            _ => {
                // Each internal table of the job gets its own id, as the progress tables do.
                for t in out.internal_tables_mut() {
                    let mut d = (**t).clone();
                    d.table_id = self.inner.next_table_id();
                    *t = Arc::new(d);
                }
            }
        }
        let planned: Vec<&StreamNode> = node.inputs();
        for (child, p) in out.inputs_mut().into_iter().zip(planned) {
            *child = self.resolve_node(p, placeholder, desc)?;
        }
        Ok(out)
    }

    /// Actors for each fragment, upstreams first (see the module doc).
    fn place_fragments(
        &self,
        graph: &StreamFragmentGraph,
        order: &[u32],
        mut nodes: BTreeMap<u32, StreamNode>,
        id: TableId,
        options: &JobOptions,
    ) -> Result<Vec<Planned>, DdlError> {
        let mut planned: Vec<Planned> = Vec::with_capacity(order.len());
        for (k, &local) in order.iter().enumerate() {
            let f = graph.fragment(local).expect("ordered ids are fragments");
            let node = nodes.remove(&local).expect("one tree per fragment");
            let like = self.placed_like(graph, local, &node, &planned)?;
            let (fragment_id, actors) = match (like, &f.distribution) {
                (Some(like), _) => self.inner.place_like(&like)?,
                (None, FragmentDistribution::Single) => self.inner.place(1, id.0 as usize + k)?,
                (None, FragmentDistribution::Hash { .. }) => {
                    let n = f.parallelism.unwrap_or(options.parallelism).max(1);
                    self.inner.place(n, id.0 as usize + k)?
                }
            };
            planned.push(Planned {
                local,
                fragment_id,
                actors,
                node,
                single: f.distribution == FragmentDistribution::Single,
            });
        }
        Ok(planned)
    }

    /// The actors a fragment must take the vnodes and workers of: its upstream fragment's behind a
    /// no-shuffle edge, or its no-shuffle backfill's upstream table's.
    fn placed_like(
        &self,
        graph: &StreamFragmentGraph,
        local: u32,
        node: &StreamNode,
        planned: &[Planned],
    ) -> Result<Option<Vec<ActorPlacement>>, DdlError> {
        if let Some(e) = graph
            .inputs_of(local)
            .find(|e| e.dispatch == DispatchStrategy::NoShuffle)
        {
            let up = planned
                .iter()
                .find(|p| p.local == e.upstream)
                .expect("upstreams are placed first");
            return Ok(Some(up.actors.clone()));
        }
        for n in node.walk() {
            if let StreamNode::StreamScan {
                scan_type,
                upstream_table,
                ..
            } = n
                && scan_type.is_no_shuffle()
            {
                return Ok(Some(self.upstream_table(upstream_table.table_id)?.actors));
            }
        }
        Ok(None)
    }
}

/// A materialized view's root fragment materializes its table; a sink's root is its one `Sink` (no
/// other fragment holds one: meta plans the sinks of jobs by kind).
fn check_root(
    kind: RelationKind,
    nodes: &BTreeMap<u32, StreamNode>,
    root: u32,
    id: TableId,
    placeholder: TableId,
) -> Result<(), GraphError> {
    let root_node = nodes.get(&root).expect("the root is a fragment");
    let sinks = |n: &StreamNode| {
        n.walk()
            .iter()
            .filter(|n| matches!(n, StreamNode::Sink { .. }))
            .count()
    };
    if let Some((f, _)) = nodes.iter().find(|(f, n)| **f != root && sinks(n) > 0) {
        return Err(GraphError::Reserved(*f, "Sink"));
    }
    match kind {
        RelationKind::Sink => match root_node {
            StreamNode::Sink { sink, input } if sink.sink_id == id && sinks(input) == 0 => Ok(()),
            _ => Err(GraphError::NoSink(placeholder)),
        },
        _ if sinks(root_node) > 0 => Err(GraphError::Reserved(root, "Sink")),
        _ if !materializes(root_node, id) => Err(GraphError::NoMaterialize(placeholder)),
        _ => Ok(()),
    }
}

/// Whether a tree materializes table `id`.
fn materializes(node: &StreamNode, id: TableId) -> bool {
    node.walk()
        .iter()
        .any(|n| matches!(n, StreamNode::Materialize { table, .. } if table.table_id == id))
}

/// The first `StreamScan` of the planned fragments, root first: the relation's `upstream`, scan type and
/// progress table (what code written for one-fragment jobs reads).
fn first_scan(planned: &[Planned]) -> Option<(TableId, StreamScanType, Arc<TableDesc>)> {
    planned.iter().rev().find_map(|p| {
        p.node.walk().into_iter().find_map(|n| match n {
            StreamNode::StreamScan {
                upstream_table,
                state_table,
                scan_type,
                ..
            } => Some((upstream_table.table_id, *scan_type, state_table.clone())),
            _ => None,
        })
    })
}

fn graph_relation(
    name: &str,
    kind: RelationKind,
    desc: Arc<TableDesc>,
    mut planned: Vec<Planned>,
    graph: StreamFragmentGraph,
    options: &JobOptions,
) -> Relation {
    let scan = first_scan(&planned);
    let root = planned.pop().expect("a checked graph has a root");
    let sink = match &root.node {
        StreamNode::Sink { sink, .. } => Some(sink.clone()),
        _ => None,
    };
    let fragments = planned
        .into_iter()
        .map(|p| GraphFragment {
            local_id: p.local,
            fragment_id: p.fragment_id,
            actors: p.actors,
            node: p.node,
            single: p.single,
        })
        .collect();
    Relation {
        id: desc.table_id,
        name: name.to_string(),
        kind,
        desc,
        upstream: scan.as_ref().map(|s| s.0),
        state: JobState::Creating,
        fragments_initial: true,
        fragment_id: root.fragment_id,
        actors: root.actors,
        sink,
        rate_limit: options.rate_limit.filter(|l| *l > 0),
        sink_rate_limit: None,
        progress_table: scan.as_ref().map(|s| s.2.clone()),
        scan_type: scan.map_or(options.scan_type, |s| s.1),
        background: options.background,
        sink_fragment: None,
        graph: Some(JobGraph {
            root: root.local,
            root_node: root.node,
            fragments,
            edges: graph.edges,
            root_single: root.single,
        }),
    }
}

#[cfg(test)]
mod tests {
    use epochlab_common::plan::{ConflictBehavior, StreamFragmentEdge};
    use epochlab_common::{DataType, VnodeCount};

    use super::*;

    fn table() -> Arc<TableDesc> {
        let count = VnodeCount::new(8).unwrap();
        Arc::new(TableDesc::hash(
            TableId(1),
            vec![DataType::Int64],
            vec![0],
            vec![0],
            count,
        ))
    }

    fn scan() -> StreamNode {
        StreamNode::stream_scan(StreamScanType::ArrangementBackfill, table(), 16)
    }

    fn frag(id: u32, node: StreamNode) -> StreamFragment {
        StreamFragment {
            fragment_id: id,
            node,
            distribution: FragmentDistribution::Hash { dist_key: vec![0] },
            parallelism: None,
        }
    }

    fn mat(input: StreamNode) -> StreamNode {
        StreamNode::Materialize {
            table: table(),
            conflict: ConflictBehavior::NoCheck,
            input: Box::new(input),
        }
    }

    fn edge(upstream: u32, downstream: u32, dispatch: DispatchStrategy) -> StreamFragmentEdge {
        StreamFragmentEdge {
            upstream,
            downstream,
            dispatch,
        }
    }

    fn union_of(ids: &[u32]) -> StreamNode {
        StreamNode::Union {
            inputs: ids
                .iter()
                .map(|&upstream| StreamNode::Exchange { upstream })
                .collect(),
        }
    }

    fn sink_of(id: TableId, input: StreamNode) -> StreamNode {
        StreamNode::Sink {
            sink: epochlab_common::plan::SinkDesc {
                sink_id: id,
                kind: epochlab_common::plan::SinkKind::Blackhole,
                pk_indices: vec![0],
                chunk_delay: std::time::Duration::ZERO,
            },
            input: Box::new(input),
        }
    }

    /// A sink's graph has its one `Sink` at the root of the root fragment; a view's has none.
    #[test]
    fn only_a_sink_roots_its_graph_in_a_sink() {
        let (id, other) = (TableId(7), TableId(8));
        let nodes = |root: StreamNode, up: StreamNode| BTreeMap::from([(0, root), (1, up)]);
        let check = |kind, n: &BTreeMap<u32, StreamNode>| check_root(kind, n, 0, id, TableId(1));
        let sink = RelationKind::Sink;
        let mv = RelationKind::MaterializedView;
        assert_eq!(check(sink, &nodes(sink_of(id, scan()), scan())), Ok(()));
        let wrong_id = nodes(sink_of(other, scan()), scan());
        assert_eq!(check(sink, &wrong_id), Err(GraphError::NoSink(TableId(1))));
        let nested = nodes(sink_of(id, sink_of(id, scan())), scan());
        assert_eq!(check(sink, &nested), Err(GraphError::NoSink(TableId(1))));
        let upstream = nodes(sink_of(id, scan()), sink_of(id, scan()));
        assert_eq!(check(sink, &upstream), Err(GraphError::Reserved(1, "Sink")));
        assert_eq!(
            check(mv, &nodes(sink_of(id, scan()), scan())),
            Err(GraphError::Reserved(0, "Sink"))
        );
        let mut desc = (*table()).clone();
        desc.table_id = id;
        let view = StreamNode::Materialize {
            table: Arc::new(desc),
            conflict: ConflictBehavior::NoCheck,
            input: Box::new(scan()),
        };
        assert_eq!(check(mv, &nodes(view, scan())), Ok(()));
    }

    /// Upstreams come first, the root last; ties by the smaller id.
    #[test]
    fn a_union_graph_orders_upstreams_first() {
        let g = StreamFragmentGraph {
            fragments: vec![
                frag(9, mat(union_of(&[4, 2]))),
                frag(4, scan()),
                frag(2, scan()),
            ],
            edges: vec![
                edge(4, 9, DispatchStrategy::Hash(vec![0])),
                edge(2, 9, DispatchStrategy::NoShuffle),
            ],
        };
        assert_eq!(check_graph(&g), Ok(vec![2, 4, 9]));
    }

    #[test]
    fn bad_graphs_are_refused() {
        let h = || DispatchStrategy::Hash(vec![0]);
        let empty = StreamFragmentGraph::default();
        assert_eq!(check_graph(&empty), Err(GraphError::Empty));
        // An Exchange without its edge.
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, mat(union_of(&[2])))],
            edges: vec![],
        };
        assert!(matches!(
            check_graph(&g),
            Err(GraphError::ExchangeMismatch { fragment: 1, .. })
        ));
        // Two scans in one fragment (their progress would be reported as one actor's).
        let two = StreamNode::Union {
            inputs: vec![scan(), scan()],
        };
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, mat(two))],
            edges: vec![],
        };
        assert_eq!(check_graph(&g), Err(GraphError::TwoScans(1)));
        // A cycle leaves no root.
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, union_of(&[2])), frag(2, union_of(&[1]))],
            edges: vec![edge(1, 2, h()), edge(2, 1, h())],
        };
        assert_eq!(check_graph(&g), Err(GraphError::Roots(vec![])));
        // Two roots.
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, mat(scan())), frag(2, mat(scan()))],
            edges: vec![],
        };
        assert_eq!(check_graph(&g), Err(GraphError::Roots(vec![1, 2])));
        // A simple dispatch into a hash fragment.
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, scan()), frag(2, mat(union_of(&[1])))],
            edges: vec![edge(1, 2, DispatchStrategy::Simple)],
        };
        assert!(matches!(
            check_graph(&g),
            Err(GraphError::SimpleToHash { .. })
        ));
        // A node meta plans itself.
        let dml = StreamNode::Dml {
            table_id: TableId(1),
            column_types: vec![DataType::Int64],
        };
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, mat(dml))],
            edges: vec![],
        };
        assert_eq!(check_graph(&g), Err(GraphError::Reserved(1, "Dml")));
        // Values in a hash fragment.
        let values = StreamNode::Values {
            rows: vec![],
            types: vec![DataType::Int64],
        };
        let g = StreamFragmentGraph {
            fragments: vec![frag(1, mat(values))],
            edges: vec![],
        };
        assert_eq!(check_graph(&g), Err(GraphError::ValuesNotSingle(1)));
    }
}
