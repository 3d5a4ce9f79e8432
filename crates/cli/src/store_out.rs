//! `--meta-store-out FILE`: the run's meta store, as it was when the run ended or failed, written as an
//! SQLite file that `sqlite3` opens (`repro`, `slt`, `soak --plan`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use epochlab_meta::store::MetaStoreError;
use epochlab_sim::{Cluster, ClusterHook};

/// Keeps the run's cluster to write, after the run, the store of the meta serving it at the end (a
/// restarted meta leads the store it started from).
#[derive(Clone, Default)]
pub struct StoreOut {
    cluster: Arc<Mutex<Option<Arc<Cluster>>>>,
}

impl StoreOut {
    /// A cluster hook that keeps the cluster, then calls `inner`.
    pub fn hook(&self, inner: Option<ClusterHook>) -> ClusterHook {
        let slot = self.cluster.clone();
        Box::new(move |cluster| {
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(cluster.clone());
            if let Some(inner) = inner {
                inner(cluster);
            }
        })
    }

    /// Write the store as an SQLite file at `path`, replacing what is there, and say so on stderr as
    /// `epochlab COMMAND`. A run whose cluster never started has no store: an error.
    pub fn write(&self, path: &Path, command: &str) -> Result<(), MetaStoreError> {
        let cluster = self
            .cluster
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let cluster = cluster.ok_or_else(|| {
            MetaStoreError::Backend("the run ended before its cluster started".into())
        })?;
        cluster.meta().store().write_sqlite(path)?;
        eprintln!(
            "epochlab {command}: meta store written to {}",
            path.display()
        );
        Ok(())
    }
}
