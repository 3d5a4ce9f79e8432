//! The node's answers to meta's `barrier_complete`: an epoch the node is collecting is awaited, one it has no
//! trace of (never injected, reset, or injected into an earlier run of a restarted node) is an error at once,
//! as RisingWave's `pop_completed_epoch` answers: waiting for it would wait forever.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use epochlab_barrier::{Barrier, BarrierKind};
use epochlab_common::{Clock, Epoch, EpochPair, EventLog, SimRng, WorkerId};
use epochlab_rpc::{Network, RemoteErrorKind, Request, Response, RpcError};
use epochlab_storage::{CommittedStore, HummockManager};

use super::build::ActorFailureLog;
use super::compute_node::{ComputeEnv, ComputeNode, StreamConfig};
use super::exchange::{ExchangeConfig, ExchangeRegistry};
use crate::executor::{BackfillRegistry, SinkRegistry};

const WORKER: WorkerId = WorkerId(1);

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

fn env() -> ComputeEnv {
    let clock = Clock::virtual_from(0);
    ComputeEnv {
        network: Network::new(SimRng::new(7)),
        hummock: Arc::new(HummockManager::new(CommittedStore::default(), None)),
        exchange: ExchangeRegistry::new(ExchangeConfig::default()),
        sinks: SinkRegistry::default(),
        backfill: BackfillRegistry::default(),
        log: EventLog::new(clock.clone()),
        clock,
        config: StreamConfig::default(),
        heartbeat: None,
        failures: ActorFailureLog::default(),
        access_observer: None,
    }
}

/// An Initial barrier with nothing to collect: the node completes it as soon as it is injected.
async fn inject_initial(network: &Network, prev: Epoch) {
    let barrier = Barrier::new(
        EpochPair::new(Epoch::test(prev.physical_time() + 1), prev),
        BarrierKind::Initial,
        None,
    );
    let request = Request::InjectBarrier {
        barrier,
        to_send: BTreeSet::new(),
        to_collect: BTreeSet::new(),
    };
    let answer = network.call(WORKER, request).await;
    assert!(matches!(answer, Ok(Response::Ack)), "inject: {answer:?}");
}

/// Meta's `barrier_complete(prev)`, bounded: a node that would never answer fails the test.
async fn barrier_complete(network: &Network, prev: Epoch) -> Result<Response, RpcError> {
    let request = Request::BarrierComplete { prev_epoch: prev };
    tokio::time::timeout(Duration::from_secs(60), network.call(WORKER, request))
        .await
        .expect("the node never answered barrier_complete")
}

fn assert_not_collecting(answer: Result<Response, RpcError>, prev: Epoch) {
    let Err(RpcError::Remote(e)) = answer else {
        panic!("expected the node to refuse epoch {prev}, got {answer:?}");
    };
    assert_eq!(e.kind, RemoteErrorKind::NotFound, "{e}");
    assert_eq!(
        e.message,
        format!("epoch {prev} is not being collected on worker 1")
    );
}

#[test]
fn an_injected_epoch_is_awaited_and_an_unknown_one_refused() {
    rt().block_on(async {
        let env = env();
        let _node = ComputeNode::start(WORKER, env.clone(), 1);
        let prev = Epoch::test(1000);
        assert_not_collecting(barrier_complete(&env.network, prev).await, prev);
        inject_initial(&env.network, prev).await;
        let answer = barrier_complete(&env.network, prev).await;
        assert!(
            matches!(&answer, Ok(Response::BarrierComplete(r)) if r.prev_epoch == prev),
            "{answer:?}"
        );
        // Taken once: a second request for it has nothing to wait for.
        assert_not_collecting(barrier_complete(&env.network, prev).await, prev);
    });
}

#[test]
fn a_reset_clears_the_epochs_it_was_collecting() {
    rt().block_on(async {
        let env = env();
        let _node = ComputeNode::start(WORKER, env.clone(), 1);
        let prev = Epoch::test(1000);
        inject_initial(&env.network, prev).await;
        let reset = Request::Reset {
            generation: 2,
            prev_epoch: prev,
            stop: None,
        };
        assert!(matches!(
            env.network.call(WORKER, reset).await,
            Ok(Response::Ack)
        ));
        assert_not_collecting(barrier_complete(&env.network, prev).await, prev);
    });
}

/// Seed 3258 of the fixed soak: meta injected an epoch into a node, the node was killed and restarted while
/// meta's `barrier_complete` for it was on its way (a delayed RPC), and the request reached the new run of
/// the node, which had never seen the epoch. It waited for it forever, and so did meta's barrier manager:
/// no epoch committed again and no recovery started.
#[test]
fn a_restarted_node_refuses_an_epoch_of_its_earlier_run() {
    rt().block_on(async {
        let env = env();
        let node = ComputeNode::start(WORKER, env.clone(), 1);
        let prev = Epoch::test(1000);
        inject_initial(&env.network, prev).await;
        node.kill();
        let _restarted = ComputeNode::start(WORKER, env.clone(), 1);
        assert_not_collecting(barrier_complete(&env.network, prev).await, prev);
    });
}

/// Seed 20144 of the fixed soak: an actor aborted by a reset had already queued the collect of an old epoch
/// behind the reset. The worker stashed that epoch, which no inject would complete, and every later epoch of
/// the node waited behind it. A collect from an actor of the generation before the reset is dropped; one
/// from the generation after it is stashed as before (the check can fail).
#[test]
fn a_collect_from_before_the_reset_is_dropped() {
    rt().block_on(async {
        let env = env();
        let node = ComputeNode::start(WORKER, env.clone(), 1);
        let reset = Request::Reset {
            generation: 2,
            prev_epoch: Epoch::test(1000),
            stop: None,
        };
        assert!(matches!(
            env.network.call(WORKER, reset).await,
            Ok(Response::Ack)
        ));
        let old = EpochPair::new(Epoch::test(1002), Epoch::test(1001));
        let barrier = Barrier::new(old, BarrierKind::Checkpoint, None);
        let manager = node.barrier_manager();
        manager
            .for_generation(1)
            .collect(epochlab_common::ActorId(9), &barrier)
            .await;
        let described = manager.describe().await.unwrap();
        assert!(described.ends_with("no epoch pending"), "{described}");
        manager
            .for_generation(2)
            .collect(epochlab_common::ActorId(9), &barrier)
            .await;
        let described = manager.describe().await.unwrap();
        assert!(described.contains("stashed"), "{described}");
    });
}
