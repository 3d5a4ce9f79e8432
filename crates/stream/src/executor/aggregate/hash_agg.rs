use futures::StreamExt;

use super::{AggArgs, AggCore};
use crate::executor::{BoxedExecutor, BoxedMessageStream, Execute, StreamExecutorResult};

/// Grouped aggregation (RisingWave's `HashAggExecutor`): on each barrier, the groups that changed are
/// written and emitted (an insert for a new group, an update pair for a changed one, a delete for a group
/// whose row count dropped to 0), then the state tables are committed with the barrier's epoch.
pub struct HashAggExecutor {
    core: AggCore,
    input: BoxedExecutor,
}

impl HashAggExecutor {
    pub fn new(args: AggArgs) -> StreamExecutorResult<Self> {
        let (core, input) = AggCore::new(args, false)?;
        Ok(Self { core, input })
    }
}

impl Execute for HashAggExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        let Self { core, input } = *self;
        core.execute_inner(input, "HashAgg").boxed()
    }

    fn identity(&self) -> String {
        self.core.identity("HashAgg")
    }
}
