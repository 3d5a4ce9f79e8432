//! The simulation runtime is deterministic: the same seed gives the same event log, another seed another.

use std::time::Duration;

use epochlab_common::event;
use epochlab_sim::{SimContext, SimOutput};
use tokio::sync::mpsc;

/// Four producers sleep random (virtual) times and send over two bounded channels; a consumer selects over
/// both (biased) and logs what it receives and when.
async fn program(ctx: SimContext) -> u64 {
    let (tx_a, mut rx_a) = mpsc::channel::<(u32, u32)>(4);
    let (tx_b, mut rx_b) = mpsc::channel::<(u32, u32)>(4);
    for p in 0..4u32 {
        let tx = if p % 2 == 0 {
            tx_a.clone()
        } else {
            tx_b.clone()
        };
        let ctx = ctx.clone();
        tokio::spawn(async move {
            for i in 0..25 {
                let d = ctx
                    .rng
                    .duration(Duration::from_millis(1)..Duration::from_millis(50));
                tokio::time::sleep(d).await;
                event!(ctx.log, "send", "producer={p} i={i}");
                tx.send((p, i)).await.unwrap();
            }
        });
    }
    drop((tx_a, tx_b));
    let mut received = 0;
    loop {
        let (p, i) = tokio::select! {
            biased;
            Some(m) = rx_a.recv() => m,
            Some(m) = rx_b.recv() => m,
            else => break,
        };
        // Consuming takes a random time too, so back-pressure interleaves with the producers.
        tokio::time::sleep(ctx.rng.duration(Duration::ZERO..Duration::from_millis(20))).await;
        event!(ctx.log, "recv", "producer={p} i={i}");
        received += 1;
    }
    received
}

fn run(seed: u64) -> SimOutput<u64> {
    epochlab_sim::run(seed, program)
}

#[test]
fn same_seed_same_log_other_seed_other_log() {
    let a = run(7);
    let b = run(7);
    assert_eq!(a.value, 100);
    assert_eq!(a.events, 200);
    assert_eq!(a.log.lines(), b.log.lines());
    assert_eq!(a.digest, b.digest);
    assert_eq!(a.virtual_elapsed, b.virtual_elapsed);

    let c = run(8);
    assert_eq!(c.value, 100);
    assert_ne!(a.digest, c.digest);
}

#[test]
fn virtual_time_is_not_wall_time() {
    let wall = std::time::Instant::now();
    let out = epochlab_sim::run(1, |_ctx| async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    });
    assert_eq!(out.virtual_elapsed, Duration::from_secs(3600));
    assert!(
        wall.elapsed() < Duration::from_secs(60),
        "an hour of virtual time must not take an hour"
    );
}

/// Pacing a run against the wall clock and sampling its metrics (both on the simulation's thread, each time
/// virtual time moves on) change nothing in it: the same event log, byte for byte, and digest as a run that is
/// neither paced nor sampled. RisingWave #14910's scenario in every mode, and a random workload plan.
#[test]
fn a_paced_and_sampled_run_is_the_same_run() {
    use std::sync::Arc;

    use epochlab_sim::Mode;
    use epochlab_sim::{ReproHooks, ReproParams, TimeObserver, run_repro, run_repro_with};
    use epochlab_telemetry::{Metrics, Pacer, RunSource, Timeline, WallStart};

    const PACE: f64 = 300.0;
    // The hooks of a run of `mode` paced at PACE and sampled every 100 ms of virtual time.
    let watched = |mode: Mode| {
        let metrics = Arc::new(Metrics::new());
        metrics.prepare_run(0, mode.as_str());
        let timeline = Timeline::new(metrics.clone(), Duration::from_millis(100));
        let start = WallStart::now();
        let sampler = timeline.sampler(mode.as_str(), start);
        let m = metrics.clone();
        let observers: Vec<Arc<dyn TimeObserver>> =
            vec![sampler.clone(), Arc::new(Pacer::new(PACE, start))];
        let hooks = ReproHooks {
            on_cluster: Some(Box::new(move |cluster| {
                m.add_run(RunSource::started_at(mode.as_str(), cluster, start))
            })),
            time_observers: observers,
            ..Default::default()
        };
        (hooks, metrics, timeline, sampler)
    };
    for mode in Mode::ALL {
        let params = ReproParams {
            mode,
            ..Default::default()
        };
        let plain = run_repro(&params);
        let (hooks, metrics, timeline, sampler) = watched(mode);
        let wall = std::time::Instant::now();
        let paced = run_repro_with(&params, hooks);
        let took = wall.elapsed();
        metrics.end_run(0);
        sampler.finish(paced.virtual_elapsed);
        assert_eq!(paced.log.lines(), plain.log.lines(), "{mode}");
        assert_eq!(paced.digest, plain.digest, "{mode}");
        // Not a speed target: a paced run cannot be faster than its pace allows.
        let floor = paced.virtual_elapsed.div_f64(PACE);
        assert!(took >= floor, "{mode}: {took:?} < {floor:?}");
        let samples = timeline.runs()[0].samples as u128;
        let want = paced.virtual_elapsed.as_millis() / 100;
        assert!(
            samples >= want,
            "{mode}: {samples} samples, {want} expected"
        );
    }
    let plan = epochlab_sim::workload::generate(39, &Default::default());
    let mode = epochlab_sim::BugMode::of_14910(Mode::PurgeBeforeReset);
    let plain = epochlab_sim::workload::run_plan(&plan, mode, ReproHooks::default());
    let (hooks, ..) = watched(mode.mode());
    let paced = epochlab_sim::workload::run_plan(&plan, mode, hooks);
    assert_eq!(paced.log.lines(), plain.log.lines());
    assert_eq!(paced.digest, plain.digest);
}
