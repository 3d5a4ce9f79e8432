//! Meta (reference §6, §7): the catalog of tables, views and sinks with their fragments and actors; DDL that
//! rides on barriers; and the context the global barrier manager runs against, including recovery.

pub mod cancel;
pub mod catalog;
pub mod context;
pub mod crash;
pub mod ddl_controller;
pub mod election;
pub mod graph;
pub mod meta;
pub mod notification;
mod persist;
pub mod progress;
pub mod recovery;
pub mod replace_table;
pub mod reschedule;
pub mod resize;
pub mod scale;
pub mod sql_catalog;
pub mod store;

pub use cancel::{GroupPlacement, MATERIALIZED_VIEW_GROUP, STATE_DEFAULT_GROUP};
pub use catalog::{
    ActorPlacement, BACKFILL_CHUNK_SIZE, Catalog, Fragment, FragmentInfo, GraphFragment, JobGraph,
    JobState, Relation, RelationKind, ScanSite, StreamScanType,
};
pub use crash::{CrashHook, CrashPoint, UnknownCrashPoint};
pub use ddl_controller::{CreateStreamingJob, DdlCommand, DdlOutcome, StreamingJob};
pub use election::{
    LostLeadership, META_ELECTION_KEY, META_LEADER_LEASE_SECS, MetaElection, SimEtcd,
};
pub use epochlab_recovery::{RecoveryConfig, RecoveryError};
pub use graph::{GraphError, check_graph};
pub use meta::{DdlError, JobOptions, MetaConfig, MetaEnv, MetaNode, SinkOptions};
pub use persist::Committing;
pub use progress::CreateAborted;
pub use reschedule::BadAssignment;
