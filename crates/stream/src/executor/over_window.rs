//! Window functions over partitions of the input (RisingWave's general `OverWindowExecutor`, under its
//! default cache policy `full`): `state_table` holds every input row with its window values (pk: the
//! partition key, the order key, then the input's stream key; hashed by the partition key). A chunk's
//! changes are first merged per input pk (an insert after a delete is an update; a delete after an insert
//! cancels it); each partition they touch is loaded whole from the table the first time, its rows'
//! window values recomputed in order, and only the rows whose output changed are emitted: a new row as an
//! insert, a gone row as a delete, a changed one (its window values, or the row itself updated in place) as
//! an update, written to the table as they go. Watermarks stop here. A rebuilt actor, or one given new
//! vnodes, starts with an empty cache and loads each partition when it is first touched.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use epochlab_common::expr_node::WindowFuncCall;
use epochlab_common::memcmp::encode_row_to_vec;
use epochlab_common::{
    ActorId, Bitmap, Datum, Op, OrderType, OwnedRow, StreamChunk, StreamChunkBuilder,
};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

/// Rows per output chunk.
const CHUNK_SIZE: usize = 256;

/// A partition's rows with their window values, by their encoded state-table pk (so in order).
type Partition = BTreeMap<Vec<u8>, OwnedRow>;

/// One input pk's change within a chunk: the row before the chunk and the row after (`None`: absent).
#[derive(Default)]
struct Change {
    old: Option<OwnedRow>,
    new: Option<OwnedRow>,
}

pub struct OverWindowArgs {
    pub actor_id: ActorId,
    pub input: BoxedExecutor,
    pub calls: Vec<WindowFuncCall>,
    pub partition_by: Vec<usize>,
    pub order_by: Vec<(usize, OrderType)>,
    /// The input's stream key.
    pub stream_key: Vec<usize>,
    pub state_table: StateTable,
}

pub struct OverWindowExecutor {
    args: OverWindowArgs,
    /// The input's width (the output's first columns).
    input_width: usize,
    /// The orders of an encoded partition key and an encoded stream key (ascending), made once.
    partition_orders: Vec<OrderType>,
    stream_key_orders: Vec<OrderType>,
    /// Partitions loaded from the table, by their encoded partition key.
    cache: BTreeMap<Vec<u8>, Partition>,
}

impl OverWindowExecutor {
    /// The executor, or why its plan cannot run: the state table's pk must start with the partition key, and
    /// keys, orders and arguments read only input columns (the window values follow them).
    pub fn new(args: OverWindowArgs) -> StreamExecutorResult<Self> {
        let desc = args.state_table.desc().clone();
        let bad = |problem| Err(StreamExecutorError::OverWindowPlan { problem });
        let Some(input_width) = desc.column_types.len().checked_sub(args.calls.len()) else {
            return bad("fewer state table columns than window function calls");
        };
        if desc.pk_indices.get(..args.partition_by.len()) != Some(&args.partition_by[..]) {
            return bad("the state table's pk does not start with the partition key");
        }
        let keys = desc.pk_indices.iter().chain(&args.stream_key);
        let orders = args.order_by.iter().map(|(c, _)| c);
        let call_args = args.calls.iter().flat_map(|c| &c.args);
        if keys
            .chain(orders)
            .chain(call_args)
            .any(|&c| c >= input_width)
        {
            return bad("a key, order or argument column is not an input column");
        }
        Ok(Self {
            partition_orders: vec![OrderType::ascending(); args.partition_by.len()],
            stream_key_orders: vec![OrderType::ascending(); args.stream_key.len()],
            args,
            input_width,
            cache: BTreeMap::new(),
        })
    }

    fn partition_key(&self, row: &OwnedRow) -> Vec<u8> {
        encode_row_to_vec(
            &row.project(&self.args.partition_by),
            &self.partition_orders,
        )
    }

    /// A row's place in its partition: its encoded state-table pk.
    fn state_key(&self, row: &OwnedRow) -> Vec<u8> {
        let table = &self.args.state_table;
        encode_row_to_vec(&table.pk_of(row), &table.desc().pk_orders)
    }

    fn stream_key(&self, row: &OwnedRow) -> Vec<u8> {
        encode_row_to_vec(&row.project(&self.args.stream_key), &self.stream_key_orders)
    }

    /// The chunk's changes, one per input pk (RisingWave's `merge_changes_in_chunk`).
    fn merge_changes(&self, chunk: &StreamChunk) -> BTreeMap<Vec<u8>, Change> {
        let mut changes: BTreeMap<Vec<u8>, Change> = BTreeMap::new();
        for (op, row) in chunk.rows() {
            let c = changes.entry(self.stream_key(row)).or_default();
            match op {
                Op::Insert | Op::UpdateInsert => c.new = Some(row.clone()),
                Op::Delete | Op::UpdateDelete if c.new.is_some() => c.new = None,
                Op::Delete | Op::UpdateDelete => c.old = Some(row.clone()),
            }
        }
        changes
    }

    /// The cached partition of `row`, loaded whole from the table if it is not cached.
    fn load_partition(&mut self, row: &OwnedRow) -> StreamExecutorResult<Vec<u8>> {
        let key = self.partition_key(row);
        if self.cache.contains_key(&key) {
            return Ok(key);
        }
        let table = &self.args.state_table;
        let vnode = table.compute_vnode_by_pk(&table.pk_of(row))?;
        let prefix = row.project(&self.args.partition_by);
        let range = (Bound::Included(prefix.clone()), Bound::Included(prefix));
        let mut part = Partition::new();
        for stored in table.iter_with_vnode(vnode, range)? {
            let stored = stored?;
            part.insert(self.state_key(&stored), stored);
        }
        self.cache.insert(key.clone(), part);
        Ok(key)
    }

    /// Apply a chunk: its changes to the partitions they touch, then each touched partition's output changes.
    fn apply_chunk(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<Vec<StreamChunk>> {
        let mut touched: BTreeMap<Vec<u8>, Partition> = BTreeMap::new();
        for (_, change) in self.merge_changes(chunk) {
            for row in change.old.iter().chain(&change.new) {
                let key = self.load_partition(row)?;
                let part = &self.cache[&key];
                touched.entry(key).or_insert_with(|| part.clone());
            }
            if let Some(old) = &change.old {
                let (part, key) = (self.partition_key(old), self.state_key(old));
                self.cache.get_mut(&part).expect("loaded").remove(&key);
            }
            if let Some(new) = &change.new {
                let (part, key) = (self.partition_key(new), self.state_key(new));
                let part = self.cache.get_mut(&part).expect("loaded");
                part.insert(key, new.clone());
            }
        }
        let mut builder = StreamChunkBuilder::new(CHUNK_SIZE);
        let mut out = Vec::new();
        for (key, before) in touched {
            for (op, row) in self.recompute(&key, before)? {
                out.extend(builder.append(op, row));
            }
        }
        out.extend(builder.take());
        Ok(out)
    }

    /// The window values of partition `key` recomputed; what changed against `before` (its rows with
    /// their values before the chunk), written to the table and returned as output records.
    fn recompute(
        &mut self,
        key: &[u8],
        before: Partition,
    ) -> StreamExecutorResult<Vec<(Op, OwnedRow)>> {
        let part = self.cache.get(key).expect("loaded");
        let input_columns: Vec<usize> = (0..self.input_width).collect();
        let inputs: Vec<OwnedRow> = part.values().map(|r| r.project(&input_columns)).collect();
        let mut values: Vec<Vec<Datum>> = vec![Vec::new(); inputs.len()];
        for (i, call) in self.args.calls.iter().enumerate() {
            let out = epochlab_expr::window::eval_partition(call, &self.args.order_by, &inputs)
                .map_err(|source| StreamExecutorError::WindowFunction { call: i, source })?;
            for (v, d) in values.iter_mut().zip(out) {
                v.push(d);
            }
        }
        let after: BTreeMap<Vec<u8>, OwnedRow> = inputs
            .iter()
            .zip(values)
            .map(|(r, v)| (self.stream_key(r), r.chain(&OwnedRow::new(v))))
            .collect();
        let mut old: BTreeMap<Vec<u8>, OwnedRow> = before
            .into_values()
            .map(|r| (self.stream_key(&r), r))
            .collect();
        let mut records = Vec::new();
        let mut fresh = Partition::new();
        for (sk, new) in after {
            fresh.insert(self.state_key(&new), new.clone());
            match old.remove(&sk) {
                Some(prev) if prev == new => {}
                Some(prev) => {
                    // A row whose order key changed has a new place: its old one goes.
                    if self.state_key(&prev) == self.state_key(&new) {
                        self.args.state_table.update(&prev, &new)?;
                    } else {
                        self.args.state_table.delete(&prev)?;
                        self.args.state_table.insert(&new)?;
                    }
                    records.push((Op::UpdateDelete, prev));
                    records.push((Op::UpdateInsert, new));
                }
                None => {
                    self.args.state_table.insert(&new)?;
                    records.push((Op::Insert, new));
                }
            }
        }
        let mut deletes = Vec::new();
        for gone in old.into_values() {
            self.args.state_table.delete(&gone)?;
            deletes.push((Op::Delete, gone));
        }
        deletes.append(&mut records);
        if fresh.is_empty() {
            self.cache.remove(key);
        } else {
            self.cache.insert(key.to_vec(), fresh);
        }
        Ok(deletes)
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let mut input = std::mem::replace(&mut self.args.input, Box::new(super::Taken)).execute();
        let first = expect_first_barrier(&mut input, "OverWindow").await?;
        self.args.state_table.init_epoch(first.epoch);
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Watermark(_) => {}
                Message::Chunk(chunk) => {
                    let out = self.apply_chunk(&chunk)?;
                    for c in out {
                        yield Message::Chunk(c);
                    }
                }
                Message::Barrier(barrier) => {
                    self.args.state_table.commit(barrier.epoch)?;
                    let update = barrier.as_update_vnode_bitmap(self.args.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        self.update_vnodes(vnodes)?;
                    }
                }
            }
        }
    }

    fn update_vnodes(&mut self, vnodes: Arc<Bitmap>) -> StreamExecutorResult<()> {
        self.args.state_table.update_vnode_bitmap(vnodes)?;
        self.cache.clear();
        Ok(())
    }
}

impl Execute for OverWindowExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "OverWindow(actor {}, table {})",
            self.args.actor_id,
            self.args.state_table.table_id()
        )
    }
}

#[cfg(test)]
mod tests {
    use epochlab_common::expr_node::WindowFuncKind;
    use epochlab_common::plan::top_n_table;
    use epochlab_common::{DataType, VnodeCount, WorkerId};
    use epochlab_storage::{CommittedStore, NodeStorage};

    use super::*;

    fn args(partition_by: Vec<usize>, arg: usize) -> OverWindowArgs {
        let node = NodeStorage::new(
            WorkerId(1),
            CommittedStore::default(),
            Default::default(),
            1,
        );
        // Input (p, o, v), then a `lag(v)` column.
        let types = vec![DataType::Int64; 4];
        let order_by = vec![(1, OrderType::ascending())];
        let vnodes = VnodeCount::new(16).unwrap();
        let desc = top_n_table(&types, &[0], &order_by, &[2], vnodes);
        let call = WindowFuncCall {
            kind: WindowFuncKind::Lag,
            args: vec![arg],
            arg_types: vec![DataType::Int64],
            ret: DataType::Int64,
            frame: None,
            offset: 1,
        };
        OverWindowArgs {
            actor_id: ActorId(1),
            input: Box::new(super::super::Taken),
            calls: vec![call],
            partition_by,
            order_by,
            stream_key: vec![2],
            state_table: StateTable::new(desc, &node, Arc::new(Bitmap::ones(16))),
        }
    }

    #[test]
    fn plans_it_cannot_run_are_refused() {
        assert!(OverWindowExecutor::new(args(vec![0], 2)).is_ok());
        // The state table is keyed by column 0 first, not 1.
        assert!(OverWindowExecutor::new(args(vec![1], 2)).is_err());
        // The call reads its own output column.
        assert!(OverWindowExecutor::new(args(vec![0], 3)).is_err());
    }
}
