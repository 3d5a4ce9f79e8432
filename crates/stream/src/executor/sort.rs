use std::collections::BTreeMap;
use std::sync::Arc;

use epochlab_common::memcmp::encode_row_to_vec;
use epochlab_common::{ActorId, Bitmap, Op, OwnedRow, StreamChunk, StreamChunkBuilder};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    Watermark, expect_first_barrier,
};

epochlab_common::toggle! {
    /// A test-only mutation, no RisingWave bug: whether the EOWC sort writes the rows it buffers to its
    /// table. Its recovery test must catch `Skipped`: a rebuilt actor loads an empty buffer and the rows
    /// waiting for their window are lost.
    pub enum SortBufferWrites {
        /// Every row buffered and taken out, as RisingWave's sort buffer writes them.
        #[default]
        Written,
        /// None.
        Skipped,
    }
}

/// Rows per chunk of the rows a watermark releases.
const CHUNK_SIZE: usize = 256;

/// Emit-on-window-close for a plan with no executor of its own that waits for the window to close
/// (RisingWave's `SortExecutor`, the `StreamEowcSort` plan node): every input row waits in `buffer_table`
/// (pk: the sort column, then the input's stream key) until a watermark on the sort column passes it; then
/// the rows below the watermark go out as inserts, in sort-column order, and the watermark follows them. They
/// leave the buffer table by its table watermark (RisingWave's eager `update_watermark`), sealed with the
/// epoch: from then on no read sees them. Watermarks on other columns stop here. The buffer is mirrored in memory,
/// keyed by the memcomparable pk; a rebuilt actor loads it from the committed table.
pub struct SortExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    buffer_table: StateTable,
    sort_column_index: usize,
    /// The buffered rows by their encoded pk.
    buffer: BTreeMap<Vec<u8>, OwnedRow>,
    writes: SortBufferWrites,
}

impl SortExecutor {
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        buffer_table: StateTable,
        sort_column_index: usize,
    ) -> Self {
        assert_eq!(
            buffer_table.desc().pk_indices.first(),
            Some(&sort_column_index),
            "the sort buffer's pk starts with the sort column"
        );
        Self {
            actor_id,
            input,
            buffer_table,
            sort_column_index,
            buffer: BTreeMap::new(),
            writes: SortBufferWrites::default(),
        }
    }

    /// Under a test-only mutation (see [`SortBufferWrites`]).
    pub fn with_writes(mut self, writes: SortBufferWrites) -> Self {
        self.writes = writes;
        self
    }

    fn key(&self, row: &OwnedRow) -> Vec<u8> {
        let pk = self.buffer_table.pk_of(row);
        encode_row_to_vec(&pk, &self.buffer_table.desc().pk_orders)
    }

    /// Load the buffer from the committed table (a new or rebuilt actor, or new vnodes).
    fn refill(&mut self) -> StreamExecutorResult<()> {
        self.buffer.clear();
        for row in self.buffer_table.iter_all()? {
            let key = self.key(&row);
            self.buffer.insert(key, row);
        }
        Ok(())
    }

    /// Buffer a chunk's changes.
    fn apply_chunk(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<()> {
        for (op, row) in chunk.rows() {
            let key = self.key(row);
            let write = self.writes == SortBufferWrites::Written;
            match op {
                Op::Insert | Op::UpdateInsert => {
                    if write {
                        self.buffer_table.insert(row)?;
                    }
                    self.buffer.insert(key, row.clone());
                }
                Op::Delete | Op::UpdateDelete => {
                    if write {
                        self.buffer_table.delete(row)?;
                    }
                    self.buffer.remove(&key);
                }
            }
        }
        Ok(())
    }

    /// The buffered rows whose sort column is below `w`, taken out of the buffer, as insert chunks; the buffer
    /// table cleans them at the next commit.
    fn consume(&mut self, w: &Watermark) -> StreamExecutorResult<Vec<StreamChunk>> {
        let order = &self.buffer_table.desc().pk_orders[..1];
        let bound = encode_row_to_vec(&OwnedRow::new(vec![Some(w.val.clone())]), order);
        let rest = self.buffer.split_off(&bound);
        let below = std::mem::replace(&mut self.buffer, rest);
        let mut builder = StreamChunkBuilder::new(CHUNK_SIZE);
        let mut out = Vec::new();
        for (_, row) in below {
            out.extend(builder.append(Op::Insert, row));
        }
        out.extend(builder.take());
        self.buffer_table
            .update_watermark(Some(w.val.clone()), true);
        Ok(out)
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let mut input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        let first = expect_first_barrier(&mut input, "Sort").await?;
        self.buffer_table.init_epoch(first.epoch);
        yield Message::Barrier(first);
        self.refill()?;
        #[for_await]
        for msg in input {
            match msg? {
                Message::Watermark(w) if w.col_idx == self.sort_column_index => {
                    for chunk in self.consume(&w)? {
                        yield Message::Chunk(chunk);
                    }
                    yield Message::Watermark(w);
                }
                Message::Watermark(_) => {}
                Message::Chunk(chunk) => self.apply_chunk(&chunk)?,
                Message::Barrier(barrier) => {
                    self.buffer_table.commit(barrier.epoch)?;
                    let update = barrier.as_update_vnode_bitmap(self.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        self.update_vnodes(vnodes)?;
                    }
                }
            }
        }
    }

    fn update_vnodes(&mut self, vnodes: Arc<Bitmap>) -> StreamExecutorResult<()> {
        self.buffer_table.update_vnode_bitmap(vnodes)?;
        self.refill()
    }
}

impl Execute for SortExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Sort(actor {}, table {})",
            self.actor_id,
            self.buffer_table.table_id()
        )
    }
}
