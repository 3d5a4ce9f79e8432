use epochlab_common::plan::Interval;
use epochlab_common::types::{Timestamp, Timestamptz};
use epochlab_common::{Datum, OwnedRow, ScalarImpl, StreamChunk, StreamChunkBuilder};
use epochlab_expr::ExprError;
use futures::StreamExt;
use futures_async_stream::try_stream;
use thiserror::Error;

use super::non_strict::NonStrict;
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError};

/// Why a hop window's sizes cannot be used (RisingWave refuses them when it binds `hop`).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum HopWindowError {
    #[error(
        "window slide and size must be positive intervals of days and time, got {slide:?} and {size:?}"
    )]
    NotPositive { slide: Interval, size: Interval },
    #[error(
        "Invalid arguments for HOP window function: window_size {size:?} cannot be divided by window_slide {slide:?}"
    )]
    NotDivisible { slide: Interval, size: Interval },
}

/// An interval of days and time in microseconds; `None` with months (no fixed length) or not positive.
fn fixed_usecs(i: &Interval) -> Option<i64> {
    let total = i64::try_from(i.total_usecs()).ok()?;
    (i.months() == 0 && total > 0).then_some(total)
}

/// Output rows per chunk at most.
pub const HOP_CHUNK_CAPACITY: usize = 4096;

/// Each input row once per hop window containing its time column (RisingWave's `HopWindowExecutor`; a
/// tumble is a hop whose slide is its size): the input's columns, then `window_start` and `window_end`, of
/// which `output_indices` are kept. The windows of a row are `size / slide` starts, ascending, ending at
/// the hop start of its time (the time rounded down to a multiple of the slide); a row's windows are
/// emitted together (see [`HopWindowExecutor::hop`]). A row whose time is NULL is in no window; a window outside the
/// timestamp range is an expression error (non-strict: the row is dropped from that window, counted).
pub struct HopWindowExecutor {
    input: BoxedExecutor,
    time_col: usize,
    slide_us: i64,
    units: i64,
    output_indices: Vec<usize>,
    eval: NonStrict,
}

impl HopWindowExecutor {
    pub fn new(
        input: BoxedExecutor,
        time_col: usize,
        window_slide: Interval,
        window_size: Interval,
        output_indices: Vec<usize>,
        eval: NonStrict,
    ) -> Result<Self, HopWindowError> {
        let (slide, size) = (window_slide, window_size);
        let (Some(slide_us), Some(size_us)) = (fixed_usecs(&slide), fixed_usecs(&size)) else {
            return Err(HopWindowError::NotPositive { slide, size });
        };
        if size_us % slide_us != 0 {
            return Err(HopWindowError::NotDivisible { slide, size });
        }
        Ok(Self {
            input,
            time_col,
            slide_us,
            units: size_us / slide_us,
            output_indices,
            eval,
        })
    }

    /// `[window_start, window_end]` of window `unit` (0 the earliest) of time `t` (µs).
    fn window(&self, t: i64, unit: i64) -> Result<(i64, i64), ExprError> {
        let out = ExprError::NumericOutOfRange;
        let hop_start = t - t.rem_euclid(self.slide_us);
        let back = (self.units - 1 - unit)
            .checked_mul(self.slide_us)
            .ok_or(out.clone())?;
        let start = hop_start.checked_sub(back).ok_or(out.clone())?;
        let end = self
            .units
            .checked_mul(self.slide_us)
            .and_then(|size| start.checked_add(size))
            .ok_or(out)?;
        Ok((start, end))
    }

    /// The output row of `row` in window `unit`, if it has one.
    fn windowed(&self, row: &OwnedRow, unit: i64) -> Option<OwnedRow> {
        let time = row.datum_at(self.time_col).as_ref()?;
        let (t, back): (i64, fn(i64) -> Option<ScalarImpl>) = match time {
            ScalarImpl::Timestamp(ts) => (ts.0.and_utc().timestamp_micros(), timestamp_of),
            ScalarImpl::Timestamptz(ts) => (ts.timestamp_micros(), |us| {
                Some(ScalarImpl::Timestamptz(Timestamptz::from_micros(us)))
            }),
            other => panic!("hop window over a {other:?}: the planner binds a timestamp column"),
        };
        let bounds = self.window(t, unit).and_then(|(s, e)| {
            let both = back(s).zip(back(e));
            both.ok_or(ExprError::NumericOutOfRange)
        });
        let (start, end) = match bounds {
            Ok(b) => b,
            Err(e) => {
                self.eval.report(&e);
                return None;
            }
        };
        let mut datums: Vec<Datum> = row.datums().to_vec();
        datums.push(Some(start));
        datums.push(Some(end));
        Some(OwnedRow::new(datums).project(&self.output_indices))
    }

    /// Each input row's windows together, in input order, in chunks of at most the input chunk's size
    /// times its windows (at most [`HOP_CHUNK_CAPACITY`] rows), as RisingWave's executor emits them: an update becomes a delete and an
    /// insert (the old and the new row may share windows, so an update pair per window index would insert
    /// a window row before its old copy is deleted), and the old row's windows are all deleted before the
    /// new row's are inserted.
    fn hop(&self, chunk: &StreamChunk) -> Vec<StreamChunk> {
        let units = usize::try_from(self.units).unwrap_or(1);
        let capacity = chunk.capacity().max(1).saturating_mul(units);
        let mut builder = StreamChunkBuilder::new(capacity.min(HOP_CHUNK_CAPACITY));
        let mut out = Vec::new();
        for (op, row) in chunk.rows() {
            for unit in 0..self.units {
                if let Some(r) = self.windowed(row, unit)
                    && let Some(full) = builder.append(op.normalize(), r)
                {
                    out.push(full);
                }
            }
        }
        out.extend(builder.take());
        out
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    for out in self.hop(&chunk) {
                        yield Message::Chunk(out);
                    }
                }
                Message::Barrier(b) => yield Message::Barrier(b),
                // A watermark on a column the output keeps goes on, on its output position.
                Message::Watermark(w) => {
                    let col = w.col_idx;
                    if let Some(i) = self.output_indices.iter().position(|&c| c == col) {
                        yield Message::Watermark(w.with_idx(i));
                    }
                }
            }
        }
    }
}

fn timestamp_of(us: i64) -> Option<ScalarImpl> {
    chrono::DateTime::from_timestamp_micros(us)
        .map(|t| ScalarImpl::Timestamp(Timestamp(t.naive_utc())))
}

impl Execute for HopWindowExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "HopWindow(actor {}, {} windows)",
            self.eval.actor_id, self.units
        )
    }
}
