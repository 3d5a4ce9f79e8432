//! `--meta-store-out FILE`: the run's meta store, as it was when the run ended or failed, written as an
//! SQLite file that `sqlite3` opens (`repro`, `slt`, `soak --plan`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use epochlab_meta::store::{MetaStore, MetaStoreError};
use epochlab_sim::ClusterHook;

/// Keeps the store of the run's cluster (a restarted meta opens the same store) to write it after the run.
#[derive(Clone, Default)]
pub struct StoreOut {
    store: Arc<Mutex<Option<Arc<dyn MetaStore>>>>,
}

impl StoreOut {
    /// A cluster hook that keeps the cluster's store, then calls `inner`.
    pub fn hook(&self, inner: Option<ClusterHook>) -> ClusterHook {
        let slot = self.store.clone();
        Box::new(move |cluster| {
            let store = cluster.meta().store().clone();
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(store);
            if let Some(inner) = inner {
                inner(cluster);
            }
        })
    }

    /// Write the store as an SQLite file at `path`, replacing what is there. A run whose cluster never
    /// started has no store: an error.
    pub fn write(&self, path: &Path) -> Result<(), MetaStoreError> {
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let store = store.ok_or_else(|| {
            MetaStoreError::Backend("the run ended before its cluster started".into())
        })?;
        store.write_sqlite(path)
    }
}
