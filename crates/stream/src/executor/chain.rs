//! RisingWave's `ChainExecutor` in its upstream-only mode (`StreamScanType::UpstreamOnly`): a scan that reads
//! no snapshot. It passes its upstream's messages from its first barrier on, and reports its job's progress
//! done at that barrier (there is nothing to backfill), as the temporal join's right input does.

use epochlab_barrier::CreateMviewProgress;
use epochlab_common::ActorId;
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, expect_first_barrier,
};
use crate::task::barrier_worker::LocalBarrierManager;

pub struct ChainExecutor {
    actor_id: ActorId,
    upstream: BoxedExecutor,
    barrier_manager: LocalBarrierManager,
}

impl ChainExecutor {
    pub fn new(
        actor_id: ActorId,
        upstream: BoxedExecutor,
        barrier_manager: LocalBarrierManager,
    ) -> Self {
        Self {
            actor_id,
            upstream,
            barrier_manager,
        }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let identity = self.identity();
        let mut upstream = self.upstream.execute();
        let first = expect_first_barrier(&mut upstream, &identity).await?;
        let progress = CreateMviewProgress {
            backfill_actor_id: self.actor_id,
            done: true,
            consumed_epoch: first.epoch.prev,
            consumed_rows: 0,
        };
        self.barrier_manager
            .report_progress(first.epoch.curr, progress)
            .await;
        yield Message::Barrier(first);
        #[for_await]
        for msg in upstream {
            yield msg?;
        }
    }
}

impl Execute for ChainExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!("Chain(actor {}, upstream only)", self.actor_id)
    }
}
