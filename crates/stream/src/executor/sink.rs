use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use epochlab_common::plan::{SinkDesc, SinkKind};
use epochlab_common::{ActorId, Epoch, Op, OrderType, OwnedRow, TableId, memcmp};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, expect_first_barrier,
};

/// A sink. `Blackhole` drops everything; `Collecting` stages each checkpoint's changes in the
/// [`SinkRegistry`], where they become visible once meta has committed that epoch, so that what a check reads
/// is exactly-once across recoveries. Each chunk takes `chunk_delay` of simulated time.
pub struct SinkExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    desc: SinkDesc,
    registry: SinkRegistry,
}

impl SinkExecutor {
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        desc: SinkDesc,
        registry: SinkRegistry,
    ) -> Self {
        Self {
            actor_id,
            input,
            desc,
            registry,
        }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let mut input = self.input.execute();
        let first = expect_first_barrier(&mut input, "Sink").await?;
        yield Message::Barrier(first);
        let collecting = self.desc.kind == SinkKind::Collecting;
        let mut buffer: Vec<(Op, OwnedRow)> = Vec::new();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    if !self.desc.chunk_delay.is_zero() {
                        tokio::time::sleep(self.desc.chunk_delay).await;
                    }
                    if collecting {
                        buffer.extend(chunk.rows().map(|(op, r)| (op.normalize(), r.clone())));
                    }
                    yield Message::Chunk(chunk);
                }
                Message::Barrier(barrier) => {
                    if collecting && barrier.is_checkpoint() {
                        self.registry.stage(
                            self.desc.sink_id,
                            self.actor_id,
                            barrier.epoch.prev,
                            std::mem::take(&mut buffer),
                        );
                    }
                    yield Message::Barrier(barrier);
                }
                // A sink passes no watermark on (it has no downstream).
                Message::Watermark(_) => {}
            }
        }
    }
}

impl Execute for SinkExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Sink({}, actor {})", self.desc.sink_id, self.actor_id)
    }
}

/// What collecting sinks have received, shared by the whole simulated cluster (it stands for the external
/// system a sink writes to).
#[derive(Clone, Default)]
pub struct SinkRegistry {
    inner: Arc<Mutex<BTreeMap<TableId, CollectedSink>>>,
}

/// One collecting sink's contents.
#[derive(Default)]
pub struct CollectedSink {
    pk_indices: Vec<usize>,
    /// Rows by memcomparable pk, as of the last applied epoch.
    rows: BTreeMap<Vec<u8>, OwnedRow>,
    /// Changes of epochs not yet known to be committed, by epoch and actor.
    staged: BTreeMap<(Epoch, ActorId), Vec<(Op, OwnedRow)>>,
    /// Inserts of a present pk and deletes of an absent one: each is a duplicate or a lost row.
    pub anomalies: Vec<String>,
}

impl SinkRegistry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<TableId, CollectedSink>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Create the sink's target unless it exists (the first actor built for the sink does it).
    pub fn ensure(&self, sink_id: TableId, pk_indices: &[usize]) {
        self.lock().entry(sink_id).or_insert_with(|| CollectedSink {
            pk_indices: pk_indices.to_vec(),
            ..Default::default()
        });
    }

    fn stage(&self, sink_id: TableId, actor: ActorId, epoch: Epoch, changes: Vec<(Op, OwnedRow)>) {
        if let Some(s) = self.lock().get_mut(&sink_id) {
            s.staged.entry((epoch, actor)).or_default().extend(changes);
        }
    }

    /// Recovery: changes of epochs above the committed one will be replayed; forget them.
    pub fn discard_above(&self, committed: Epoch, actors: &BTreeSet<ActorId>) {
        for s in self.lock().values_mut() {
            s.staged
                .retain(|(e, a), _| *e <= committed || !actors.contains(a));
        }
    }

    /// Apply staged changes of the epochs up to `committed` that `was_committed` (the others were abandoned by
    /// a recovery: their actors died before a reset could discard them); return the sink's rows (in pk order)
    /// and anomalies.
    pub fn committed_rows(
        &self,
        sink_id: TableId,
        committed: Epoch,
        was_committed: impl Fn(Epoch) -> bool,
    ) -> Option<(Vec<OwnedRow>, Vec<String>)> {
        let mut all = self.lock();
        let s = all.get_mut(&sink_id)?;
        let later = s.staged.split_off(&(Epoch(committed.0 + 1), ActorId(0)));
        let ready = std::mem::replace(&mut s.staged, later);
        for ((epoch, _), changes) in ready.into_iter().filter(|((e, _), _)| was_committed(*e)) {
            for (op, row) in changes {
                let pk = row.project(&s.pk_indices);
                let key = memcmp::encode_row_to_vec(&pk, &vec![OrderType::ascending(); pk.len()]);
                match op {
                    Op::Insert => {
                        if s.rows.insert(key, row).is_some() {
                            s.anomalies
                                .push(format!("epoch {epoch}: duplicate insert of {pk:?}"));
                        }
                    }
                    _ => {
                        if s.rows.remove(&key).is_none() {
                            s.anomalies
                                .push(format!("epoch {epoch}: delete of missing {pk:?}"));
                        }
                    }
                }
            }
        }
        Some((s.rows.values().cloned().collect(), s.anomalies.clone()))
    }
}
