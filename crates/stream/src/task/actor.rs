//! An actor: drives its dispatcher (which yields only barriers), reports each barrier to the node's local
//! barrier manager, exits after a barrier that stops it, and turns any error into a reported failure.

use epochlab_barrier::Barrier;
use epochlab_common::ActorId;
use futures::StreamExt;
use futures::stream::BoxStream;

use super::barrier_worker::LocalBarrierManager;
use crate::executor::StreamExecutorResult;

pub struct Actor {
    pub id: ActorId,
    pub clock: epochlab_common::Clock,
    pub consumer: BoxStream<'static, StreamExecutorResult<Barrier>>,
    pub barrier_manager: LocalBarrierManager,
}

impl Actor {
    /// Run to completion; a failure is reported to the local barrier manager, never panicked.
    pub async fn run(self) {
        let id = self.id;
        let manager = self.barrier_manager.clone();
        if let Err(e) = self.run_inner().await {
            // The local barrier manager logs it, as an ERROR line in the actor's span.
            manager.notify_failure(id, e).await;
        }
    }

    async fn run_inner(mut self) -> StreamExecutorResult<()> {
        while let Some(barrier) = self.consumer.next().await {
            let barrier = barrier?;
            let stop = barrier.is_stop(self.id);
            self.barrier_manager.collect(self.id, &barrier).await;
            if stop {
                return Ok(());
            }
        }
        Ok(())
    }
}
