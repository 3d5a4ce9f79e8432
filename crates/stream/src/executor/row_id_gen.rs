use std::sync::Arc;

use epochlab_common::types::Serial;
use epochlab_common::{ActorId, Bitmap, Clock, Op, OwnedRow, ScalarImpl, StreamChunk};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::{
    BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, expect_first_barrier,
};

use epochlab_common::vnode::{
    ROW_ID_TIMESTAMP_SHIFT_BITS as TIMESTAMP_SHIFT_BITS,
    ROW_ID_VNODE_SHIFT_BITS as VNODE_ID_SHIFT_BITS,
    ROW_ID_VNODE_UPPER_BOUND as VNODE_ID_UPPER_BOUND,
};

/// Row ids per millisecond and vnode (the low 12 bits).
const SEQUENCE_UPPER_BOUND: u16 = 1 << 12;

/// Row ids unique over the vnodes of one actor (RisingWave's `RowIdGenerator`): each id carries one of the
/// actor's vnodes, taken in turn, so the ids of different actors never meet, and the millisecond part only
/// grows. On the simulation clock; when a millisecond's sequence is used up, the generator waits for the
/// next millisecond (RisingWave spins).
#[derive(Debug)]
pub struct RowIdGenerator {
    clock: Clock,
    last_ms: i64,
    vnodes: Vec<usize>,
    vnode_index: usize,
    sequence: u16,
}

impl RowIdGenerator {
    pub fn new(clock: Clock, vnodes: &Bitmap) -> Self {
        let vnodes: Vec<usize> = vnodes.iter_ones().collect();
        assert!(!vnodes.is_empty(), "a row id generator needs a vnode");
        assert!(
            vnodes.iter().all(|&v| v < VNODE_ID_UPPER_BOUND),
            "a vnode fits in 10 bits"
        );
        Self {
            last_ms: (clock.elapsed_us() / 1000) as i64,
            clock,
            vnodes,
            vnode_index: 0,
            sequence: 0,
        }
    }

    /// The next id in the current millisecond, `None` when its sequence is used up.
    fn next_in_ms(&mut self) -> Option<i64> {
        if self.sequence >= SEQUENCE_UPPER_BOUND {
            return None;
        }
        let vnode = self.vnodes[self.vnode_index] as i64;
        let sequence = self.sequence as i64;
        self.vnode_index = (self.vnode_index + 1) % self.vnodes.len();
        if self.vnode_index == 0 {
            self.sequence += 1;
        }
        Some(self.last_ms << TIMESTAMP_SHIFT_BITS | vnode << VNODE_ID_SHIFT_BITS | sequence)
    }

    /// Move to the clock's millisecond if it is later; whether an id is available.
    fn update_timestamp(&mut self) -> bool {
        let now = (self.clock.elapsed_us() / 1000) as i64;
        if now > self.last_ms {
            self.last_ms = now;
            self.sequence = 0;
        }
        self.sequence < SEQUENCE_UPPER_BOUND
    }

    /// The next row id, waiting for the next millisecond if this one's ids are used up.
    pub async fn next(&mut self) -> i64 {
        loop {
            self.update_timestamp();
            if let Some(id) = self.next_in_ms() {
                return id;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

pub use epochlab_common::vnode::vnode_of_row_id;

/// Fills the hidden row id column of inserted rows (RisingWave's `RowIdGenExecutor`); other ops keep the id
/// they carry. Takes a new generator with the actor's new vnodes at a reschedule.
pub struct RowIdGenExecutor {
    actor_id: ActorId,
    input: BoxedExecutor,
    row_id_index: usize,
    generator: RowIdGenerator,
}

impl RowIdGenExecutor {
    pub fn new(
        actor_id: ActorId,
        input: BoxedExecutor,
        row_id_index: usize,
        clock: Clock,
        vnodes: Arc<Bitmap>,
    ) -> Self {
        Self {
            actor_id,
            input,
            row_id_index,
            generator: RowIdGenerator::new(clock, &vnodes),
        }
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(self) {
        let Self {
            actor_id,
            input,
            row_id_index,
            mut generator,
        } = self;
        let mut input = input.execute();
        let first = expect_first_barrier(&mut input, "RowIdGen").await?;
        yield Message::Barrier(first);
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    yield Message::Chunk(fill(&mut generator, row_id_index, chunk).await)
                }
                Message::Barrier(b) => {
                    // An Update comes between a Pause and a Resume: no row is in flight.
                    if let Some(vnodes) = b.as_update_vnode_bitmap(actor_id) {
                        generator = RowIdGenerator::new(generator.clock.clone(), &vnodes);
                    }
                    yield Message::Barrier(b);
                }
                Message::Watermark(w) => yield Message::Watermark(w),
            }
        }
    }
}

/// Give each visible `Insert` of `chunk` a new row id in column `index`.
async fn fill(generator: &mut RowIdGenerator, index: usize, chunk: StreamChunk) -> StreamChunk {
    let mut out = Vec::with_capacity(chunk.cardinality());
    for (op, row) in chunk.rows() {
        if op != Op::Insert {
            out.push((op, row.clone()));
            continue;
        }
        let mut datums = row.clone().into_inner();
        datums[index] = Some(row_id_scalar(generator.next().await));
        out.push((op, OwnedRow::new(datums)));
    }
    StreamChunk::from_pairs(out)
}

/// A row id as a datum: a `serial`.
fn row_id_scalar(id: i64) -> ScalarImpl {
    ScalarImpl::Serial(Serial::new(id))
}

impl Execute for RowIdGenExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "RowIdGen(actor {}, column {})",
            self.actor_id, self.row_id_index
        )
    }
}
