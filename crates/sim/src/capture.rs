//! Capture the arrangement backfill's log lines (RisingWave's: "Persisting state on barrier", "update vnode",
//! "mark_committed", "committing on epoch", "barrier persisted") with the simulation's virtual time, so that a
//! failing run can print the lines the original failure log had, for the failing actor only.

use std::collections::VecDeque;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use epochlab_common::Clock;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// Lines kept, at most.
const CAPACITY: usize = 20_000;

#[derive(Clone, Debug)]
pub struct CapturedLine {
    pub virtual_us: u64,
    pub level: Level,
    pub target: String,
    pub actor_id: Option<u64>,
    pub text: String,
}

impl std::fmt::Display for CapturedLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>6}.{:06} {:>5} {}: {}",
            self.virtual_us / 1_000_000,
            self.virtual_us % 1_000_000,
            self.level,
            self.target,
            self.text
        )
    }
}

#[derive(Clone)]
pub struct Capture {
    clock: Clock,
    lines: Arc<Mutex<VecDeque<CapturedLine>>>,
}

impl Capture {
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            lines: Arc::default(),
        }
    }

    /// The captured lines of one actor, oldest first.
    pub fn lines_of_actor(&self, actor_id: u64) -> Vec<CapturedLine> {
        self.lines
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|l| l.actor_id == Some(actor_id))
            .cloned()
            .collect()
    }
}

#[derive(Default)]
struct Fields {
    message: String,
    rest: String,
    actor_id: Option<u64>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.rest, ", {}={value:?}", field.name());
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "actor_id" || field.name() == "actor" {
            self.actor_id = Some(value);
        }
        let _ = write!(self.rest, ", {}={value}", field.name());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.record_u64(field, value as u64);
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let target = event.metadata().target();
        if !target.starts_with("epochlab_stream::executor::backfill") {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let line = CapturedLine {
            virtual_us: self.clock.elapsed_us(),
            level: *event.metadata().level(),
            target: target.to_string(),
            actor_id: fields.actor_id,
            text: format!("{}{}", fields.message, fields.rest),
        };
        let mut lines = self.lines.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == CAPACITY {
            lines.pop_front();
        }
        lines.push_back(line);
    }
}
