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
use std::sync::Arc;

use epochlab_common::expr_node::WindowFuncCall;
use epochlab_common::memcmp::encode_row_to_vec;
use epochlab_common::{
    ActorId, Bitmap, Datum, Op, OrderType, OwnedRow, StreamChunk, StreamChunkBuilder,
};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

epochlab_common::toggle! {
    /// A test-only mutation, no RisingWave bug: whether an over window (general or EOWC) writes its
    /// partitions' rows to its state table. Their recovery tests must catch `Skipped`: a rebuilt actor
    /// loads its partitions empty.
    pub enum OverWindowStateWrites {
        /// Every row's insert, update and delete, as RisingWave's executor writes them.
        #[default]
        Written,
        /// None.
        Skipped,
    }
}

/// Rows per output chunk.
const CHUNK_SIZE: usize = 256;

/// A partition's rows with their window values, by their encoded state-table pk (so in order).
type Partition = BTreeMap<Vec<u8>, OwnedRow>;

/// What a chunk did to one partition: the rows it took out (their output rows, by encoded stream key) and
/// the rows it put in (their encoded state-table pk, to their encoded stream key).
#[derive(Default)]
struct Touched {
    removed: BTreeMap<Vec<u8>, OwnedRow>,
    added: BTreeMap<Vec<u8>, Vec<u8>>,
}

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
    pub state_writes: OverWindowStateWrites,
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
        state_key_of(&self.args.state_table, row)
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
        let mut part = Partition::new();
        for stored in super::partition_rows(&self.args.state_table, &self.args.partition_by, row)? {
            part.insert(self.state_key(&stored), stored);
        }
        self.cache.insert(key.clone(), part);
        Ok(key)
    }

    /// Apply a chunk: its changes to the partitions they touch, then each touched partition's output changes.
    fn apply_chunk(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<Vec<StreamChunk>> {
        let mut touched: BTreeMap<Vec<u8>, Touched> = BTreeMap::new();
        for (sk, change) in self.merge_changes(chunk) {
            if let Some(old) = &change.old {
                let part = self.load_partition(old)?;
                let state_key = self.state_key(old);
                let gone = self
                    .cache
                    .get_mut(&part)
                    .expect("loaded")
                    .remove(&state_key);
                // A row the table does not hold (a delete of nothing) has no output to retract.
                if let Some(gone) = gone {
                    touched
                        .entry(part)
                        .or_default()
                        .removed
                        .insert(sk.clone(), gone);
                }
            }
            if let Some(new) = &change.new {
                let part = self.load_partition(new)?;
                let state_key = self.state_key(new);
                let placed = new.chain(&OwnedRow::new(vec![None; self.args.calls.len()]));
                self.cache
                    .get_mut(&part)
                    .expect("loaded")
                    .insert(state_key.clone(), placed);
                touched.entry(part).or_default().added.insert(state_key, sk);
            }
        }
        let mut builder = StreamChunkBuilder::new(CHUNK_SIZE);
        let mut out = Vec::new();
        for (key, t) in touched {
            for (op, row) in self.recompute(&key, t)? {
                out.extend(builder.append(op, row));
            }
        }
        out.extend(builder.take());
        Ok(out)
    }

    /// The window values of partition `key` recomputed after the changes `t`; what changed (a row's values,
    /// a row gone, added or updated), written to the table and returned as output records. A row the chunk
    /// did not change holds its values from before in the cache: it is emitted only if they change.
    fn recompute(
        &mut self,
        key: &[u8],
        mut t: Touched,
    ) -> StreamExecutorResult<Vec<(Op, OwnedRow)>> {
        let width = self.input_width;
        let part = self.cache.get_mut(key).expect("loaded");
        let rows: Vec<&OwnedRow> = part.values().collect();
        let mut values: Vec<Vec<Datum>> =
            vec![Vec::with_capacity(self.args.calls.len()); rows.len()];
        for (i, call) in self.args.calls.iter().enumerate() {
            let out = epochlab_expr::window::eval_partition(call, &self.args.order_by, &rows)
                .map_err(|source| StreamExecutorError::WindowFunction { call: i, source })?;
            for (v, d) in values.iter_mut().zip(out) {
                v.push(d);
            }
        }
        // Each change written as it is found: a row that keeps its place as an update, one whose order key
        // moved it as a delete and an insert, a gone row as a delete.
        let write = self.args.state_writes == OverWindowStateWrites::Written;
        let table = &mut self.args.state_table;
        let mut records = Vec::new();
        for ((state_key, row), v) in part.iter_mut().zip(values) {
            if let Some(sk) = t.added.remove(state_key) {
                let new = OwnedRow::new(row.datums()[..width].iter().cloned().chain(v).collect());
                *row = new.clone();
                match t.removed.remove(&sk) {
                    Some(prev) if prev == new => {}
                    Some(prev) => {
                        if write && state_key_of(table, &prev) == *state_key {
                            table.update(&prev, &new)?;
                        } else if write {
                            table.delete(&prev)?;
                            table.insert(&new)?;
                        }
                        records.push((Op::UpdateDelete, prev));
                        records.push((Op::UpdateInsert, new));
                    }
                    None => {
                        if write {
                            table.insert(&new)?;
                        }
                        records.push((Op::Insert, new));
                    }
                }
            } else if row.datums()[width..] != v[..] {
                let prev = row.clone();
                *row = OwnedRow::new(row.datums()[..width].iter().cloned().chain(v).collect());
                if write {
                    table.update(&prev, row)?;
                }
                records.push((Op::UpdateDelete, prev));
                records.push((Op::UpdateInsert, row.clone()));
            }
        }
        if part.is_empty() {
            self.cache.remove(key);
        }
        let mut out = Vec::with_capacity(t.removed.len() + records.len());
        for gone in t.removed.into_values() {
            if write {
                table.delete(&gone)?;
            }
            out.push((Op::Delete, gone));
        }
        out.append(&mut records);
        Ok(out)
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let mut input =
            std::mem::replace(&mut self.args.input, Box::new(super::super::Taken)).execute();
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

/// `row`'s encoded pk in `table`.
fn state_key_of(table: &StateTable, row: &OwnedRow) -> Vec<u8> {
    encode_row_to_vec(&table.pk_of(row), &table.desc().pk_orders)
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
            input: Box::new(super::super::super::Taken),
            calls: vec![call],
            partition_by,
            order_by,
            stream_key: vec![2],
            state_table: StateTable::new(desc, &node, Arc::new(Bitmap::ones(16))),
            state_writes: OverWindowStateWrites::default(),
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
