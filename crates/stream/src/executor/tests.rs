//! Unit tests of executors that need no cluster.

use std::collections::BTreeSet;

use epochlab_barrier::{Barrier, BarrierKind, Mutation};
use epochlab_common::{ActorId, Epoch, EpochPair, Op, StreamChunk, row};
use futures::StreamExt;

use crate::task::exchange::{ExchangeConfig, PermitSender, permit_channel};

use super::{BoxedMessageStream, Execute, MergeExecutor, Message, StreamExecutorError};

fn barrier(curr: u64, prev: u64) -> Barrier {
    Barrier::new(
        EpochPair::new(Epoch::test(curr), Epoch::test(prev)),
        BarrierKind::Checkpoint,
        None,
    )
}

fn chunk(k: i64) -> Message {
    Message::Chunk(StreamChunk::from_pairs([(Op::Insert, row![k])]))
}

fn merge(n: usize) -> (Vec<PermitSender>, BoxedMessageStream) {
    let config = ExchangeConfig {
        initial_permits: 1024,
        batched_permits: 1,
        concurrent_barriers: 8,
    };
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..n).map(|_| permit_channel(config)).unzip();
    let ups = rxs
        .into_iter()
        .enumerate()
        .map(|(i, rx)| (ActorId(i as u32 + 10), rx))
        .collect();
    (txs, Box::new(MergeExecutor::new(ActorId(1), ups)).execute())
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

/// One barrier out only after every upstream delivered it; chunks behind a barrier wait for alignment.
#[test]
fn merge_aligns_barriers() {
    rt().block_on(async {
        let (txs, mut out) = merge(3);
        txs[0].send(barrier(2, 1).into_msg()).await.unwrap();
        txs[0].send(chunk(100)).await.unwrap(); // behind the barrier: must wait
        txs[1].send(chunk(1)).await.unwrap();
        txs[1].send(barrier(2, 1).into_msg()).await.unwrap();
        let first = out.next().await.unwrap().unwrap();
        assert!(
            matches!(first, Message::Chunk(_)),
            "the chunk ahead of upstream 1's barrier passes"
        );
        let pending = tokio::time::timeout(std::time::Duration::from_millis(10), out.next()).await;
        assert!(
            pending.is_err(),
            "nothing passes while upstream 2 has not delivered the barrier"
        );
        txs[2].send(barrier(2, 1).into_msg()).await.unwrap();
        match out.next().await.unwrap().unwrap() {
            Message::Barrier(b) => assert_eq!(b.epoch.curr, Epoch::test(2)),
            m => panic!("expected the barrier, got {m:?}"),
        }
        match out.next().await.unwrap().unwrap() {
            Message::Chunk(c) => assert_eq!(c.rows().next().unwrap().1, &row![100i64]),
            m => panic!("expected the held chunk, got {m:?}"),
        }
    });
}

#[test]
fn merge_rejects_a_different_epoch() {
    rt().block_on(async {
        let (txs, mut out) = merge(2);
        txs[0].send(barrier(2, 1).into_msg()).await.unwrap();
        txs[1].send(barrier(3, 2).into_msg()).await.unwrap();
        let err = out.next().await.unwrap().unwrap_err();
        assert!(
            matches!(err, StreamExecutorError::BarrierMisaligned { .. }),
            "{err}"
        );
        // RisingWave's words (its `AlignBarrier`), each barrier as its Debug printed one.
        let (e1, e2, e3) = (Epoch::test(1).0, Epoch::test(2).0, Epoch::test(3).0);
        assert_eq!(
            err.to_string(),
            format!(
                "Failed to align barrier: expected Barrier {{ epoch: Epoch {{ curr: {e2}, prev: {e1} }}, \
                 mutation: None, checkpoint: true }} but got Barrier {{ epoch: Epoch {{ curr: {e3}, prev: \
                 {e2} }}, mutation: None, checkpoint: true }}"
            )
        );
        assert_eq!(err.reason(), super::FailureReason::EpochOrder);
        assert!(err.reason().is_state_error());
    });
}

#[test]
fn merge_ends_after_its_stop_barrier_and_fails_on_a_closed_upstream() {
    rt().block_on(async {
        let (txs, mut out) = merge(2);
        let stop = Barrier::new(
            EpochPair::new(Epoch::test(2), Epoch::test(1)),
            BarrierKind::Checkpoint,
            Some(Mutation::Stop(BTreeSet::from([ActorId(1)]))),
        );
        for tx in &txs {
            tx.send(Message::Barrier(stop.clone())).await.unwrap();
        }
        assert!(matches!(
            out.next().await.unwrap().unwrap(),
            Message::Barrier(_)
        ));
        assert!(out.next().await.is_none());

        let (txs, mut out) = merge(2);
        drop(txs);
        let err = out.next().await.unwrap().unwrap_err();
        assert!(
            matches!(err, StreamExecutorError::ChannelClosed(_)),
            "{err}"
        );
    });
}

trait IntoMsg {
    fn into_msg(self) -> Message;
}

impl IntoMsg for Barrier {
    fn into_msg(self) -> Message {
        Message::Barrier(self)
    }
}
