use futures::StreamExt;

use super::{AggArgs, AggCore};
use crate::executor::{BoxedExecutor, BoxedMessageStream, Execute, StreamExecutorResult};

/// Global aggregation (RisingWave's `SimpleAggExecutor`): one group with the empty key, always in the
/// output. A new job emits its row (count 0, NULL sums) at its first barrier after the initial one;
/// after a recovery the row is loaded from the result table and emitted again only when it changes.
pub struct SimpleAggExecutor {
    core: AggCore,
    input: BoxedExecutor,
}

impl SimpleAggExecutor {
    pub fn new(args: AggArgs) -> StreamExecutorResult<Self> {
        assert!(
            args.group_key.is_empty(),
            "a simple aggregation has no group key"
        );
        let (core, input) = AggCore::new(args, true)?;
        Ok(Self { core, input })
    }
}

impl Execute for SimpleAggExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        let Self { core, input } = *self;
        core.execute_inner(input, "SimpleAgg").boxed()
    }

    fn identity(&self) -> String {
        self.core.identity("SimpleAgg")
    }
}
