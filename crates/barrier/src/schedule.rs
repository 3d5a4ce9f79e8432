//! The command queue between DDL callers and the barrier manager (RisingWave's `BarrierScheduler` /
//! `ScheduledBarriers`), with notifiers that tell the caller when its barrier was injected, collected and
//! finished.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use epochlab_common::TableId;
use tokio::sync::{Notify, oneshot};

use crate::command::Command;
use crate::error::{BarrierError, BarrierResult};

/// Commands waiting for a barrier, at most.
pub const MAX_QUEUED_COMMANDS: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchedulerStatus {
    Ready,
    /// Recovering: only drops are accepted (and buffered until recovery pre-applies them).
    Blocked(String),
}

/// The caller's side of one scheduled command.
#[derive(Default)]
pub(crate) struct Notifier {
    injected: Option<oneshot::Sender<()>>,
    collected: Option<oneshot::Sender<BarrierResult<()>>>,
    finished: Option<oneshot::Sender<()>>,
}

impl Notifier {
    pub(crate) fn notify_injected(&mut self) {
        if let Some(tx) = self.injected.take() {
            let _ = tx.send(());
        }
    }

    pub(crate) fn notify_collected(&mut self) {
        if let Some(tx) = self.collected.take() {
            let _ = tx.send(Ok(()));
        }
    }

    pub(crate) fn notify_collection_failed(&mut self, err: BarrierError) {
        if let Some(tx) = self.collected.take() {
            let _ = tx.send(Err(err));
        }
    }

    pub(crate) fn notify_finished(&mut self) {
        if let Some(tx) = self.finished.take() {
            let _ = tx.send(());
        }
    }
}

pub struct Scheduled {
    pub command: Command,
    pub checkpoint: bool,
    pub(crate) notifier: Notifier,
    /// The span that asked for the command (e.g. `drop streaming job`): its barrier's epoch links to it.
    pub(crate) caller: tracing::Span,
}

impl Scheduled {
    /// A command to queue, with the receivers its caller waits on.
    fn new(command: Command, checkpoint: bool) -> (Self, Receivers) {
        let (injected_tx, injected) = oneshot::channel();
        let (collected_tx, collected) = oneshot::channel();
        let (finished_tx, finished) = oneshot::channel();
        let scheduled = Self {
            command,
            checkpoint,
            notifier: Notifier {
                injected: Some(injected_tx),
                collected: Some(collected_tx),
                finished: Some(finished_tx),
            },
            caller: tracing::Span::current(),
        };
        let receivers = Receivers {
            injected,
            collected,
            finished,
        };
        (scheduled, receivers)
    }
}

struct Queue {
    queue: VecDeque<Scheduled>,
    status: SchedulerStatus,
}

struct Inner {
    queue: Mutex<Queue>,
    changed: Notify,
    force_checkpoint: AtomicBool,
    /// Why meta asked for a recovery, until the manager takes it.
    recovery_request: Mutex<Option<String>>,
}

/// The callers' handle.
#[derive(Clone)]
pub struct BarrierScheduler {
    inner: Arc<Inner>,
}

/// The barrier manager's handle on the same queue.
#[derive(Clone)]
pub struct ScheduledBarriers {
    inner: Arc<Inner>,
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl BarrierScheduler {
    /// A scheduler and the barrier manager's end of it. It starts blocked: the manager's bootstrap recovery
    /// marks it ready.
    pub fn new() -> (Self, ScheduledBarriers) {
        let inner = Arc::new(Inner {
            queue: Mutex::new(Queue {
                queue: VecDeque::new(),
                status: SchedulerStatus::Blocked("The cluster is bootstrapping".into()),
            }),
            changed: Notify::new(),
            force_checkpoint: AtomicBool::new(false),
            recovery_request: Mutex::new(None),
        });
        (
            Self {
                inner: inner.clone(),
            },
            ScheduledBarriers { inner },
        )
    }

    pub fn status(&self) -> SchedulerStatus {
        self.inner.lock().status.clone()
    }

    /// Meta stops (it was killed): block new commands and fail every queued one, as recovery does.
    pub fn abort_and_mark_blocked(&self, reason: &str) -> usize {
        ScheduledBarriers {
            inner: self.inner.clone(),
        }
        .abort_and_mark_blocked(reason)
    }

    /// The state tables of the drops and cancels still queued for a barrier (buffered while recovery ran,
    /// after it pre-applied what it found): their unregister is still to come.
    pub fn queued_drop_tables(&self) -> Vec<TableId> {
        let q = self.inner.lock();
        q.queue
            .iter()
            .flat_map(|s| s.command.unregistered_table_ids().iter().copied())
            .collect()
    }

    fn push(&self, command: Command, checkpoint: bool) -> BarrierResult<Receivers> {
        let mut q = self.inner.lock();
        if let SchedulerStatus::Blocked(reason) = &q.status
            && !command.is_drop()
        {
            return Err(BarrierError::Blocked(reason.clone()));
        }
        if q.queue.len() >= MAX_QUEUED_COMMANDS {
            return Err(BarrierError::QueueFull(q.queue.len()));
        }
        let (scheduled, receivers) = Scheduled::new(command, checkpoint);
        q.queue.push_back(scheduled);
        drop(q);
        self.inner.changed.notify_one();
        Ok(receivers)
    }

    /// Run `command` on a barrier and wait until it is collected and finished. Returns `Ok` also when a
    /// buffered drop is pre-applied by recovery without any barrier (RisingWave's behaviour, which the buggy
    /// drop order relies on).
    pub async fn run_command(&self, command: Command) -> BarrierResult<()> {
        let checkpoint = command.need_checkpoint();
        self.push(command, checkpoint)?.finished().await
    }

    /// Run `commands` on consecutive barriers (RisingWave's `run_multiple_commands`): they are queued at once,
    /// so no other command comes between them. Waits for each to be collected and finished in turn; the first
    /// error ends the wait (a recovery fails the ones still queued).
    pub async fn run_commands(&self, commands: Vec<Command>) -> BarrierResult<()> {
        let receivers = {
            let mut q = self.inner.lock();
            if let SchedulerStatus::Blocked(reason) = &q.status {
                return Err(BarrierError::Blocked(reason.clone()));
            }
            if q.queue.len() + commands.len() > MAX_QUEUED_COMMANDS {
                return Err(BarrierError::QueueFull(q.queue.len()));
            }
            let mut receivers = Vec::with_capacity(commands.len());
            for command in commands {
                let checkpoint = command.need_checkpoint();
                let (scheduled, rx) = Scheduled::new(command, checkpoint);
                q.queue.push_back(scheduled);
                receivers.push(rx);
            }
            receivers
        };
        self.inner.changed.notify_one();
        for rx in receivers {
            rx.finished().await?;
        }
        Ok(())
    }

    /// Make the next barrier a checkpoint (a finished creating job waits for one).
    pub fn force_checkpoint_in_next_barrier(&self) {
        self.inner.force_checkpoint.store(true, Ordering::SeqCst);
    }

    /// Ask the manager for a recovery, which rebuilds every actor from meta's catalog (an offline reschedule:
    /// epochlab's own path, see `MetaNode::alter_parallelism`). The manager takes it before its next barrier.
    pub fn request_recovery(&self, reason: &str) {
        let mut request = self
            .inner
            .recovery_request
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        request.get_or_insert_with(|| reason.to_string());
    }

    /// Wait for the next barrier (a checkpoint when `checkpoint`) to be collected: SQL `FLUSH`.
    pub async fn flush(&self, checkpoint: bool) -> BarrierResult<()> {
        let rx = self.push(Command::Plain(None), checkpoint)?;
        let _ = rx.injected.await;
        rx.collected.await.map_err(|_| BarrierError::Shutdown)?
    }
}

struct Receivers {
    injected: oneshot::Receiver<()>,
    collected: oneshot::Receiver<BarrierResult<()>>,
    finished: oneshot::Receiver<()>,
}

impl Receivers {
    /// Wait until the command's barrier is collected and finished.
    async fn finished(self) -> BarrierResult<()> {
        // The manager may drop the injected notifier without sending (pre-applied drops): not an error.
        let _ = self.injected.await;
        self.collected.await.map_err(|_| BarrierError::Shutdown)??;
        let _ = self.finished.await;
        Ok(())
    }
}

impl ScheduledBarriers {
    /// The next scheduled command, waiting for one. Only called while the manager can inject.
    pub(crate) async fn wait_one(&self) -> Scheduled {
        loop {
            let notified = self.inner.changed.notified();
            {
                let mut q = self.inner.lock();
                if q.status == SchedulerStatus::Ready
                    && let Some(s) = q.queue.pop_front()
                {
                    return s;
                }
            }
            notified.await;
        }
    }

    pub(crate) fn take_recovery_request(&self) -> Option<String> {
        let mut request = self
            .inner
            .recovery_request
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        request.take()
    }

    pub(crate) fn take_force_checkpoint(&self) -> bool {
        self.inner.force_checkpoint.swap(false, Ordering::SeqCst)
    }

    pub fn force_checkpoint_in_next_barrier(&self) {
        self.inner.force_checkpoint.store(true, Ordering::SeqCst);
    }

    /// Recovery begins: block new commands and fail every queued one (collection failed).
    pub fn abort_and_mark_blocked(&self, reason: &str) -> usize {
        let mut q = self.inner.lock();
        q.status = SchedulerStatus::Blocked(reason.to_string());
        let aborted: Vec<Scheduled> = q.queue.drain(..).collect();
        drop(q);
        let n = aborted.len();
        for mut s in aborted {
            s.notifier
                .notify_collection_failed(BarrierError::Blocked(reason.to_string()));
        }
        n
    }

    /// Recovery: take the drops buffered while blocked and report them collected and finished to their
    /// callers, though no barrier carried them (RisingWave's `pre_apply_drop_cancel_scheduled`).
    pub fn pre_apply_drop_scheduled(&self) -> Vec<Command> {
        let mut q = self.inner.lock();
        let (drops, rest): (Vec<Scheduled>, Vec<Scheduled>) =
            q.queue.drain(..).partition(|s| s.command.is_drop());
        q.queue.extend(rest);
        drop(q);
        drops
            .into_iter()
            .map(|mut s| {
                s.notifier.notify_collected();
                s.notifier.notify_finished();
                s.command
            })
            .collect()
    }

    pub fn mark_ready(&self) {
        self.inner.lock().status = SchedulerStatus::Ready;
        self.inner.changed.notify_one();
    }

    pub fn status(&self) -> SchedulerStatus {
        self.inner.lock().status.clone()
    }
}
