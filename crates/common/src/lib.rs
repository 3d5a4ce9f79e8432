//! Vocabulary shared by every epochlab crate: epochs and the clock they are read from, virtual nodes and
//! bitmaps, datums and rows with their memcomparable and value encodings, stream chunks, ids, and the event
//! log whose digest proves a simulation deterministic.
//!
//! Nothing here reads the wall clock: physical time comes from [`Clock`], which a simulation controls.

pub mod bitmap;
pub mod catalog;
pub mod chunk;
pub mod clock;
pub mod epoch;
pub mod event_log;
pub mod expr_node;
pub mod hash;
pub mod ids;
pub mod memcmp;
pub mod plan;
pub mod rng;
pub mod row;
pub mod samples;
pub mod source;
pub mod toggles;
pub mod trace;
pub mod types;
pub mod value_encoding;
pub mod vnode;
pub mod watch;

pub use bitmap::Bitmap;
pub use chunk::{Op, StreamChunk, StreamChunkBuilder};
pub use clock::Clock;
pub use epoch::{Epoch, EpochPair};
pub use event_log::EventLog;
pub use expr_node::{
    AggCall, AggKind, ExprNode, ExprType, TableFunctionType, WindowFuncCall, WindowFuncKind,
};
pub use ids::{ActorId, FragmentId, TableId, WorkerId};
pub use memcmp::OrderType;
pub use rng::SimRng;
pub use row::OwnedRow;
pub use toggles::Toggles;
pub use types::{DataType, Datum, ScalarImpl};
pub use vnode::{VirtualNode, VnodeCount};
