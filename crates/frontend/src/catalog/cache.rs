//! A frontend's copy of meta's SQL catalog (RisingWave's `CatalogReader`, fed by its `FrontendObserverNode`):
//! a subscription to meta's notifications, whose first read was meta's snapshot and each later read is the
//! newest version meta committed. Reads never await; the front end never writes it (DDL goes to meta,
//! `MetaNode::catalog_write`). While meta is down the cache answers with what it had; once a restarted meta
//! serves (a new term), the cache subscribes to it and is rebuilt from its snapshot. A frontend that
//! restarts builds a new cache the same way.

use std::sync::{Arc, Mutex};

use epochlab_meta::notification::{CatalogSnapshot, NotificationVersion};
use tokio::sync::watch;

use super::Catalog;
use crate::cluster_client::ClusterClient;

/// One frontend's catalog.
pub struct CatalogCache {
    cluster: Arc<dyn ClusterClient>,
    subscription: Mutex<Subscription>,
}

/// A subscription to one meta's notifications.
struct Subscription {
    /// The term of the meta subscribed to.
    term: u64,
    rx: watch::Receiver<CatalogSnapshot>,
}

impl Subscription {
    fn to(cluster: &dyn ClusterClient) -> Self {
        let meta = cluster.meta();
        Self {
            term: meta.term(),
            rx: meta.subscribe_catalog(),
        }
    }
}

impl CatalogCache {
    /// A cache built from the serving meta's snapshot, kept up to date by its notifications.
    pub fn subscribe(cluster: Arc<dyn ClusterClient>) -> Self {
        Self {
            subscription: Mutex::new(Subscription::to(&*cluster)),
            cluster,
        }
    }

    fn current(&self) -> CatalogSnapshot {
        let mut sub = self.subscription.lock().unwrap_or_else(|e| e.into_inner());
        let meta = self.cluster.meta();
        if meta.term() != sub.term && !meta.is_killed() {
            *sub = Subscription::to(&*self.cluster);
        }
        sub.rx.borrow().clone()
    }

    /// The catalog as of the newest notification.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.current().catalog
    }

    /// The notification version the cache is at.
    pub fn version(&self) -> NotificationVersion {
        self.current().version
    }
}
