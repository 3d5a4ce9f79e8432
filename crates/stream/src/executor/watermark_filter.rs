use std::ops::Bound;
use std::sync::Arc;

use epochlab_common::{
    ActorId, Bitmap, DataType, ExprNode, OwnedRow, ScalarImpl, StreamChunk, VirtualNode,
};
use epochlab_state_table::StateTable;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::filter::filter_chunk;
use super::non_strict::NonStrict;
use super::watermark::cmp_watermark;
use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, StreamExecutorResult,
    Watermark, expect_first_barrier,
};

epochlab_common::toggle! {
    /// A test-only mutation, no RisingWave bug: whether a watermark filter writes its watermark at each
    /// checkpoint. Its recovery test must catch `Never` (a rebuilt actor forgets the watermark and takes
    /// late rows).
    pub enum WatermarkPersist {
        /// At each checkpoint where it moved, as RisingWave writes it.
        #[default]
        AtCheckpoint,
        /// Never.
        Never,
    }
}

epochlab_common::toggle! {
    /// RisingWave #8440 (fixed by #8442): what the watermark filter's recovery read makes of vnodes without a
    /// stored watermark. Read only by the executor's first read (`WatermarkFilterExecutor::recover`).
    pub enum WatermarkRecovery {
        /// Before #8442: every vnode must have one or none may (`bail!`), though a vnode that never saw a row
        /// has none.
        AllOrNone,
        /// #8442: the largest of those present.
        #[default]
        MaxOfPresent,
    }
}

/// A table's or source's `WATERMARK FOR col AS expr` (RisingWave's `WatermarkFilterExecutor`): the
/// watermark is the largest value of `expr` over the rows seen; a row whose event time is below the
/// watermark as it stood before the row's chunk is dropped (late), and after each chunk the watermark goes
/// downstream on the event time column. At each checkpoint the watermark is written for every vnode of the
/// actor in `table` (pk: the `Int16` vnode; value: the watermark); a rebuilt actor starts from the largest
/// watermark over every vnode's row, its own (`table`) and the other actors' (`others`, read only). An
/// actor that saw no row since the last checkpoint takes that largest watermark at the checkpoint too, so an
/// idle actor does not hold back the minimum a merge downstream passes.
pub struct WatermarkFilterExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    event_time_col: usize,
    watermark_expr: ExprNode,
    watermark_type: DataType,
    eval: NonStrict,
    table: StateTable,
    others: StateTable,
    persist: WatermarkPersist,
    recovery: WatermarkRecovery,
}

impl WatermarkFilterExecutor {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        event_time_col: usize,
        watermark_expr: ExprNode,
        watermark_type: DataType,
        eval: NonStrict,
        table: StateTable,
        others: StateTable,
        toggles: (WatermarkPersist, WatermarkRecovery),
    ) -> Self {
        assert_eq!(
            table.desc().pk_indices,
            vec![0],
            "the watermark table is keyed by the vnode"
        );
        Self {
            actor_id,
            input,
            event_time_col,
            watermark_expr,
            watermark_type,
            eval,
            table,
            others,
            persist: toggles.0,
            recovery: toggles.1,
        }
    }

    /// The largest watermark stored for any vnode, by this actor or another (RisingWave's
    /// `get_global_max_watermark`).
    fn global_max(&self) -> StreamExecutorResult<Option<ScalarImpl>> {
        Ok(self
            .stored()?
            .into_iter()
            .flatten()
            .reduce(|a, b| higher(Some(a), b)))
    }

    /// Each vnode's stored watermark, this actor's and the others'.
    fn stored(&self) -> StreamExecutorResult<Vec<Option<ScalarImpl>>> {
        let mut out = Vec::new();
        for t in [&self.table, &self.others] {
            for v in t.vnodes().iter_ones() {
                let range = (Bound::Unbounded, Bound::Unbounded);
                let mut rows = t.iter_with_vnode(VirtualNode::from_index(v), range)?;
                out.push(match rows.next() {
                    Some(row) => row?.datum_at(1).clone(),
                    None => None,
                });
            }
        }
        Ok(out)
    }

    /// The watermark a new or rebuilt actor starts from: the largest stored; before #8442
    /// ([`WatermarkRecovery::AllOrNone`]) an error unless every vnode has one or none has.
    fn recover(&self) -> StreamExecutorResult<Option<ScalarImpl>> {
        let stored = self.stored()?;
        let with = stored.iter().filter(|w| w.is_some()).count();
        let without = stored.len() - with;
        if self.recovery == WatermarkRecovery::AllOrNone && with > 0 && without > 0 {
            return Err(StreamExecutorError::WatermarkVnodesDiffer { with, without });
        }
        Ok(stored
            .into_iter()
            .flatten()
            .reduce(|a, b| higher(Some(a), b)))
    }

    /// The rows of `chunk` at or above `watermark`, and the watermark after them.
    fn filter(
        &self,
        chunk: &StreamChunk,
        watermark: Option<ScalarImpl>,
    ) -> (StreamChunk, Option<ScalarImpl>) {
        let mut next = watermark.clone();
        for (_, row) in chunk.rows() {
            if let Some(w) = self.eval.eval(&self.watermark_expr, row) {
                next = Some(higher(next, w));
            }
        }
        let Some(w) = watermark else {
            return (chunk.clone(), next);
        };
        let col = self.event_time_col;
        let on_time = |row: &OwnedRow| {
            row.datum_at(col)
                .as_ref()
                .is_some_and(|t| cmp_watermark(t, &w).is_ge())
        };
        (filter_chunk(chunk, on_time), next)
    }

    /// Write `watermark` for every vnode of the actor (an upsert: the table is inconsistent-op).
    fn persist(&mut self, watermark: &ScalarImpl) -> StreamExecutorResult<()> {
        if self.persist == WatermarkPersist::Never {
            return Ok(());
        }
        let vnodes: Vec<usize> = self.table.vnodes().iter_ones().collect();
        for v in vnodes {
            let vnode = VirtualNode::from_index(v).to_scalar();
            let row = OwnedRow::new(vec![Some(vnode), Some(watermark.clone())]);
            self.table.insert(&row)?;
        }
        Ok(())
    }

    fn watermark(&self, val: &ScalarImpl) -> Message {
        let ty = self.watermark_type.clone();
        Message::Watermark(Watermark::new(self.event_time_col, ty, val.clone()))
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let mut input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        let first = expect_first_barrier(&mut input, "WatermarkFilter").await?;
        self.table.init_epoch(first.epoch);
        self.others.init_epoch(first.epoch);
        yield Message::Barrier(first);
        let mut current = self.recover()?;
        if let Some(w) = &current {
            yield self.watermark(w);
        }
        let mut last_persisted: Option<ScalarImpl> = None;
        let mut idle = true;
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    let (out, next) = self.filter(&chunk, current.clone());
                    current = next;
                    if !out.is_empty() {
                        yield Message::Chunk(out);
                    }
                    if let Some(w) = &current {
                        idle = false;
                        yield self.watermark(w);
                    }
                }
                Message::Watermark(w) if w.col_idx == self.event_time_col => {
                    if current
                        .as_ref()
                        .is_some_and(|c| cmp_watermark(c, &w.val).is_lt())
                    {
                        current = Some(w.val.clone());
                        idle = false;
                        yield Message::Watermark(w);
                    }
                }
                Message::Watermark(w) => yield Message::Watermark(w),
                Message::Barrier(barrier) => {
                    let checkpoint = barrier.is_checkpoint();
                    if checkpoint && last_persisted != current {
                        if let Some(w) = &current {
                            self.persist(w)?;
                        }
                        last_persisted = current.clone();
                    }
                    self.table.commit(barrier.epoch)?;
                    self.others.commit(barrier.epoch)?;
                    if checkpoint && std::mem::replace(&mut idle, true) {
                        if let Some(global) = self.global_max()? {
                            current = Some(higher(current, global));
                        }
                        if let Some(w) = &current {
                            yield self.watermark(w);
                        }
                    }
                    let update = barrier.as_update_vnode_bitmap(self.actor_id);
                    yield Message::Barrier(barrier);
                    if let Some(vnodes) = update {
                        self.update_vnodes(vnodes)?;
                        current = self.global_max()?;
                    }
                }
            }
        }
    }

    /// A reschedule gave the actor `vnodes`: the others' table reads the rest.
    fn update_vnodes(&mut self, vnodes: Arc<Bitmap>) -> StreamExecutorResult<()> {
        let others = Bitmap::from_bools(
            &(0..vnodes.len())
                .map(|v| !vnodes.is_set(v))
                .collect::<Vec<_>>(),
        );
        self.table.update_vnode_bitmap(vnodes)?;
        self.others.update_vnode_bitmap(Arc::new(others))?;
        Ok(())
    }
}

/// The higher of a watermark and a value.
fn higher(current: Option<ScalarImpl>, v: ScalarImpl) -> ScalarImpl {
    match current {
        Some(c) if cmp_watermark(&c, &v).is_ge() => c,
        _ => v,
    }
}

impl Execute for WatermarkFilterExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "WatermarkFilter(actor {}, table {})",
            self.actor_id,
            self.table.table_id()
        )
    }
}
