//! Typed ids. Each is a `u32` newtype so that a table id can never be passed where an actor id is expected.

use std::fmt;

macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl From<u32> for $name {
            fn from(v: u32) -> Self {
                Self(v)
            }
        }
    };
}

define_id!(
    /// A table: a user table, a materialized view, or an internal state table.
    TableId
);
define_id!(
    /// One parallel instance of a fragment, running on one compute node.
    ActorId
);
define_id!(
    /// A fragment of a streaming job's plan; its actors share the work by vnode.
    FragmentId
);
define_id!(
    /// A compute node (or any worker known to meta).
    WorkerId
);
