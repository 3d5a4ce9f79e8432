//! Plans: what meta sends a compute node to build an actor (RisingWave's `StreamActor` and `StreamNode`
//! protos), and the dispatcher descriptions that `Add` mutations carry to upstream actors.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::OrderType;
use crate::catalog::TableDesc;
use crate::expr_node::{AggCall, ExprNode, ExprType};
pub use crate::types::Interval;
use crate::{ActorId, Bitmap, DataType, FragmentId, OwnedRow, TableId, VirtualNode, VnodeCount};

/// vnode → the actor that owns it, for one downstream fragment (RisingWave's `ActorMapping`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ActorMapping {
    owners: Vec<ActorId>,
}

impl ActorMapping {
    /// From each actor's vnode bitmap; the bitmaps must partition the vnodes.
    pub fn from_bitmaps(actors: &[(ActorId, Arc<Bitmap>)]) -> Self {
        let count = actors.first().map_or(0, |(_, b)| b.len());
        let mut owners = vec![None; count];
        for (actor, bitmap) in actors {
            for v in bitmap.iter_ones() {
                assert!(owners[v].is_none(), "vnode {v} owned twice");
                owners[v] = Some(*actor);
            }
        }
        Self {
            owners: owners
                .into_iter()
                .enumerate()
                .map(|(v, o)| o.unwrap_or_else(|| panic!("vnode {v} has no owner")))
                .collect(),
        }
    }

    pub fn owner(&self, vnode: VirtualNode) -> ActorId {
        self.owners[vnode.to_index()]
    }

    pub fn vnode_count(&self) -> usize {
        self.owners.len()
    }
}

/// How a job over a table reads its upstream (RisingWave's `StreamScanType`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StreamScanType {
    /// Arrangement backfill: the job's own parallelism, a hash exchange from the upstream, progress per vnode.
    #[default]
    ArrangementBackfill,
    /// No-shuffle backfill (RisingWave's `Backfill`): the upstream's distribution, one upstream actor per
    /// backfill actor through a `NoShuffle` dispatcher, one position per actor. RisingWave plans it where no
    /// reshuffle is needed (a `SINK INTO TABLE`, a view over a view with the same distribution, or with
    /// `streaming_use_arrangement_backfill` off).
    Backfill,
    /// No snapshot: the upstream's changes from the job's first barrier on, through a `NoShuffle` dispatcher
    /// (RisingWave's `UpstreamOnly`, the right input of a temporal join, which reads the table itself). Its
    /// progress table is registered and never written, as RisingWave's; it reports done at its first barrier.
    UpstreamOnly,
}

impl StreamScanType {
    /// Whether the scan takes its upstream's actors one for one, behind a `NoShuffle` dispatcher (and so
    /// its fragment takes the upstream's vnodes and workers).
    pub fn is_no_shuffle(self) -> bool {
        match self {
            StreamScanType::Backfill | StreamScanType::UpstreamOnly => true,
            StreamScanType::ArrangementBackfill => false,
        }
    }

    /// Whether a job backfilling with it may be rescheduled (RisingWave's `is_reschedulable`, PR #23998).
    pub fn is_reschedulable(self) -> bool {
        match self {
            StreamScanType::ArrangementBackfill => true,
            StreamScanType::Backfill | StreamScanType::UpstreamOnly => false,
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum DispatcherKind {
    /// Rows go to the actor owning the vnode of their distribution key.
    Hash {
        dist_key_indices: Vec<usize>,
        mapping: Arc<ActorMapping>,
        vnode_count: VnodeCount,
        /// The key is one row id (`serial`) column: a row whose row id is still NULL (a table's DML before
        /// its row id generator) is hashed whole, as RisingWave's `VirtualNode::compute_chunk` does.
        #[serde(default)]
        row_id_key: bool,
    },
    /// Every row to every downstream actor.
    Broadcast,
    /// One downstream actor with the same vnodes.
    NoShuffle,
}

/// One dispatcher of an actor: its downstream fragment's actors and how rows are routed to them.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DispatcherDesc {
    /// The downstream fragment; an actor has at most one dispatcher per downstream fragment.
    pub downstream_fragment: FragmentId,
    pub kind: DispatcherKind,
    pub downstream_actors: Vec<ActorId>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// Drops everything (RisingWave's `blackhole` connector).
    Blackhole,
    /// Applies the changes to an in-memory copy that checks can read.
    Collecting,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct SinkDesc {
    pub sink_id: TableId,
    pub kind: SinkKind,
    /// Positions of the pk in the sink's input rows.
    pub pk_indices: Vec<usize>,
    /// Simulated time the sink spends on each chunk: a slow sink makes barrier latency high.
    pub chunk_delay: Duration,
}

/// An executor tree, leaves first built.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum StreamNode {
    /// The table's DML entry: emits DML chunks between the barriers injected by the local barrier manager.
    Dml {
        table_id: TableId,
        column_types: Vec<DataType>,
    },
    /// N upstream actors, barriers aligned.
    Merge {
        upstream_fragment: FragmentId,
        upstream_actors: Vec<ActorId>,
    },
    /// A backfill over `input` (RisingWave's `StreamScan`): reads the upstream table's snapshot through a
    /// replicated copy, merges it with the upstream's changes, and persists its progress per vnode in
    /// `state_table`. `scan_type` says which executor: arrangement backfill over a Merge of every upstream
    /// actor, or no-shuffle backfill over a Merge of the one upstream actor with the same vnodes.
    StreamScan {
        scan_type: StreamScanType,
        upstream_table: Arc<TableDesc>,
        /// The upstream table's columns the scan emits, by position (RisingWave's `output_indices`): its
        /// columns when the job was planned. A table's columns only grow (`ALTER TABLE .. ADD COLUMN`
        /// appends one), so a job keeps the ones it was planned over. Empty (a job stored before this
        /// field was): every column.
        #[serde(default)]
        output_indices: Vec<usize>,
        state_table: Arc<TableDesc>,
        /// Snapshot rows per second per actor; `None` is unlimited.
        rate_limit: Option<u32>,
        /// Rows per snapshot chunk at most.
        chunk_size: usize,
        input: Box<StreamNode>,
    },
    /// Write every change into a table's state table, then forward it; `conflict` says what a change that
    /// disagrees with the stored row of its pk becomes (RisingWave's `ConflictBehavior`).
    Materialize {
        table: Arc<TableDesc>,
        conflict: ConflictBehavior,
        input: Box<StreamNode>,
    },
    /// One output column per expression, evaluated over each input row (RisingWave's `ProjectExecutor`).
    Project {
        exprs: Vec<ExprNode>,
        input: Box<StreamNode>,
    },
    /// Only the rows for which `predicate` is true (RisingWave's `FilterExecutor`).
    Filter {
        predicate: ExprNode,
        input: Box<StreamNode>,
    },
    /// Every input's rows, with barriers aligned over the inputs (RisingWave's `UnionExecutor`; UNION ALL).
    Union { inputs: Vec<StreamNode> },
    /// Constant rows, emitted once in the first epoch of a newly created job (RisingWave's `ValuesExecutor`).
    /// It is a source: its barriers come from the local barrier manager.
    Values {
        rows: Vec<OwnedRow>,
        types: Vec<DataType>,
    },
    /// Each input row once per hop window that contains its `time_col` (RisingWave's `HopWindowExecutor`):
    /// the input's columns then `window_start` and `window_end`, of which `output_indices` are kept.
    HopWindow {
        time_col: usize,
        window_slide: Interval,
        window_size: Interval,
        output_indices: Vec<usize>,
        input: Box<StreamNode>,
    },
    /// Fills the hidden row id column `row_id_index` of inserted rows (RisingWave's `RowIdGenExecutor`).
    RowIdGen {
        row_id_index: usize,
        input: Box<StreamNode>,
    },
    /// Where a fragment-graph edge enters a fragment: meta replaces it by a `Merge` of the actors of the
    /// graph's fragment `upstream` (local id). Never reaches a compute node.
    Exchange { upstream: u32 },
    /// Limit rows per second (on the simulation clock); `None` is unlimited.
    FlowControl {
        rate_limit: Option<u32>,
        input: Box<StreamNode>,
    },
    Sink {
        sink: SinkDesc,
        input: Box<StreamNode>,
    },
    // Aggregation (branch `agg`): see `AggCallState` and `DistinctDedupTable` below.
    /// Grouped aggregation (RisingWave's `HashAggExecutor`): per group of `group_key`, one state per call in
    /// `result_table` (pk = the group key), emitted on each barrier for the groups that changed. Output:
    /// the group key, then one column per call. `agg_calls[row_count_index]` is `count(*)`: a group whose
    /// row count drops to 0 is deleted. `emit_on_window_close`: the position in the group key of the window
    /// column, when a group is emitted once, as the watermark on that column passes it (RisingWave's EOWC
    /// hash aggregation).
    HashAgg {
        group_key: Vec<usize>,
        agg_calls: Vec<AggCall>,
        result_table: Arc<TableDesc>,
        agg_call_states: Vec<AggCallState>,
        distinct_dedup_tables: Vec<DistinctDedupTable>,
        row_count_index: usize,
        emit_on_window_close: Option<usize>,
        input: Box<StreamNode>,
    },
    /// Global aggregation in a singleton fragment (RisingWave's `SimpleAggExecutor`): one row, always
    /// present (count 0 and NULLs over no rows), its state in `result_table` (empty pk).
    SimpleAgg {
        agg_calls: Vec<AggCall>,
        result_table: Arc<TableDesc>,
        agg_call_states: Vec<AggCallState>,
        distinct_dedup_tables: Vec<DistinctDedupTable>,
        row_count_index: usize,
        input: Box<StreamNode>,
    },
    /// An equi-join of two inputs hashed by the join key (RisingWave's `HashJoinExecutor`). Each side keeps
    /// its rows in its `*_table` (pk = the join key, then the side's stream key; see [`join_side_tables`])
    /// and, where the join needs to know how many rows of the other side match a row (the outer side of an
    /// outer join, either side of a semi or anti join), a degree table (the same pk, then an `Int64`
    /// degree). `null_safe[i]` makes key pair `i` `IS NOT DISTINCT FROM`. `condition` is evaluated over the
    /// left row's columns then the right row's. Output: `output_indices` of the left columns then the right
    /// columns (semi and anti joins: of their side's columns only).
    HashJoin {
        join_type: JoinType,
        left_key: Vec<usize>,
        right_key: Vec<usize>,
        null_safe: Vec<bool>,
        condition: Option<ExprNode>,
        left_table: Arc<TableDesc>,
        right_table: Arc<TableDesc>,
        left_degree_table: Option<Arc<TableDesc>>,
        right_degree_table: Option<Arc<TableDesc>>,
        output_indices: Vec<usize>,
        left: Box<StreamNode>,
        right: Box<StreamNode>,
    },
    /// A join whose right side is a table read as of the barrier's epoch (RisingWave's
    /// `TemporalJoinExecutor`, `FOR SYSTEM_TIME AS OF PROCTIME()`): each left row (an append-only input,
    /// hashed as the table is distributed) looks up the rows of `table` whose pk starts with its `left_key`
    /// values, through a cache the right input's changes (the table's own, `StreamScanType::UpstreamOnly`,
    /// every column of the table) keep up to date at each barrier; the right input's rows are never joined
    /// themselves. `right_key` are the table's pk prefix, by stored position. `Inner` or `LeftOuter`;
    /// `condition` over the left row's columns then the table's; output `output_indices` of both.
    TemporalJoin {
        join_type: JoinType,
        left_key: Vec<usize>,
        right_key: Vec<usize>,
        null_safe: Vec<bool>,
        condition: Option<ExprNode>,
        table: Arc<TableDesc>,
        output_indices: Vec<usize>,
        left: Box<StreamNode>,
        right: Box<StreamNode>,
    },
    /// `ORDER BY order_by LIMIT limit OFFSET offset` over the whole input in a singleton fragment
    /// (RisingWave's `TopNExecutor`, `AppendOnlyTopNExecutor` when `append_only`): every input row kept in
    /// `table` (pk = the order columns, then the input's stream key; see [`top_n_table`]); emits the changes
    /// of the rows ranked in `[offset, offset + limit)`, with ties at the last rank when `with_ties`.
    /// `limit: None` is no limit.
    TopN {
        order_by: Vec<(usize, OrderType)>,
        offset: u64,
        limit: Option<u64>,
        with_ties: bool,
        append_only: bool,
        table: Arc<TableDesc>,
        input: Box<StreamNode>,
    },
    /// Top-N within each group of `group_key` (RisingWave's `GroupTopNExecutor`; `DISTINCT ON` and
    /// `row_number() OVER (PARTITION BY .. ORDER BY ..) <= N`): `table`'s pk is the group key, the order
    /// columns, then the stream key.
    GroupTopN {
        group_key: Vec<usize>,
        order_by: Vec<(usize, OrderType)>,
        offset: u64,
        limit: u64,
        with_ties: bool,
        append_only: bool,
        table: Arc<TableDesc>,
        input: Box<StreamNode>,
    },
    /// The left rows whose `key` column compares (`comparator`, e.g. `GreaterThan`) true with the one value
    /// of the right input, a singleton (RisingWave's `DynamicFilterExecutor`: `v > (SELECT max(..))`, and
    /// with a `Now` right input a temporal filter). Left rows are kept in `left_table` (pk = `key`, then the
    /// left stream key), the right value in `right_table` (singleton, empty pk).
    DynamicFilter {
        key: usize,
        comparator: ExprType,
        left_table: Arc<TableDesc>,
        right_table: Arc<TableDesc>,
        left: Box<StreamNode>,
        right: Box<StreamNode>,
    },
    /// The simulation clock's `now()` as one `Timestamptz` row, updated on each barrier (RisingWave's
    /// `NowExecutor`): a source whose barriers come from the local barrier manager; the last value emitted
    /// is kept in `state_table` (singleton, empty pk).
    Now { state_table: Arc<TableDesc> },
    /// A source's connector (RisingWave's `SourceExecutor` of a datagen source): a barrier source that,
    /// after each barrier while not paused, emits the rows its splits are due (see
    /// [`crate::source::DatagenSpec`]) as rows of `column_types`, the connector's columns filled, each
    /// `generated` column computed over them with `proctime()` the barrier's time, and the rest (the row
    /// id) NULL. It owns the splits whose index hashes to one of its vnodes; each split's next offset is
    /// kept in `state_table` (pk: the `Int32` split index, then its `Int64` next offset), written in the
    /// epoch of the rows it follows, so a rebuilt actor resumes where the committed rows end.
    Source {
        datagen: crate::source::DatagenSpec,
        generated: Vec<(usize, ExprNode)>,
        column_types: Vec<DataType>,
        state_table: Arc<TableDesc>,
    },
    /// The select list of a query with set-returning functions (RisingWave's `ProjectSetExecutor`): per
    /// input row, as many output rows as its longest table function gives (a shorter one is NULL after its
    /// last row, a plain expression repeats); none when every table function gives none. Output: the
    /// `Int64` `projected_row_id` (0, 1, .. within the input row), then one column per item. Updates become
    /// deletes and inserts (the old and the new row may give different numbers of rows).
    ProjectSet {
        select_list: Vec<ProjectSetSelectItem>,
        input: Box<StreamNode>,
    },
    /// Each input row once per grouping set (RisingWave's `ExpandExecutor`, under the aggregation of
    /// `GROUPING SETS`/`ROLLUP`/`CUBE`): for subset `i`, the input's columns with those not in
    /// `column_subsets[i]` NULL, then the input's columns as they are, then the `Int64` flag `i`.
    Expand {
        column_subsets: Vec<Vec<usize>>,
        input: Box<StreamNode>,
    },
    /// A table's `WATERMARK FOR col AS expr` (RisingWave's `WatermarkFilterExecutor`, between its DML
    /// exchange and its row id generator): drops the rows whose `event_time_col` is below the watermark,
    /// the largest `watermark_expr` over the rows seen, and sends the watermark on. `table` keeps it per
    /// vnode (see [`TableDesc::watermark_filter_state`]).
    WatermarkFilter {
        event_time_col: usize,
        watermark_expr: ExprNode,
        table: Arc<TableDesc>,
        input: Box<StreamNode>,
    },
    /// Emit-on-window-close over a plan with no executor that waits for its window (RisingWave's
    /// `StreamEowcSort`, a `SortExecutor`): rows wait in `buffer_table` (pk: `sort_column_index`, then the
    /// input's stream key) until a watermark on that column passes them.
    EowcSort {
        sort_column_index: usize,
        buffer_table: Arc<TableDesc>,
        input: Box<StreamNode>,
    },
    /// Window functions over partitions of the input (RisingWave's general `OverWindowExecutor`): every call
    /// shares `partition_by` and `order_by`; the output is each input row, then one column per call.
    /// `state_table` holds the input rows (pk: the partition key, the order key, then the input's stream
    /// key; distributed by the partition key). With `emit_on_window_close` it is RisingWave's
    /// `EowcOverWindowExecutor`: one ascending order column with a watermark, an append-only input sorted on
    /// it (an `EowcSort` below), each row emitted once when its window closes; its state table holds only
    /// the input's columns. Absent from older plans, which read as the general one.
    OverWindow {
        calls: Vec<crate::expr_node::WindowFuncCall>,
        partition_by: Vec<usize>,
        order_by: Vec<(usize, OrderType)>,
        /// The input's stream key (a row's identity across a chunk's changes).
        stream_key: Vec<usize>,
        state_table: Arc<TableDesc>,
        #[serde(default)]
        emit_on_window_close: bool,
        input: Box<StreamNode>,
    },
}

/// One item of a [`StreamNode::ProjectSet`]'s select list.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum ProjectSetSelectItem {
    /// A scalar expression over the input row, the same in each of its output rows.
    Expr(ExprNode),
    /// A set-returning function of arguments over the input row, its rows of type `ret`.
    TableFunction {
        func: crate::expr_node::TableFunctionType,
        args: Vec<ExprNode>,
        ret: DataType,
    },
}

/// `row` in grouping set `flag` of a [`StreamNode::Expand`]: its columns with those not in `subset` NULL,
/// its columns as they are, then the `Int64` flag.
pub fn expand_row(row: &OwnedRow, subset: &[usize], flag: usize) -> OwnedRow {
    let n = row.len();
    let mut datums = Vec::with_capacity(2 * n + 1);
    datums.extend((0..n).map(|i| {
        if subset.contains(&i) {
            row.datum_at(i).clone()
        } else {
            None
        }
    }));
    datums.extend(row.datums().iter().cloned());
    datums.push(Some(crate::ScalarImpl::Int64(flag as i64)));
    OwnedRow::new(datums)
}

impl ProjectSetSelectItem {
    pub fn return_type(&self) -> DataType {
        match self {
            ProjectSetSelectItem::Expr(e) => e.return_type(),
            ProjectSetSelectItem::TableFunction { ret, .. } => ret.clone(),
        }
    }
}

/// The join kinds of a streaming hash join (RisingWave's `JoinType`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JoinType {
    Inner,
    LeftOuter,
    RightOuter,
    FullOuter,
    LeftSemi,
    LeftAnti,
    RightSemi,
    RightAnti,
}

impl JoinType {
    /// Whether the left side keeps a degree table (its rows must know how many right rows match).
    pub fn left_needs_degree(self) -> bool {
        matches!(
            self,
            JoinType::LeftOuter | JoinType::FullOuter | JoinType::LeftSemi | JoinType::LeftAnti
        )
    }

    /// Whether the right side keeps a degree table.
    pub fn right_needs_degree(self) -> bool {
        matches!(
            self,
            JoinType::RightOuter | JoinType::FullOuter | JoinType::RightSemi | JoinType::RightAnti
        )
    }
}

/// One side's state tables of a hash join: the rows (every input column; pk = the join key then the
/// side's stream key columns not already in it, hashed by the join key) and, with `degree`, the degree
/// table (the same pk columns, then the `Int64` degree). Table ids are placeholders: meta gives each its own.
pub fn join_side_tables(
    types: &[DataType],
    join_key: &[usize],
    stream_key: &[usize],
    degree: bool,
    vnode_count: VnodeCount,
) -> (Arc<TableDesc>, Option<Arc<TableDesc>>) {
    let mut pk: Vec<usize> = join_key.to_vec();
    pk.extend(stream_key.iter().filter(|k| !join_key.contains(k)));
    let distribution = crate::catalog::Distribution::HashDistKey {
        dist_key_in_pk: (0..join_key.len()).collect(),
    };
    let rows = TableDesc {
        table_id: TableId(0),
        column_types: types.to_vec(),
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk.clone(),
        value_indices: (0..types.len()).collect(),
        distribution: distribution.clone(),
        vnode_count,
    };
    let degree = degree.then(|| {
        let mut column_types: Vec<DataType> = pk.iter().map(|&i| types[i].clone()).collect();
        column_types.push(DataType::Int64);
        Arc::new(TableDesc {
            table_id: TableId(0),
            pk_indices: (0..pk.len()).collect(),
            pk_orders: vec![OrderType::ascending(); pk.len()],
            value_indices: (0..column_types.len()).collect(),
            column_types,
            distribution,
            vnode_count,
        })
    });
    (Arc::new(rows), degree)
}

/// A top-N's state table: every input column; pk = the group key, the order columns (in their orders), then
/// the stream key columns not already in it; hashed by the group key (singleton without one). The id is a
/// placeholder.
pub fn top_n_table(
    types: &[DataType],
    group_key: &[usize],
    order_by: &[(usize, OrderType)],
    stream_key: &[usize],
    vnode_count: VnodeCount,
) -> Arc<TableDesc> {
    let mut pk: Vec<usize> = group_key.to_vec();
    let mut orders = vec![OrderType::ascending(); group_key.len()];
    for &(c, o) in order_by {
        if !pk.contains(&c) {
            pk.push(c);
            orders.push(o);
        }
    }
    for &k in stream_key {
        if !pk.contains(&k) {
            pk.push(k);
            orders.push(OrderType::ascending());
        }
    }
    Arc::new(TableDesc {
        table_id: TableId(0),
        column_types: types.to_vec(),
        pk_indices: pk,
        pk_orders: orders,
        value_indices: (0..types.len()).collect(),
        distribution: agg_distribution(group_key.len()),
        vnode_count,
    })
}

/// An emit-on-window-close sort's buffer (RisingWave's `StreamEowcSort` table): every input column; pk =
/// the sort column, then the stream key's other columns, then any of `dist_key` not yet in it; hashed by
/// `dist_key` (a singleton with `None`). The id is a placeholder.
pub fn eowc_sort_buffer_table(
    types: &[DataType],
    sort_column: usize,
    stream_key: &[usize],
    dist_key: Option<&[usize]>,
    vnode_count: VnodeCount,
) -> Arc<TableDesc> {
    let mut pk = vec![sort_column];
    for &k in stream_key.iter().chain(dist_key.unwrap_or_default()) {
        if !pk.contains(&k) {
            pk.push(k);
        }
    }
    let distribution = match dist_key {
        None => crate::catalog::Distribution::Singleton,
        Some(key) => crate::catalog::Distribution::HashDistKey {
            dist_key_in_pk: key
                .iter()
                .map(|k| pk.iter().position(|p| p == k).expect("added above"))
                .collect(),
        },
    };
    Arc::new(TableDesc {
        table_id: TableId(0),
        column_types: types.to_vec(),
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk,
        value_indices: (0..types.len()).collect(),
        distribution,
        vnode_count,
    })
}

/// A dynamic filter's state tables (RisingWave's `infer_left_internal_table_catalog` and its right table):
/// the left table keeps every left column, pk = the filter's `key`, then the left's `dist_key` and
/// `stream_key` columns not already in it, hashed by `dist_key` (a singleton without one); the right table
/// keeps the right input's columns in one row (empty pk, singleton). Ids are placeholders.
pub fn dynamic_filter_tables(
    left_types: &[DataType],
    key: usize,
    dist_key: &[usize],
    stream_key: &[usize],
    right_types: &[DataType],
    vnode_count: VnodeCount,
) -> (Arc<TableDesc>, Arc<TableDesc>) {
    let mut pk = vec![key];
    for &c in dist_key.iter().chain(stream_key) {
        if !pk.contains(&c) {
            pk.push(c);
        }
    }
    let distribution = if dist_key.is_empty() {
        crate::catalog::Distribution::Singleton
    } else {
        crate::catalog::Distribution::HashDistKey {
            dist_key_in_pk: dist_key
                .iter()
                .map(|c| pk.iter().position(|p| p == c).expect("dist key in pk"))
                .collect(),
        }
    };
    let left = TableDesc {
        table_id: TableId(0),
        column_types: left_types.to_vec(),
        pk_orders: vec![OrderType::ascending(); pk.len()],
        pk_indices: pk,
        value_indices: (0..left_types.len()).collect(),
        distribution,
        vnode_count,
    };
    (
        Arc::new(left),
        singleton_row_table(right_types, vnode_count),
    )
}

/// A table of one row (empty pk, singleton): a dynamic filter's right value, `now`'s last value. The id
/// is a placeholder.
pub fn singleton_row_table(types: &[DataType], vnode_count: VnodeCount) -> Arc<TableDesc> {
    Arc::new(TableDesc {
        table_id: TableId(0),
        column_types: types.to_vec(),
        pk_indices: Vec::new(),
        pk_orders: Vec::new(),
        value_indices: (0..types.len()).collect(),
        distribution: crate::catalog::Distribution::Singleton,
        vnode_count,
    })
}

/// Everything a compute node needs to build one actor.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StreamActorDesc {
    pub actor_id: ActorId,
    pub fragment_id: FragmentId,
    /// The streaming job (the table, view or sink) the actor belongs to.
    pub job_id: TableId,
    pub vnodes: Arc<Bitmap>,
    pub node: StreamNode,
    pub dispatchers: Vec<DispatcherDesc>,
}

impl StreamActorDesc {
    /// Whether the actor receives barriers from the local barrier manager (it has no upstream actor).
    pub fn is_source(&self) -> bool {
        self.node.has_barrier_source()
    }
}

impl StreamNode {
    /// A `StreamScan` of `upstream_table` as a planner puts it in a fragment graph: meta gives it its
    /// progress table, its input (a merge of the upstream's actors) and the job's rate limit.
    pub fn stream_scan(
        scan_type: StreamScanType,
        upstream_table: Arc<TableDesc>,
        chunk_size: usize,
    ) -> StreamNode {
        StreamNode::StreamScan {
            scan_type,
            state_table: upstream_table.clone(),
            output_indices: (0..upstream_table.column_types.len()).collect(),
            upstream_table,
            rate_limit: None,
            chunk_size,
            input: Box::new(StreamNode::Merge {
                upstream_fragment: FragmentId(0),
                upstream_actors: Vec::new(),
            }),
        }
    }

    /// The node's inputs, in order.
    pub fn inputs(&self) -> Vec<&StreamNode> {
        match self {
            StreamNode::Dml { .. }
            | StreamNode::Merge { .. }
            | StreamNode::Values { .. }
            | StreamNode::Now { .. }
            | StreamNode::Source { .. }
            | StreamNode::Exchange { .. } => Vec::new(),
            StreamNode::Union { inputs } => inputs.iter().collect(),
            StreamNode::HashJoin { left, right, .. }
            | StreamNode::TemporalJoin { left, right, .. }
            | StreamNode::DynamicFilter { left, right, .. } => vec![left.as_ref(), right.as_ref()],
            StreamNode::StreamScan { input, .. }
            | StreamNode::Materialize { input, .. }
            | StreamNode::FlowControl { input, .. }
            | StreamNode::Sink { input, .. }
            | StreamNode::Project { input, .. }
            | StreamNode::Filter { input, .. }
            | StreamNode::HopWindow { input, .. }
            | StreamNode::RowIdGen { input, .. }
            | StreamNode::HashAgg { input, .. }
            | StreamNode::SimpleAgg { input, .. }
            | StreamNode::TopN { input, .. }
            | StreamNode::GroupTopN { input, .. }
            | StreamNode::ProjectSet { input, .. }
            | StreamNode::Expand { input, .. }
            | StreamNode::WatermarkFilter { input, .. }
            | StreamNode::EowcSort { input, .. }
            | StreamNode::OverWindow { input, .. } => vec![input.as_ref()],
        }
    }

    /// The node's inputs, mutably, in order.
    pub fn inputs_mut(&mut self) -> Vec<&mut StreamNode> {
        match self {
            StreamNode::Dml { .. }
            | StreamNode::Merge { .. }
            | StreamNode::Values { .. }
            | StreamNode::Now { .. }
            | StreamNode::Source { .. }
            | StreamNode::Exchange { .. } => Vec::new(),
            StreamNode::Union { inputs } => inputs.iter_mut().collect(),
            StreamNode::HashJoin { left, right, .. }
            | StreamNode::TemporalJoin { left, right, .. }
            | StreamNode::DynamicFilter { left, right, .. } => vec![left.as_mut(), right.as_mut()],
            StreamNode::StreamScan { input, .. }
            | StreamNode::Materialize { input, .. }
            | StreamNode::FlowControl { input, .. }
            | StreamNode::Sink { input, .. }
            | StreamNode::Project { input, .. }
            | StreamNode::Filter { input, .. }
            | StreamNode::HopWindow { input, .. }
            | StreamNode::RowIdGen { input, .. }
            | StreamNode::HashAgg { input, .. }
            | StreamNode::SimpleAgg { input, .. }
            | StreamNode::TopN { input, .. }
            | StreamNode::GroupTopN { input, .. }
            | StreamNode::ProjectSet { input, .. }
            | StreamNode::Expand { input, .. }
            | StreamNode::WatermarkFilter { input, .. }
            | StreamNode::EowcSort { input, .. }
            | StreamNode::OverWindow { input, .. } => vec![input.as_mut()],
        }
    }

    /// The node's kind, as its executor is named (`Merge`, `StreamScan`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            StreamNode::Dml { .. } => "Dml",
            StreamNode::Merge { .. } => "Merge",
            StreamNode::StreamScan { .. } => "StreamScan",
            StreamNode::Materialize { .. } => "Materialize",
            StreamNode::Project { .. } => "Project",
            StreamNode::Filter { .. } => "Filter",
            StreamNode::Union { .. } => "Union",
            StreamNode::Values { .. } => "Values",
            StreamNode::HopWindow { .. } => "HopWindow",
            StreamNode::RowIdGen { .. } => "RowIdGen",
            StreamNode::Exchange { .. } => "Exchange",
            StreamNode::FlowControl { .. } => "FlowControl",
            StreamNode::Sink { .. } => "Sink",
            StreamNode::HashAgg { .. } => "HashAgg",
            StreamNode::SimpleAgg { .. } => "SimpleAgg",
            StreamNode::HashJoin { .. } => "HashJoin",
            StreamNode::TemporalJoin { .. } => "TemporalJoin",
            StreamNode::TopN { .. } => "TopN",
            StreamNode::GroupTopN { .. } => "GroupTopN",
            StreamNode::DynamicFilter { .. } => "DynamicFilter",
            StreamNode::Now { .. } => "Now",
            StreamNode::Source { .. } => "Source",
            StreamNode::ProjectSet { .. } => "ProjectSet",
            StreamNode::Expand { .. } => "Expand",
            StreamNode::WatermarkFilter { .. } => "WatermarkFilter",
            StreamNode::EowcSort { .. } => "EowcSort",
            StreamNode::OverWindow {
                emit_on_window_close: true,
                ..
            } => "EowcOverWindow",
            StreamNode::OverWindow { .. } => "OverWindow",
        }
    }

    /// Every node of the tree, this one first, then each input's, depth first.
    pub fn walk(&self) -> Vec<&StreamNode> {
        let mut out = vec![self];
        for i in self.inputs() {
            out.extend(i.walk());
        }
        out
    }

    /// Whether a leaf of the tree takes its barriers from the local barrier manager (a `Dml`, `Values`,
    /// `Now` or `Source`) rather than from an upstream actor.
    pub fn has_barrier_source(&self) -> bool {
        self.walk().iter().any(|n| {
            matches!(
                n,
                StreamNode::Dml { .. }
                    | StreamNode::Values { .. }
                    | StreamNode::Now { .. }
                    | StreamNode::Source { .. }
            )
        })
    }
}

/// What a materialize does with a change that disagrees with the stored row of its pk (RisingWave's
/// `ConflictBehavior`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConflictBehavior {
    /// Write every change as it comes: the plan guarantees no conflict (a materialized view's output).
    #[default]
    NoCheck,
    /// The new row wins: an insert of a stored pk becomes an update of the stored row, a delete of a pk
    /// not stored is dropped, a delete removes the stored row (a table with a primary key).
    Overwrite,
    /// The stored row wins: an insert of a stored pk is dropped (`ON CONFLICT DO NOTHING`).
    IgnoreConflict,
}

/// How the actors of a fragment split the rows (RisingWave's fragment distribution type).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum FragmentDistribution {
    /// The job's parallelism (or the fragment's own), each actor a share of the vnodes of `dist_key`.
    Hash { dist_key: Vec<usize> },
    /// One actor with every vnode.
    Single,
}

/// How an edge routes the upstream fragment's rows to the downstream fragment's actors (RisingWave's
/// `DispatchStrategy`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum DispatchStrategy {
    /// To the actor owning the vnode of the row's columns at these positions.
    Hash(Vec<usize>),
    /// Everything to the one downstream actor (a singleton downstream).
    Simple,
    /// Upstream actor `i` to downstream actor `i` (both fragments split the vnodes alike).
    NoShuffle,
    /// Every row to every downstream actor.
    Broadcast,
}

/// One fragment of a planned streaming job: an executor tree whose `Exchange` leaves are the graph's edges
/// into it, and whose `StreamScan` leaves read existing tables.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StreamFragment {
    /// Local to the graph (edges and `Exchange` leaves name it); meta gives it a global `FragmentId`.
    pub fragment_id: u32,
    pub node: StreamNode,
    pub distribution: FragmentDistribution,
    /// The fragment's own parallelism of a hash fragment; `None` is the job's.
    pub parallelism: Option<usize>,
}

/// An edge of a fragment graph: `upstream`'s actors dispatch to `downstream`'s by `dispatch`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct StreamFragmentEdge {
    pub upstream: u32,
    pub downstream: u32,
    pub dispatch: DispatchStrategy,
}

/// A planned streaming job (RisingWave's `StreamFragmentGraph`): meta turns it into actors, one set per
/// fragment, and dispatchers, one per edge. The fragment whose tree holds the job's `Materialize` (or
/// `Sink`) is its root; nothing in the graph reads from it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamFragmentGraph {
    pub fragments: Vec<StreamFragment>,
    pub edges: Vec<StreamFragmentEdge>,
}

impl StreamFragmentGraph {
    pub fn fragment(&self, id: u32) -> Option<&StreamFragment> {
        self.fragments.iter().find(|f| f.fragment_id == id)
    }

    /// The edges into fragment `id`.
    pub fn inputs_of(&self, id: u32) -> impl Iterator<Item = &StreamFragmentEdge> {
        self.edges.iter().filter(move |e| e.downstream == id)
    }

    /// The edges out of fragment `id`.
    pub fn outputs_of(&self, id: u32) -> impl Iterator<Item = &StreamFragmentEdge> {
        self.edges.iter().filter(move |e| e.upstream == id)
    }
}

// ---- Aggregation state (branch `agg`) ----

/// Where one aggregate call keeps its state (RisingWave's `AggCallState`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum AggCallState {
    /// In the call's column of the result table: count, sum, avg, ... (their numbers), and min/max over an
    /// append-only input (the current value: nothing is ever retracted).
    Value,
    /// Every input row the call has seen, in its own table ordered for the call (retractable min/max,
    /// string_agg, array_agg, first/last value): `columns` are the input columns stored, in the table's
    /// column order (see [`agg_materialized_input_table`]).
    MaterializedInput {
        table: Arc<TableDesc>,
        columns: Vec<usize>,
        /// The input columns that break the call's sort-key ties (the upstream stream key; empty for a
        /// DISTINCT call, whose argument does).
        #[serde(default)]
        stream_key: Vec<usize>,
    },
}

/// The dedup table of the distinct calls over one input column (RisingWave's distinct dedup table): its
/// columns are the group key, the column, then one `Int64` count per distinct call over it (in call
/// order), how many live rows of the group have that value among the rows the call's filter keeps; the pk
/// is the group key and the column.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DistinctDedupTable {
    pub column: usize,
    pub table: Arc<TableDesc>,
}

impl StreamNode {
    /// The internal state tables of a stateful node (the job's own tables besides its materialized view and
    /// its backfill progress): meta gives each its id, compute nodes register them for the actor. Each
    /// stateful node kind adds its arm here, in one place.
    pub fn internal_tables(&self) -> Vec<&Arc<TableDesc>> {
        match self {
            StreamNode::HashAgg { .. } | StreamNode::SimpleAgg { .. } => self.agg_tables(),
            StreamNode::HashJoin {
                left_table,
                right_table,
                left_degree_table,
                right_degree_table,
                ..
            } => [Some(left_table), left_degree_table.as_ref()]
                .into_iter()
                .chain([Some(right_table), right_degree_table.as_ref()])
                .flatten()
                .collect(),
            StreamNode::TopN { table, .. } | StreamNode::GroupTopN { table, .. } => vec![table],
            StreamNode::DynamicFilter {
                left_table,
                right_table,
                ..
            } => vec![left_table, right_table],
            StreamNode::Now { state_table } | StreamNode::Source { state_table, .. } => {
                vec![state_table]
            }
            StreamNode::WatermarkFilter { table, .. }
            | StreamNode::EowcSort {
                buffer_table: table,
                ..
            }
            | StreamNode::OverWindow {
                state_table: table, ..
            } => vec![table],
            _ => Vec::new(),
        }
    }

    /// The same tables, mutably, in the same order.
    pub fn internal_tables_mut(&mut self) -> Vec<&mut Arc<TableDesc>> {
        match self {
            StreamNode::HashAgg { .. } | StreamNode::SimpleAgg { .. } => self.agg_tables_mut(),
            StreamNode::HashJoin {
                left_table,
                right_table,
                left_degree_table,
                right_degree_table,
                ..
            } => [Some(left_table), left_degree_table.as_mut()]
                .into_iter()
                .chain([Some(right_table), right_degree_table.as_mut()])
                .flatten()
                .collect(),
            StreamNode::TopN { table, .. } | StreamNode::GroupTopN { table, .. } => vec![table],
            StreamNode::DynamicFilter {
                left_table,
                right_table,
                ..
            } => vec![left_table, right_table],
            StreamNode::Now { state_table } | StreamNode::Source { state_table, .. } => {
                vec![state_table]
            }
            StreamNode::WatermarkFilter { table, .. }
            | StreamNode::EowcSort {
                buffer_table: table,
                ..
            }
            | StreamNode::OverWindow {
                state_table: table, ..
            } => vec![table],
            _ => Vec::new(),
        }
    }

    /// The internal state tables of an aggregation node (result, materialized inputs, dedup), in order.
    pub fn agg_tables(&self) -> Vec<&Arc<TableDesc>> {
        let (result, states, dedups) = match self {
            StreamNode::HashAgg {
                result_table,
                agg_call_states,
                distinct_dedup_tables,
                ..
            }
            | StreamNode::SimpleAgg {
                result_table,
                agg_call_states,
                distinct_dedup_tables,
                ..
            } => (result_table, agg_call_states, distinct_dedup_tables),
            _ => return Vec::new(),
        };
        let mut out = vec![result];
        for s in states {
            if let AggCallState::MaterializedInput { table, .. } = s {
                out.push(table);
            }
        }
        out.extend(dedups.iter().map(|d| &d.table));
        out
    }

    /// The same tables, mutably (meta gives them their ids).
    pub fn agg_tables_mut(&mut self) -> Vec<&mut Arc<TableDesc>> {
        let (result, states, dedups) = match self {
            StreamNode::HashAgg {
                result_table,
                agg_call_states,
                distinct_dedup_tables,
                ..
            }
            | StreamNode::SimpleAgg {
                result_table,
                agg_call_states,
                distinct_dedup_tables,
                ..
            } => (result_table, agg_call_states, distinct_dedup_tables),
            _ => return Vec::new(),
        };
        let mut out = vec![result];
        for s in states {
            if let AggCallState::MaterializedInput { table, .. } = s {
                out.push(table);
            }
        }
        out.extend(dedups.iter_mut().map(|d| &mut d.table));
        out
    }
}

/// Whether an aggregate keeps its input to retract (min/max and the ordered aggregates): over a retractable
/// input it needs a materialized-input table; its result-table column holds its output.
pub fn agg_keeps_input(kind: crate::AggKind) -> bool {
    use crate::AggKind::*;
    matches!(
        kind,
        Min | Max
            | FirstValue
            | LastValue
            | StringAgg
            | ArrayAgg
            | JsonbAgg
            | JsonbObjectAgg
            | PercentileCont
            | PercentileDisc
            | Mode
    )
}

fn agg_distribution(group_len: usize) -> crate::catalog::Distribution {
    use crate::catalog::Distribution;
    if group_len == 0 {
        Distribution::Singleton
    } else {
        Distribution::HashDistKey {
            dist_key_in_pk: (0..group_len).collect(),
        }
    }
}

fn agg_table(
    table_id: TableId,
    column_types: Vec<DataType>,
    pk_orders: Vec<crate::OrderType>,
    group_len: usize,
    vnode_count: VnodeCount,
) -> TableDesc {
    let n = column_types.len();
    TableDesc {
        table_id,
        column_types,
        pk_indices: (0..pk_orders.len()).collect(),
        pk_orders,
        value_indices: (0..n).collect(),
        distribution: agg_distribution(group_len),
        vnode_count,
    }
}

/// An aggregation's result table (RisingWave's intermediate state table): the group key's columns (the pk,
/// the distribution key), then per call its state: the value state's numbers as `bytea` for the value
/// aggregates, the output for the aggregates that keep their input (and for append-only min/max).
pub fn agg_result_table(
    table_id: TableId,
    group_key_types: &[DataType],
    agg_calls: &[AggCall],
    vnode_count: VnodeCount,
) -> TableDesc {
    let mut types = group_key_types.to_vec();
    for call in agg_calls {
        types.push(if agg_keeps_input(call.kind) {
            call.ret.clone()
        } else {
            DataType::Bytea
        });
    }
    let g = group_key_types.len();
    agg_table(
        table_id,
        types,
        vec![crate::OrderType::ascending(); g],
        g,
        vnode_count,
    )
}

/// A call's materialized-input table and the input columns it stores, as RisingWave's
/// `infer_stream_agg_state` lays it out: the pk is the group key, the call's sort key (min: its argument;
/// max: the argument descending; last_value: its ORDER BY reversed; percentile and mode: their ORDER BY and
/// argument; the others: their ORDER BY), then what makes a row unique (the upstream stream key
/// `upstream_pk`, or the argument of a DISTINCT call, whose rows are deduplicated first); the arguments
/// follow as values.
pub fn agg_materialized_input_table(
    table_id: TableId,
    input_types: &[DataType],
    group_key: &[usize],
    call: &AggCall,
    upstream_pk: &[usize],
    vnode_count: VnodeCount,
) -> AggCallState {
    use crate::AggKind::*;
    let asc = crate::OrderType::ascending();
    let mut columns: Vec<usize> = group_key.to_vec();
    let mut orders = vec![asc; group_key.len()];
    let mut sort = |c: usize, o: crate::OrderType| {
        columns.push(c);
        orders.push(o);
    };
    match call.kind {
        Min => sort(call.args[0], asc),
        Max => sort(call.args[0], crate::OrderType::descending()),
        LastValue => call
            .order_by
            .iter()
            .for_each(|(i, o)| sort(*i, o.reverse())),
        _ => call.order_by.iter().for_each(|(i, o)| sort(*i, *o)),
    }
    if matches!(call.kind, PercentileDisc | PercentileCont | Mode) {
        call.args.iter().for_each(|&a| sort(a, asc));
    }
    let stream_key = if call.distinct {
        sort(call.args[0], asc);
        vec![]
    } else {
        upstream_pk.iter().for_each(|&c| sort(c, asc));
        upstream_pk.to_vec()
    };
    // The arguments as values, each stored once (min/max's is in the sort key already).
    for &a in &call.args {
        if !columns.contains(&a) {
            columns.push(a);
        }
    }
    let types = columns.iter().map(|&c| input_types[c].clone()).collect();
    let table = agg_table(table_id, types, orders, group_key.len(), vnode_count);
    AggCallState::MaterializedInput {
        table: Arc::new(table),
        columns,
        stream_key,
    }
}

/// The dedup table of the distinct calls over input column `column` (`calls` of them).
pub fn agg_distinct_dedup_table(
    table_id: TableId,
    input_types: &[DataType],
    group_key: &[usize],
    column: usize,
    calls: usize,
    vnode_count: VnodeCount,
) -> DistinctDedupTable {
    let mut types: Vec<DataType> = group_key.iter().map(|&c| input_types[c].clone()).collect();
    types.push(input_types[column].clone());
    types.extend(std::iter::repeat_n(DataType::Int64, calls));
    let orders = vec![crate::OrderType::ascending(); group_key.len() + 1];
    let table = agg_table(table_id, types, orders, group_key.len(), vnode_count);
    DistinctDedupTable {
        column,
        table: Arc::new(table),
    }
}

/// A planner's streaming aggregation over `input` (RisingWave's `StreamHashAgg` / `StreamSimpleAgg` with
/// their state tables): a `count(*)` row count call is put first, each retractable ordered call gets a
/// materialized-input table (over an append-only input min/max keep a value), each column of distinct calls a
/// dedup table, and a projection drops the row count again. Output: the group key's columns, then one per
/// call in `calls`. The tables' ids are placeholders: meta gives every aggregation table its own.
pub fn agg_node(
    input: StreamNode,
    input_types: &[DataType],
    upstream_pk: &[usize],
    group_key: &[usize],
    calls: &[AggCall],
    append_only: bool,
    vnode_count: VnodeCount,
) -> StreamNode {
    let placeholder = TableId(0);
    let mut agg_calls = vec![row_count_call()];
    agg_calls.extend(calls.iter().cloned());
    let g_types: Vec<DataType> = group_key.iter().map(|&k| input_types[k].clone()).collect();
    let result_table = Arc::new(agg_result_table(
        placeholder,
        &g_types,
        &agg_calls,
        vnode_count,
    ));
    let agg_call_states = agg_calls
        .iter()
        .map(|c| {
            let retract_min_max =
                !(append_only && matches!(c.kind, crate::AggKind::Min | crate::AggKind::Max));
            if agg_keeps_input(c.kind) && retract_min_max {
                agg_materialized_input_table(
                    placeholder,
                    input_types,
                    group_key,
                    c,
                    upstream_pk,
                    vnode_count,
                )
            } else {
                AggCallState::Value
            }
        })
        .collect();
    let distinct_dedup_tables =
        agg_distinct_dedup_tables(&agg_calls, input_types, group_key, vnode_count);
    let input = Box::new(input);
    let agg = if group_key.is_empty() {
        StreamNode::SimpleAgg {
            agg_calls,
            result_table,
            agg_call_states,
            distinct_dedup_tables,
            row_count_index: 0,
            input,
        }
    } else {
        StreamNode::HashAgg {
            group_key: group_key.to_vec(),
            agg_calls,
            result_table,
            agg_call_states,
            distinct_dedup_tables,
            row_count_index: 0,
            emit_on_window_close: None,
            input,
        }
    };
    drop_row_count(agg, &g_types, calls)
}

/// The aggregation [`agg_node`] made (under the projection that drops its row count) emits on window close on
/// group-key position `eowc`.
pub fn set_emit_on_window_close(node: &mut StreamNode, eowc: Option<usize>) {
    match node {
        StreamNode::HashAgg {
            emit_on_window_close,
            ..
        } => *emit_on_window_close = eowc,
        StreamNode::Project { input, .. } => set_emit_on_window_close(input, eowc),
        _ => unreachable!("an aggregation is a HashAgg, maybe under a Project"),
    }
}

/// The `count(*)` call every streaming aggregation keeps first: its groups' row counts.
fn row_count_call() -> AggCall {
    AggCall {
        kind: crate::AggKind::Count,
        args: Vec::new(),
        arg_types: Vec::new(),
        ret: DataType::Int64,
        distinct: false,
        order_by: Vec::new(),
        filter: None,
    }
}

/// One dedup table per column that distinct calls (and approx_count_distinct) take, in first-use order,
/// counting the calls over it.
fn agg_distinct_dedup_tables(
    agg_calls: &[AggCall],
    input_types: &[DataType],
    group_key: &[usize],
    vnode_count: VnodeCount,
) -> Vec<DistinctDedupTable> {
    let placeholder = TableId(0);
    let mut distinct_columns: Vec<usize> = Vec::new();
    for c in agg_calls {
        let distinct = c.distinct || c.kind == crate::AggKind::ApproxCountDistinct;
        if let (true, Some(&col)) = (distinct, c.args.first())
            && !distinct_columns.contains(&col)
        {
            distinct_columns.push(col);
        }
    }
    distinct_columns
        .iter()
        .map(|&col| {
            let n = agg_calls
                .iter()
                .filter(|c| {
                    (c.distinct || c.kind == crate::AggKind::ApproxCountDistinct)
                        && c.args.first() == Some(&col)
                })
                .count();
            agg_distinct_dedup_table(placeholder, input_types, group_key, col, n, vnode_count)
        })
        .collect()
}

/// A projection of an aggregation's output without its row count: the group keys, then `calls`.
fn drop_row_count(agg: StreamNode, g_types: &[DataType], calls: &[AggCall]) -> StreamNode {
    let g = g_types.len();
    let mut exprs: Vec<ExprNode> = g_types
        .iter()
        .enumerate()
        .map(|(i, t)| ExprNode::input_ref(i, t.clone()))
        .collect();
    exprs.extend(
        calls
            .iter()
            .enumerate()
            .map(|(i, c)| ExprNode::input_ref(g + 1 + i, c.ret.clone())),
    );
    StreamNode::Project {
        exprs,
        input: Box::new(agg),
    }
}
