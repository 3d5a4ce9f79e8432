//! Two inputs merged into one stream of their chunks, barriers aligned (RisingWave's `barrier_align`, used by
//! the two-input executors: hash join, dynamic filter).
//!
//! Chunks of both inputs pass as they come, tagged with their side. When one input delivers a barrier, only
//! the other input is read until it delivers its barrier too; then the barrier goes out once. RisingWave
//! picks the side to poll first at random on each turn; here the preference alternates, which is as fair and
//! keeps a seed's schedule reproducible.

use epochlab_barrier::Barrier;
use epochlab_common::{ActorId, StreamChunk};
use futures::StreamExt;
use futures::future::{Either, select};
use futures_async_stream::try_stream;

use super::{BoxedMessageStream, Message, StreamExecutorError, StreamExecutorResult};

/// A message of two aligned inputs.
#[derive(Debug)]
pub enum AlignedMessage {
    Left(StreamChunk),
    Right(StreamChunk),
    /// Both inputs delivered this barrier.
    Barrier(Barrier),
}

/// Which input a message came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Input {
    Left,
    Right,
}

fn tag(input: Input, chunk: StreamChunk) -> AlignedMessage {
    match input {
        Input::Left => AlignedMessage::Left(chunk),
        Input::Right => AlignedMessage::Right(chunk),
    }
}

fn misaligned(actor_id: ActorId, expected: &Barrier, got: &Barrier) -> StreamExecutorError {
    StreamExecutorError::BarrierMisaligned {
        executor: format!("barrier_align(actor {actor_id})"),
        expected: expected.epoch.curr.0,
        got: got.epoch.curr.0,
    }
}

fn closed(actor_id: ActorId, input: Input, why: &str) -> StreamExecutorError {
    StreamExecutorError::ChannelClosed(format!("{input:?} input of actor {actor_id} {why}"))
}

/// The next message of either input: `prefer_left` decides which is polled first.
async fn next_of_two(
    left: &mut BoxedMessageStream,
    right: &mut BoxedMessageStream,
    prefer_left: bool,
) -> (Input, Option<StreamExecutorResult<Message>>) {
    if prefer_left {
        match select(left.next(), right.next()).await {
            Either::Left((m, _)) => (Input::Left, m),
            Either::Right((m, _)) => (Input::Right, m),
        }
    } else {
        match select(right.next(), left.next()).await {
            Either::Left((m, _)) => (Input::Right, m),
            Either::Right((m, _)) => (Input::Left, m),
        }
    }
}

/// The messages of `left` and `right`, a barrier passed once both delivered it. An input that ends lets
/// the other's chunks pass (a barrier of the other then is an error); a barrier of another epoch than the
/// one awaited is an error.
#[try_stream(ok = AlignedMessage, error = StreamExecutorError)]
pub async fn barrier_align(
    mut left: BoxedMessageStream,
    mut right: BoxedMessageStream,
    actor_id: ActorId,
) {
    let mut prefer_left = true;
    loop {
        let (input, msg) = next_of_two(&mut left, &mut right, prefer_left).await;
        prefer_left = !prefer_left;
        let (first, other) = match input {
            Input::Left => (Input::Left, &mut right),
            Input::Right => (Input::Right, &mut left),
        };
        let other_input = if first == Input::Left {
            Input::Right
        } else {
            Input::Left
        };
        match msg.transpose()? {
            None => {
                #[for_await]
                for m in other {
                    match m? {
                        Message::Chunk(c) => yield tag(other_input, c),
                        Message::Barrier(_) => {
                            return Err(closed(actor_id, first, "ended before a barrier"));
                        }
                    }
                }
                break;
            }
            Some(Message::Chunk(c)) => yield tag(first, c),
            Some(Message::Barrier(barrier)) => loop {
                match other.next().await.transpose()? {
                    None => return Err(closed_waiting(other_input, actor_id)),
                    Some(Message::Chunk(c)) => yield tag(other_input, c),
                    Some(Message::Barrier(b)) if b.epoch != barrier.epoch => {
                        return Err(misaligned(actor_id, &barrier, &b));
                    }
                    Some(Message::Barrier(b)) => {
                        yield AlignedMessage::Barrier(b);
                        break;
                    }
                }
            },
        }
    }
}

fn closed_waiting(input: Input, actor_id: ActorId) -> StreamExecutorError {
    closed(
        actor_id,
        input,
        "ended while a barrier of the other was pending",
    )
}
