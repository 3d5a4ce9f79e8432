//! A frontend's copy of meta's SQL catalog (RisingWave's `CatalogReader`, fed by its `FrontendObserverNode`):
//! a subscription to meta's notifications, whose first read was meta's snapshot and each later read is the
//! newest version meta committed. Reads take no lock that a write holds and never await; the front end never
//! writes it (DDL goes to meta, `MetaNode::catalog_write`). A frontend that restarts subscribes again, so its
//! cache is rebuilt from meta's snapshot.

use std::sync::Arc;

use epochlab_meta::MetaNode;
use epochlab_meta::notification::{CatalogSnapshot, NotificationVersion};
use tokio::sync::watch;

use super::Catalog;

/// One frontend's catalog.
pub struct CatalogCache {
    rx: watch::Receiver<CatalogSnapshot>,
}

impl CatalogCache {
    /// A cache built from `meta`'s snapshot, kept up to date by its notifications.
    pub fn subscribe(meta: &MetaNode) -> Self {
        Self {
            rx: meta.subscribe_catalog(),
        }
    }

    /// The catalog as of the newest notification.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.rx.borrow().catalog.clone()
    }

    /// The notification version the cache is at.
    pub fn version(&self) -> NotificationVersion {
        self.rx.borrow().version
    }
}
