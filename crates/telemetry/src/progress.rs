//! A progress line for long runs: a run that has taken more than [`QUIET_FOR`] of wall time shows, on a
//! terminal's stderr, where it is (virtual time, epochs, the creating jobs' backfill), redrawn at most every
//! [`EVERY`], so a large run is not silent for minutes. It observes virtual time as the pacer does (a
//! [`TimeObserver`]), reads the cluster's counters and catalog, and changes nothing in the run.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use epochlab_sim::{Cluster, ClusterHook, TimeObserver};

/// How long a run stays silent before its progress line appears.
pub const QUIET_FOR: Duration = Duration::from_secs(2);
/// How often the line is redrawn at most.
pub const EVERY: Duration = Duration::from_millis(500);

/// The progress line of one run.
pub struct Progress {
    label: String,
    start: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    cluster: Option<Arc<Cluster>>,
    drawn: Option<Instant>,
}

impl Progress {
    /// The progress line of the run `label` (`buggy`, `16815 fixed`), starting now; `None` unless stderr is a
    /// terminal (a redirected stderr gets no carriage returns).
    pub fn on_terminal(label: &str) -> Option<Arc<Self>> {
        use std::io::IsTerminal;
        std::io::stderr().is_terminal().then(|| Self::new(label))
    }

    pub fn new(label: &str) -> Arc<Self> {
        Arc::new(Self {
            label: label.to_string(),
            start: Instant::now(),
            state: Mutex::new(State::default()),
        })
    }

    /// The hook that shows it the run's cluster, chained before `then`.
    pub fn hook(self: &Arc<Self>, then: Option<ClusterHook>) -> ClusterHook {
        let me = self.clone();
        Box::new(move |cluster: Arc<Cluster>| {
            me.state.lock().expect("progress state").cluster = Some(cluster.clone());
            if let Some(then) = then {
                then(cluster);
            }
        })
    }

    /// The line for virtual time `now`.
    pub fn line(&self, now: Duration) -> String {
        let state = self.state.lock().expect("progress state");
        let wall = self.start.elapsed().as_secs_f64();
        let mut line = format!(
            "{}: {:.1} s simulated in {wall:.1} s",
            self.label,
            now.as_secs_f64()
        );
        if let Some(cluster) = &state.cluster {
            line.push_str(&cluster_part(cluster));
        }
        line
    }

    /// Ends the line, if one was drawn: the run's own output starts on a clean line.
    pub fn finish(&self) {
        let drawn = self.state.lock().expect("progress state").drawn.is_some();
        if drawn {
            eprint!("\r\x1b[K");
            let _ = std::io::stderr().flush();
        }
    }
}

/// `, 40 epochs, 3 recoveries, backfill: 2 jobs creating, 123456 snapshot rows read`.
fn cluster_part(cluster: &Cluster) -> String {
    let stats = cluster.barrier_stats();
    let epochs = stats.injected.load(Ordering::Relaxed);
    let recoveries = stats.recoveries.load(Ordering::Relaxed);
    let (creating, rows) = cluster.backfill_progress();
    let mut part = format!(", {epochs} epochs, {recoveries} recoveries");
    if creating > 0 {
        let jobs = if creating == 1 { "job" } else { "jobs" };
        part.push_str(&format!(
            ", backfill: {creating} {jobs} creating, {rows} snapshot rows read"
        ));
    }
    part
}

impl TimeObserver for Progress {
    fn advanced(&self, now: Duration) {
        if self.start.elapsed() < QUIET_FOR {
            return;
        }
        {
            let mut state = self.state.lock().expect("progress state");
            if state.drawn.is_some_and(|t| t.elapsed() < EVERY) {
                return;
            }
            state.drawn = Some(Instant::now());
        }
        eprint!("\r\x1b[K{}", self.line(now));
        let _ = std::io::stderr().flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_says_where_the_run_is_and_a_fresh_run_draws_nothing() {
        let p = Progress::new("16815 buggy");
        let line = p.line(Duration::from_millis(37_250));
        assert!(
            line.starts_with("16815 buggy: 37.2 s simulated in 0."),
            "{line}"
        );
        // Inside the quiet period nothing is drawn, so nothing needs clearing.
        p.advanced(Duration::from_secs(1));
        assert!(p.state.lock().unwrap().drawn.is_none());
        p.finish();
    }
}
