//! Window functions emitted on window close (RisingWave's `EowcOverWindowExecutor`): the input is append
//! only and arrives sorted by the order key (an EOWC sort before it releases each row once the watermark
//! passed it), so a row's window is closed once the rows its frame reaches past it have come: the row is
//! emitted then, once, with its final values. The state table holds the input rows still needed (pk: the
//! partition key, the order key, the input's stream key): a row is deleted once no window to come reaches
//! back to it. A row number, a rank or a frame from the partition's first row keeps every row, as
//! RisingWave's window states do in this mode (they cannot evict); a frame to the partition's last row
//! never closes. A rebuilt actor loads a partition from the table when a row of it first comes, and skips
//! the windows that were closed already: they were emitted in the epoch that stored their rows.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use epochlab_common::expr_node::{FrameBound, WindowFuncCall, WindowFuncKind};
use epochlab_common::memcmp::encode_row_to_vec;
use epochlab_common::{Bitmap, Datum, Op, OrderType, OwnedRow, StreamChunk, StreamChunkBuilder};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::super::{
    BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};
use super::{OverWindowArgs, OverWindowStateWrites};

/// Rows per output chunk.
const CHUNK_SIZE: usize = 256;

/// A partition's rows still needed, in order, and how many of them were emitted.
#[derive(Default)]
struct Partition {
    rows: VecDeque<OwnedRow>,
    emitted: usize,
}

pub struct EowcOverWindowExecutor {
    args: OverWindowArgs,
    /// The one order column (ascending, with a watermark).
    order_key: usize,
    /// Rows before a window's current row that some call reads (`None`: back to the partition's first).
    preceding: Option<usize>,
    /// Rows after it that some call reads (`None`: to the partition's last: the window never closes).
    following: Option<usize>,
    partition_orders: Vec<OrderType>,
    cache: BTreeMap<Vec<u8>, Partition>,
}

/// How far before and after its current row a call reads (`None`: unbounded).
fn reach(call: &WindowFuncCall) -> (Option<usize>, Option<usize>) {
    let bound = |b: FrameBound, before: bool| match b {
        FrameBound::UnboundedPreceding | FrameBound::UnboundedFollowing => None,
        FrameBound::Preceding(k) => Some(if before { k } else { 0 }),
        FrameBound::Following(k) => Some(if before { 0 } else { k }),
        FrameBound::CurrentRow => Some(0),
    };
    match call.kind {
        WindowFuncKind::RowNumber | WindowFuncKind::Rank | WindowFuncKind::DenseRank => {
            (None, Some(0))
        }
        WindowFuncKind::Lag => (Some(call.offset), Some(0)),
        WindowFuncKind::Lead => (Some(0), Some(call.offset)),
        WindowFuncKind::Aggregate(_) => match call.frame {
            // The default frame of an ordered window: from the partition's first row to this one.
            None => (None, Some(0)),
            Some(f) => (bound(f.start, true), bound(f.end, false)),
        },
    }
}

/// The larger reach; unbounded is larger than any.
fn wider(a: Option<usize>, b: Option<usize>) -> Option<usize> {
    a.zip(b).map(|(a, b)| a.max(b))
}

impl EowcOverWindowExecutor {
    /// The executor, or why its plan cannot run: one order column, ascending; the state table's columns are
    /// the input's, its pk starts with the partition key then the order key, and keys and arguments read
    /// input columns. The plan's fields are the general over window's (`OverWindowArgs`).
    pub fn new(args: OverWindowArgs) -> StreamExecutorResult<Self> {
        let desc = args.state_table.desc().clone();
        let bad = |problem| Err(StreamExecutorError::OverWindowPlan { problem });
        let order_key = match args.order_by.as_slice() {
            [(c, o)] if *o == OrderType::ascending() => *c,
            _ => return bad("an EOWC over window orders by one column, ascending"),
        };
        let width = desc.column_types.len();
        let mut key = args.partition_by.clone();
        key.push(order_key);
        if desc.pk_indices.get(..key.len()) != Some(&key[..]) {
            return bad("the state table's pk does not start with the partition and order keys");
        }
        let call_args = args.calls.iter().flat_map(|c| &c.args);
        if args.stream_key.iter().chain(call_args).any(|&c| c >= width) {
            return bad("a key or argument column is not an input column");
        }
        let (mut preceding, mut following) = (Some(0), Some(0));
        for call in &args.calls {
            let (p, f) = reach(call);
            preceding = wider(preceding, p);
            following = wider(following, f);
        }
        Ok(Self {
            partition_orders: vec![OrderType::ascending(); args.partition_by.len()],
            order_key,
            preceding,
            following,
            args,
            cache: BTreeMap::new(),
        })
    }

    fn partition_key(&self, row: &OwnedRow) -> Vec<u8> {
        encode_row_to_vec(
            &row.project(&self.args.partition_by),
            &self.partition_orders,
        )
    }

    /// How many of `len` rows have closed windows: those with `following` rows after them.
    fn closed(&self, len: usize) -> usize {
        self.following.map_or(0, |f| len.saturating_sub(f))
    }

    /// The partition of `row`, loaded from the table if it is not cached: its windows closed already
    /// (every row with its following rows stored) were emitted.
    fn load_partition(&mut self, row: &OwnedRow) -> StreamExecutorResult<Vec<u8>> {
        let key = self.partition_key(row);
        if self.cache.contains_key(&key) {
            return Ok(key);
        }
        let rows: VecDeque<OwnedRow> =
            super::partition_rows(&self.args.state_table, &self.args.partition_by, row)?.into();
        let emitted = self.closed(rows.len());
        self.cache.insert(key.clone(), Partition { rows, emitted });
        Ok(key)
    }

    /// Apply a chunk (inserts only): each row stored and added to its partition, then each touched
    /// partition's newly closed windows emitted and the rows no window reaches any more deleted.
    fn apply_chunk(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<Vec<StreamChunk>> {
        let mut touched: Vec<Vec<u8>> = Vec::new();
        for (op, row) in chunk.rows() {
            if !matches!(op, Op::Insert) {
                return Err(StreamExecutorError::NotAppendOnly {
                    executor: "EowcOverWindow".into(),
                    row: format!("{row:?}"),
                });
            }
            let key = self.load_partition(row)?;
            if self.args.state_writes == OverWindowStateWrites::Written {
                self.args.state_table.insert(row)?;
            }
            self.cache
                .get_mut(&key)
                .expect("loaded")
                .rows
                .push_back(row.clone());
            if !touched.contains(&key) {
                touched.push(key);
            }
        }
        let mut builder = StreamChunkBuilder::new(CHUNK_SIZE);
        let mut out = Vec::new();
        for key in touched {
            for row in self.emit_closed(&key)? {
                out.extend(builder.append(Op::Insert, row));
            }
            self.evict(&key)?;
        }
        out.extend(builder.take());
        Ok(out)
    }

    /// The rows of partition `key` whose windows closed since they were last emitted, with their values.
    fn emit_closed(&mut self, key: &[u8]) -> StreamExecutorResult<Vec<OwnedRow>> {
        let closed = self.closed(self.cache[key].rows.len());
        let part = self.cache.get_mut(key).expect("loaded");
        if closed <= part.emitted {
            return Ok(Vec::new());
        }
        let rows = part.rows.make_contiguous();
        let order_by = [(self.order_key, OrderType::ascending())];
        let mut columns = Vec::with_capacity(self.args.calls.len());
        for (i, call) in self.args.calls.iter().enumerate() {
            let values = epochlab_expr::window::eval_partition(call, &order_by, rows)
                .map_err(|source| StreamExecutorError::WindowFunction { call: i, source })?;
            columns.push(values);
        }
        let out = (part.emitted..closed)
            .map(|i| {
                let values: Vec<Datum> = columns.iter().map(|c| c[i].clone()).collect();
                rows[i].chain(&OwnedRow::new(values))
            })
            .collect();
        part.emitted = closed;
        Ok(out)
    }

    /// The rows of partition `key` before the reach of its next window, deleted from the table.
    fn evict(&mut self, key: &[u8]) -> StreamExecutorResult<()> {
        let Some(preceding) = self.preceding else {
            return Ok(());
        };
        let part = self.cache.get_mut(key).expect("loaded");
        let gone = part.emitted.saturating_sub(preceding);
        for row in part.rows.drain(..gone) {
            if self.args.state_writes == OverWindowStateWrites::Written {
                self.args.state_table.delete(&row)?;
            }
        }
        part.emitted -= gone;
        Ok(())
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let taken = Box::new(super::super::Taken);
        let mut input = std::mem::replace(&mut self.args.input, taken).execute();
        let first = expect_first_barrier(&mut input, "EowcOverWindow").await?;
        self.args.state_table.init_epoch(first.epoch);
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                // Rows of a partition may wait for rows after them: no watermark can go on.
                Message::Watermark(_) => {}
                Message::Chunk(chunk) => {
                    for c in self.apply_chunk(&chunk)? {
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

impl Execute for EowcOverWindowExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "EowcOverWindow(actor {}, table {})",
            self.args.actor_id,
            self.args.state_table.table_id()
        )
    }
}
