//! Two inputs merged into one stream of their chunks, barriers aligned (RisingWave's `barrier_align`, used by
//! the two-input executors: hash join, dynamic filter).
//!
//! Chunks of both inputs pass as they come, tagged with their side. When one input delivers a barrier, only
//! the other input is read until it delivers its barrier too; then the barrier goes out once. RisingWave
//! picks the side to poll first at random on each turn; here the preference alternates, which is as fair and
//! keeps a seed's schedule reproducible. Watermarks pass tagged with their side, as RisingWave's
//! `WatermarkLeft`/`WatermarkRight`: the executor decides (a dynamic filter cleans its left table by the right
//! side's; a hash join passes the minimum of its sides' join-key watermarks; a temporal join passes the
//! left's).

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
    WatermarkLeft(super::Watermark),
    WatermarkRight(super::Watermark),
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

fn tag_watermark(input: Input, w: super::Watermark) -> AlignedMessage {
    match input {
        Input::Left => AlignedMessage::WatermarkLeft(w),
        Input::Right => AlignedMessage::WatermarkRight(w),
    }
}

fn misaligned(actor_id: ActorId, expected: &Barrier, got: &Barrier) -> StreamExecutorError {
    StreamExecutorError::misaligned(format!("barrier_align(actor {actor_id})"), expected, got)
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
                        Message::Watermark(w) => yield tag_watermark(other_input, w),
                        Message::Barrier(_) => {
                            return Err(closed(actor_id, first, "ended before a barrier"));
                        }
                    }
                }
                break;
            }
            Some(Message::Chunk(c)) => yield tag(first, c),
            Some(Message::Watermark(w)) => yield tag_watermark(first, w),
            Some(Message::Barrier(barrier)) => loop {
                match other.next().await.transpose()? {
                    None => return Err(closed_waiting(other_input, actor_id)),
                    Some(Message::Chunk(c)) => yield tag(other_input, c),
                    Some(Message::Watermark(w)) => yield tag_watermark(other_input, w),
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

/// The first aligned message, which must be an Initial or Checkpoint barrier.
pub(crate) async fn expect_first_aligned(
    aligned: &mut (impl futures::Stream<Item = StreamExecutorResult<AlignedMessage>> + Unpin),
    executor: &str,
) -> StreamExecutorResult<epochlab_barrier::Barrier> {
    let got = match aligned.next().await {
        Some(Ok(AlignedMessage::Barrier(b)))
            if b.kind != epochlab_barrier::BarrierKind::Barrier =>
        {
            return Ok(b);
        }
        Some(Ok(m)) => format!("{m:?}"),
        Some(Err(e)) => return Err(e),
        None => "end of stream".to_string(),
    };
    Err(StreamExecutorError::FirstMessage {
        executor: executor.to_string(),
        got,
    })
}

#[cfg(test)]
mod tests {
    use epochlab_barrier::BarrierKind;
    use epochlab_common::{Epoch, EpochPair, Op, ScalarImpl, row};

    use super::*;

    fn barrier(curr: u64) -> Message {
        Message::Barrier(Barrier::new(
            EpochPair::new(Epoch::test(curr), Epoch::test(curr - 1)),
            BarrierKind::Checkpoint,
            None,
        ))
    }

    fn chunk(k: i64) -> Message {
        Message::Chunk(StreamChunk::from_pairs([(Op::Insert, row![k])]))
    }

    fn input(msgs: Vec<Message>) -> BoxedMessageStream {
        futures::stream::iter(msgs.into_iter().map(Ok)).boxed()
    }

    fn first(c: &StreamChunk) -> i64 {
        let row = c.rows().next().unwrap().1;
        row[0].as_ref().and_then(ScalarImpl::as_int64).unwrap()
    }

    /// Every aligned message as text, or the error.
    fn align(left: Vec<Message>, right: Vec<Message>) -> Result<Vec<String>, StreamExecutorError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let s = barrier_align(input(left), input(right), ActorId(1));
            futures::pin_mut!(s);
            let mut out = Vec::new();
            while let Some(m) = s.next().await {
                out.push(match m? {
                    AlignedMessage::Left(c) => format!("L{}", first(&c)),
                    AlignedMessage::Right(c) => format!("R{}", first(&c)),
                    AlignedMessage::Barrier(b) => format!("B{}", b.epoch.curr.0),
                    AlignedMessage::WatermarkLeft(w) => format!("WL{:?}", w.val),
                    AlignedMessage::WatermarkRight(w) => format!("WR{:?}", w.val),
                });
            }
            Ok(out)
        })
    }

    /// A watermark passes tagged with the side it came from, in its place among that side's chunks.
    #[test]
    fn watermarks_pass_tagged_with_their_side() {
        let wm = |v: i64| {
            let ty = epochlab_common::DataType::Int64;
            Message::Watermark(super::super::Watermark::new(0, ty, ScalarImpl::Int64(v)))
        };
        let out = align(
            vec![barrier(1), chunk(1), wm(5), barrier(2)],
            vec![barrier(1), wm(7), barrier(2)],
        )
        .unwrap();
        let b = |e: u64| format!("B{}", Epoch::test(e).0);
        let expected = [
            b(1),
            "WRInt64(7)".into(),
            "L1".into(),
            "WLInt64(5)".into(),
            b(2),
        ];
        assert_eq!(out, expected);
    }

    /// A chunk behind one input's barrier waits until the other input delivers the barrier; the sides
    /// take turns otherwise.
    #[test]
    fn barriers_pass_once_both_inputs_delivered_them() {
        let out = align(
            vec![barrier(1), chunk(1), barrier(2), chunk(2)],
            vec![barrier(1), chunk(10), chunk(11), barrier(2)],
        )
        .unwrap();
        let b1 = format!("B{}", Epoch::test(1).0);
        let b2 = format!("B{}", Epoch::test(2).0);
        assert_eq!(
            out,
            vec![
                b1,
                "R10".to_string(),
                "L1".to_string(),
                "R11".to_string(),
                b2,
                "L2".to_string()
            ]
        );
    }

    #[test]
    fn barriers_of_different_epochs_are_an_error() {
        let err = align(vec![barrier(1)], vec![barrier(2)]).unwrap_err();
        assert!(
            matches!(err, StreamExecutorError::BarrierMisaligned { .. }),
            "{err}"
        );
        let err = align(vec![barrier(1), barrier(2)], vec![barrier(1)]).unwrap_err();
        assert!(
            matches!(err, StreamExecutorError::ChannelClosed(_)),
            "{err}"
        );
    }
}
