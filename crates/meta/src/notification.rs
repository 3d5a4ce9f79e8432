//! Meta's notifications of the SQL catalog (RisingWave's `NotificationManager`,
//! `src/meta/src/manager/notification.rs` at f21fb9b7915). Meta is the catalog's one writer: a change is
//! made on a copy and, once whole, committed with the next notification version, which every subscriber
//! (a frontend's observer, RisingWave's `FrontendObserverNode`) sees at once: a subscriber's first read is
//! meta's snapshot, each later read the newest committed catalog. Nothing is awaited or spawned: a frontend
//! reads its subscription synchronously, so the catalog it answers from after its DDL returns is at least
//! the version that DDL committed (RisingWave's frontend waits for that version). A change that fails commits
//! nothing and takes no version.

use std::sync::Arc;

use tokio::sync::watch;

use crate::sql_catalog::Catalog;

/// The version of the catalog a notification carries (RisingWave's `NotificationVersion`): one more at each
/// committed change; the first catalog is version 0.
pub type NotificationVersion = u64;

/// The catalog as of one notification version.
#[derive(Clone, Debug)]
pub struct CatalogSnapshot {
    pub version: NotificationVersion,
    pub catalog: Arc<Catalog>,
}

/// The committed catalog and its subscribers.
pub struct NotificationManager {
    tx: watch::Sender<CatalogSnapshot>,
}

impl NotificationManager {
    /// Notifications of `catalog`, as version 0.
    pub fn new(catalog: Catalog) -> Self {
        Self {
            tx: watch::Sender::new(CatalogSnapshot {
                version: 0,
                catalog: Arc::new(catalog),
            }),
        }
    }

    /// Notifications of `catalog` as of `version` (a restarted meta's, from its store).
    pub fn at(version: NotificationVersion, catalog: Arc<Catalog>) -> Self {
        Self {
            tx: watch::Sender::new(CatalogSnapshot { version, catalog }),
        }
    }

    /// A subscription: its first read is the current snapshot, each later read the newest version.
    pub fn subscribe(&self) -> watch::Receiver<CatalogSnapshot> {
        self.tx.subscribe()
    }

    /// The committed catalog now.
    pub fn current(&self) -> CatalogSnapshot {
        self.tx.borrow().clone()
    }

    /// Apply `change` to a copy of the committed catalog; when it succeeds, commit the copy as the next
    /// version and notify every subscriber. A failed change leaves the catalog and the version as they were.
    pub fn commit<T, E>(
        &self,
        change: impl FnOnce(&mut Catalog) -> Result<T, E>,
    ) -> Result<(T, NotificationVersion), E> {
        let current = self.current();
        let mut next = Catalog::clone(&current.catalog);
        let out = change(&mut next)?;
        let version = current.version + 1;
        self.tx.send_replace(CatalogSnapshot {
            version,
            catalog: Arc::new(next),
        });
        Ok((out, version))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql_catalog::CatalogError;

    #[test]
    fn a_committed_change_takes_the_next_version_and_reaches_subscribers() {
        let n = NotificationManager::new(Catalog::new());
        let rx = n.subscribe();
        let ((), v) = n
            .commit(|c| c.create_database("d", "root").map(drop))
            .unwrap();
        assert_eq!(v, 1);
        assert_eq!(rx.borrow().version, 1);
        assert!(rx.borrow().catalog.database("d").is_ok());
    }

    #[test]
    fn a_failed_change_commits_nothing() {
        let n = NotificationManager::new(Catalog::new());
        let before = n.current();
        let r: Result<((), _), CatalogError> = n.commit(|c| {
            c.create_database("d", "root")?;
            c.create_database("d", "root").map(drop)
        });
        assert!(r.is_err());
        assert_eq!(n.current().version, before.version);
        assert!(n.current().catalog.database("d").is_err());
    }
}
