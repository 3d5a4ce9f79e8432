use std::collections::BTreeMap;

use epochlab_barrier::Barrier;
use epochlab_common::plan::{DispatcherDesc, DispatcherKind};
use epochlab_common::{ActorId, Op, OwnedRow, StreamChunk, VirtualNode};
use futures::StreamExt;
use futures::stream::BoxStream;
use futures_async_stream::try_stream;

use super::{BoxedExecutor, Message, StreamExecutorError, StreamExecutorResult};
use crate::task::exchange::{ExchangeRegistry, PermitSender};

struct Dispatcher {
    desc: DispatcherDesc,
    outputs: BTreeMap<ActorId, PermitSender>,
}

impl Dispatcher {
    fn new(
        exchange: &ExchangeRegistry,
        generation: u64,
        actor_id: ActorId,
        desc: DispatcherDesc,
    ) -> Self {
        let outputs = desc
            .downstream_actors
            .iter()
            .map(|&down| (down, exchange.take_sender(generation, actor_id, down)))
            .collect();
        Self { desc, outputs }
    }
}

/// The consumer at the end of every actor (RisingWave's `DispatchExecutor`): sends chunks to downstream
/// actors by hash of the distribution key, to all (broadcast) or to the one (no-shuffle); sends every barrier
/// to every output; adds outputs on `Add` before sending and removes stopped ones after, and after an `Update`
/// hashes by the rescheduled fragment's new mapping; sends every watermark to every output. Yields only
/// barriers.
pub struct DispatchExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    dispatchers: Vec<Dispatcher>,
    exchange: ExchangeRegistry,
    generation: u64,
}

impl DispatchExecutor {
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        descs: &[DispatcherDesc],
        exchange: ExchangeRegistry,
        generation: u64,
    ) -> Self {
        let dispatchers = descs
            .iter()
            .map(|d| Dispatcher::new(&exchange, generation, actor_id, d.clone()))
            .collect();
        Self {
            actor_id,
            input,
            dispatchers,
            exchange,
            generation,
        }
    }

    pub fn execute(self) -> BoxStream<'static, StreamExecutorResult<Barrier>> {
        self.execute_inner().boxed()
    }

    #[try_stream(ok = Barrier, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self {
            actor_id,
            input,
            mut dispatchers,
            exchange,
            generation,
        } = self;
        #[for_await]
        for msg in input.execute() {
            match msg? {
                Message::Chunk(chunk) => {
                    for d in &dispatchers {
                        dispatch_chunk(d, &chunk).await?;
                    }
                }
                // A watermark goes to every output, whatever the dispatcher (RisingWave's
                // `dispatch_watermark`).
                Message::Watermark(w) => {
                    for d in &dispatchers {
                        for (down, tx) in &d.outputs {
                            send(*down, tx, Message::Watermark(w.clone())).await?;
                        }
                    }
                }
                Message::Barrier(barrier) => {
                    if let Some(adds) = barrier.as_add_dispatchers(actor_id) {
                        for desc in adds {
                            dispatchers.push(Dispatcher::new(
                                &exchange,
                                generation,
                                actor_id,
                                desc.clone(),
                            ));
                        }
                    }
                    for d in &dispatchers {
                        for (down, tx) in &d.outputs {
                            send(*down, tx, Message::Barrier(barrier.clone())).await?;
                        }
                    }
                    if let Some(stopped) = barrier.all_stop_actors() {
                        for d in &mut dispatchers {
                            d.outputs.retain(|a, _| !stopped.contains(a));
                        }
                        dispatchers.retain(|d| !d.outputs.is_empty());
                    }
                    // A reschedule downstream: rows after this barrier go by the new mapping.
                    for update in barrier.as_update_dispatchers(actor_id).unwrap_or_default() {
                        for d in &mut dispatchers {
                            if d.desc.downstream_fragment != update.downstream_fragment {
                                continue;
                            }
                            if let DispatcherKind::Hash { mapping, .. } = &mut d.desc.kind {
                                *mapping = update.mapping.clone();
                            }
                        }
                    }
                    yield barrier;
                }
            }
        }
    }
}

async fn send(down: ActorId, tx: &PermitSender, msg: Message) -> StreamExecutorResult<()> {
    tx.send(msg)
        .await
        .map_err(|_| StreamExecutorError::ChannelClosed(format!("to actor {down}")))
}

async fn dispatch_chunk(d: &Dispatcher, chunk: &StreamChunk) -> StreamExecutorResult<()> {
    match &d.desc.kind {
        DispatcherKind::Broadcast | DispatcherKind::NoShuffle => {
            for (down, tx) in &d.outputs {
                send(*down, tx, Message::Chunk(chunk.clone())).await?;
            }
        }
        DispatcherKind::Hash {
            dist_key_indices,
            mapping,
            vnode_count,
            row_id_key,
        } => {
            let rows: Vec<(Op, &OwnedRow)> = chunk.rows().collect();
            let owners: Vec<ActorId> = rows
                .iter()
                .map(|(_, r)| {
                    let key = dist_key_indices;
                    mapping.owner(VirtualNode::compute_dispatch(
                        r,
                        key,
                        *row_id_key,
                        *vnode_count,
                    ))
                })
                .collect();
            let mut per_output: BTreeMap<ActorId, Vec<(Op, OwnedRow)>> = BTreeMap::new();
            for (i, ((op, row), owner)) in rows.iter().zip(&owners).enumerate() {
                // An update pair whose halves land on different actors becomes a delete and an insert.
                let op = match op {
                    Op::UpdateDelete if owners.get(i + 1) != Some(owner) => Op::Delete,
                    Op::UpdateInsert if i == 0 || owners[i - 1] != *owner => Op::Insert,
                    op => *op,
                };
                per_output
                    .entry(*owner)
                    .or_default()
                    .push((op, (*row).clone()));
            }
            for (down, rows) in per_output {
                let tx = d.outputs.get(&down).ok_or_else(|| {
                    StreamExecutorError::Internal(format!(
                        "hash mapping names actor {down}, which is no output"
                    ))
                })?;
                send(down, tx, Message::Chunk(StreamChunk::from_pairs(rows))).await?;
            }
        }
    }
    Ok(())
}
