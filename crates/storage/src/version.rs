//! The Hummock version: which tables belong to which group, and the max committed epoch; changed only by
//! [`VersionDelta`]s, which every node applies in order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use epochlab_common::{Epoch, TableId};
use serde::{Deserialize, Serialize};

pub type GroupId = u64;

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct HummockVersion {
    pub id: u64,
    pub groups: BTreeMap<GroupId, BTreeSet<TableId>>,
    pub max_committed_epoch: Epoch,
    table_to_group: BTreeMap<TableId, GroupId>,
    /// Groups whose writes are stopped (RisingWave's write limits): a node holds back the data of their
    /// tables until a version lifts the stop.
    write_stopped: BTreeSet<GroupId>,
    /// Each table's cleaning watermark per vnode, the highest committed (RisingWave's `table_watermarks`; the
    /// history readers need lives in the committed store).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub table_watermarks: BTreeMap<TableId, BTreeMap<usize, Vec<u8>>>,
}

/// Why a delta does not follow a version.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeltaError {
    #[error("delta {delta} starts from version {prev}, not {version} (delta applied out of order)")]
    OutOfOrder { delta: u64, prev: u64, version: u64 },
    #[error("delta {delta} takes the max committed epoch back from {from} to {to} (mce went back)")]
    EpochBack { delta: u64, from: Epoch, to: Epoch },
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum GroupChange {
    Create {
        group: GroupId,
        tables: Vec<TableId>,
    },
    RemoveTables {
        group: GroupId,
        tables: Vec<TableId>,
    },
    Destroy {
        group: GroupId,
    },
    /// Tables join a group that exists (RisingWave's static groups).
    AddTables {
        group: GroupId,
        tables: Vec<TableId>,
    },
    /// The group's writes stop (`stopped`) or resume: its uncompacted data passed the write-stop limit, or a
    /// compaction brought it back under.
    WriteLimit {
        group: GroupId,
        stopped: bool,
    },
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct VersionDelta {
    pub id: u64,
    pub prev_id: u64,
    /// The max committed epoch after this delta.
    pub max_committed_epoch: Epoch,
    pub group_changes: Vec<GroupChange>,
    /// Table watermarks this commit brought, each with the epoch it was sealed at (RisingWave's
    /// `new_table_watermarks`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub table_watermarks: BTreeMap<TableId, Vec<(Epoch, crate::VnodeWatermark)>>,
}

impl fmt::Display for VersionDelta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delta {} (after {}): mce={}",
            self.id, self.prev_id, self.max_committed_epoch
        )?;
        for c in &self.group_changes {
            match c {
                GroupChange::Create { group, tables } => {
                    write!(f, " create group {group} {tables:?}")?
                }
                GroupChange::RemoveTables { group, tables } => {
                    write!(f, " remove {tables:?} from group {group}")?
                }
                GroupChange::Destroy { group } => write!(f, " destroy group {group}")?,
                GroupChange::AddTables { group, tables } => {
                    write!(f, " add {tables:?} to group {group}")?
                }
                GroupChange::WriteLimit { group, stopped } => {
                    let verb = if *stopped { "stop" } else { "resume" };
                    write!(f, " {verb} writes to group {group}")?
                }
            }
        }
        if !self.table_watermarks.is_empty() {
            let tables: Vec<_> = self.table_watermarks.keys().collect();
            write!(f, " watermarks of {tables:?}")?;
        }
        Ok(())
    }
}

impl HummockVersion {
    pub fn group_of(&self, table_id: TableId) -> Option<GroupId> {
        self.table_to_group.get(&table_id).copied()
    }

    pub fn contains_table(&self, table_id: TableId) -> bool {
        self.table_to_group.contains_key(&table_id)
    }

    pub fn member_tables(&self) -> impl Iterator<Item = TableId> + '_ {
        self.table_to_group.keys().copied()
    }

    /// Whether the group's writes are stopped.
    pub fn is_write_stopped(&self, group: GroupId) -> bool {
        self.write_stopped.contains(&group)
    }

    /// The first group among those of `tables` whose writes are stopped.
    pub fn write_stopped_group_of(
        &self,
        tables: impl IntoIterator<Item = TableId>,
    ) -> Option<GroupId> {
        tables
            .into_iter()
            .filter_map(|t| self.group_of(t))
            .find(|g| self.write_stopped.contains(g))
    }

    /// Whether `delta` follows this version: it starts from this version's id and keeps the max committed
    /// epoch from going back.
    pub fn check_follows(&self, delta: &VersionDelta) -> Result<(), DeltaError> {
        if delta.prev_id != self.id {
            return Err(DeltaError::OutOfOrder {
                delta: delta.id,
                prev: delta.prev_id,
                version: self.id,
            });
        }
        if delta.max_committed_epoch < self.max_committed_epoch {
            return Err(DeltaError::EpochBack {
                delta: delta.id,
                from: self.max_committed_epoch,
                to: delta.max_committed_epoch,
            });
        }
        Ok(())
    }

    /// Apply a delta; the caller has checked that it follows this version ([`Self::check_follows`]).
    pub fn apply(&mut self, delta: &VersionDelta) {
        if let Err(e) = self.check_follows(delta) {
            panic!("{e}");
        }
        for change in &delta.group_changes {
            match change {
                GroupChange::Create { group, tables }
                | GroupChange::AddTables { group, tables } => {
                    let members = self.groups.entry(*group).or_default();
                    for t in tables {
                        members.insert(*t);
                        let old = self.table_to_group.insert(*t, *group);
                        assert!(old.is_none(), "table {t} registered twice");
                    }
                }
                GroupChange::RemoveTables { group, tables } => {
                    let members = self
                        .groups
                        .get_mut(group)
                        .expect("remove from unknown group");
                    for t in tables {
                        members.remove(t);
                        self.table_to_group.remove(t);
                        self.table_watermarks.remove(t);
                    }
                }
                GroupChange::Destroy { group } => {
                    let members = self.groups.remove(group).expect("destroy unknown group");
                    assert!(
                        members.is_empty(),
                        "destroyed group {group} still has members"
                    );
                    self.write_stopped.remove(group);
                }
                GroupChange::WriteLimit { group, stopped } => {
                    assert!(
                        self.groups.contains_key(group),
                        "write limit of unknown group {group}"
                    );
                    if *stopped {
                        self.write_stopped.insert(*group);
                    } else {
                        self.write_stopped.remove(group);
                    }
                }
            }
        }
        for (table, watermarks) in &delta.table_watermarks {
            let per_vnode = self.table_watermarks.entry(*table).or_default();
            for (_, w) in watermarks {
                for v in w.vnodes.iter_ones() {
                    let slot = per_vnode.entry(v).or_default();
                    if *slot < w.watermark {
                        slot.clone_from(&w.watermark);
                    }
                }
            }
        }
        self.max_committed_epoch = delta.max_committed_epoch;
        self.id = delta.id;
    }
}
