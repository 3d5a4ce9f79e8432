use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use epochlab_common::plan::ConflictBehavior;
use epochlab_common::{ActorId, Op, OwnedRow, StreamChunk, memcmp};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    expect_first_barrier,
};

/// Writes every change into the table's state table and forwards it; commits on each barrier before
/// yielding it, and takes the actor's new vnode bitmap (a reschedule) or its table's new schema (`ALTER TABLE`)
/// after. With a conflict behavior other
/// than `NoCheck` (RisingWave's materialize with its conflict handling), each chunk's changes are folded per
/// pk against the stored row first: an insert of a stored pk overwrites it (`Overwrite`: an update of the
/// stored row goes out) or is dropped (`IgnoreConflict`); a delete of a pk not stored is dropped; a delete
/// removes, and forwards, the stored row.
pub struct MaterializeExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    writer: Writer,
}

/// The state table and how conflicts are handled.
struct Writer {
    table: StateTable,
    conflict: ConflictBehavior,
}

/// One pk's change within a chunk: the stored row before the chunk, and the row after it.
struct KeyChange {
    before: Option<OwnedRow>,
    after: Option<OwnedRow>,
}

impl MaterializeExecutor {
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        table: StateTable,
        conflict: ConflictBehavior,
    ) -> Self {
        Self {
            actor_id,
            input,
            writer: Writer { table, conflict },
        }
    }
}

impl Writer {
    /// A chunk of DML sent before `ALTER TABLE .. ADD COLUMN` reached this actor, at the table's width:
    /// NULL in the columns added since (RisingWave refuses such a DML by its table version; here it goes in
    /// as a row of the table's older columns). Any other chunk as it is.
    fn to_table_width(&self, chunk: StreamChunk) -> StreamChunk {
        // A chunk's rows come from one writer, all of one width: its first row tells.
        let width = self.table.desc().column_types.len();
        if chunk.rows().next().is_none_or(|(_, r)| r.len() >= width) {
            return chunk;
        }
        StreamChunk::from_pairs(chunk.rows().map(|(op, r)| {
            let mut datums = r.clone().into_inner();
            if datums.len() < width {
                datums.resize(width, None);
            }
            (op, OwnedRow::new(datums))
        }))
    }

    /// Fold a chunk's visible changes per pk (in pk order, by the pk's memcomparable key), against the
    /// stored rows.
    fn fold(&self, chunk: &StreamChunk) -> StreamExecutorResult<BTreeMap<Vec<u8>, KeyChange>> {
        let orders = &self.table.desc().pk_orders;
        let mut changes: BTreeMap<Vec<u8>, KeyChange> = BTreeMap::new();
        for (op, row) in chunk.rows() {
            let pk = self.table.pk_of(row);
            let key = memcmp::encode_row_to_vec(&pk, orders);
            let change = match changes.entry(key) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let before = self.table.get_row(&pk)?;
                    e.insert(KeyChange {
                        after: before.clone(),
                        before,
                    })
                }
            };
            match (op.is_insert(), self.conflict) {
                (true, ConflictBehavior::IgnoreConflict) if change.after.is_some() => {}
                (true, _) => change.after = Some(row.clone()),
                (false, _) => change.after = None,
            }
        }
        Ok(changes)
    }

    /// Write a chunk with conflict handling; the changes that went in, to forward.
    fn write_checked(&mut self, chunk: &StreamChunk) -> StreamExecutorResult<StreamChunk> {
        let mut out = Vec::new();
        for (_, c) in self.fold(chunk)? {
            match (c.before, c.after) {
                (None, None) => {}
                (None, Some(new)) => {
                    self.table.insert(&new)?;
                    out.push((Op::Insert, new));
                }
                (Some(old), None) => {
                    self.table.delete(&old)?;
                    out.push((Op::Delete, old));
                }
                (Some(old), Some(new)) if old == new => {}
                (Some(old), Some(new)) => {
                    self.table.update(&old, &new)?;
                    out.push((Op::UpdateDelete, old));
                    out.push((Op::UpdateInsert, new));
                }
            }
        }
        Ok(StreamChunk::from_pairs(out))
    }

    /// Write a chunk; what to forward (`None`: nothing).
    fn write(&mut self, chunk: StreamChunk) -> StreamExecutorResult<Option<StreamChunk>> {
        let chunk = self.to_table_width(chunk);
        let out = match self.conflict {
            ConflictBehavior::NoCheck => {
                self.table.write_chunk(&chunk)?;
                chunk
            }
            ConflictBehavior::Overwrite | ConflictBehavior::IgnoreConflict => {
                self.write_checked(&chunk)?
            }
        };
        Ok((!out.is_empty()).then_some(out))
    }
}

impl MaterializeExecutor {
    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let mut input = self.input.execute();
        let actor_id = self.actor_id;
        let w = &mut self.writer;
        let first = expect_first_barrier(&mut input, "Materialize").await?;
        w.table.init_epoch(first.epoch);
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    if let Some(out) = w.write(chunk)? {
                        yield Message::Chunk(out);
                    }
                }
                Message::Watermark(wm) => yield Message::Watermark(wm),
                Message::Barrier(barrier) => {
                    w.table.commit(barrier.epoch)?;
                    assert_eq!(
                        w.table.epoch()?,
                        barrier.epoch,
                        "state committed before the barrier is yielded"
                    );
                    let update = barrier.as_update_vnode_bitmap(actor_id);
                    let schema = barrier.as_update_table_desc(w.table.table_id());
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        w.table.update_vnode_bitmap(vnodes)?;
                    }
                    if let Some(desc) = schema {
                        w.table.update_desc(desc)?;
                    }
                }
            }
        }
    }
}

impl Execute for MaterializeExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "Materialize(table {}, {:?})",
            self.writer.table.table_id(),
            self.writer.conflict
        )
    }
}
