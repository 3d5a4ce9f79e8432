//! What state tables and executors need of the catalog.

use serde::{Deserialize, Serialize};

use crate::{DataType, OrderType, TableId, VnodeCount};

/// How a table's rows map to vnodes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum Distribution {
    /// Every row is in vnode 0.
    Singleton,
    /// vnode = hash of the pk columns at these positions *within the pk*.
    HashDistKey { dist_key_in_pk: Vec<usize> },
    /// vnode = the value (an `Int16`) of this pk column: backfill progress tables, whose pk is the vnode.
    VnodeColumn { vnode_col_idx_in_pk: usize },
}

/// What a state table needs of its catalog entry.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct TableDesc {
    pub table_id: TableId,
    pub column_types: Vec<DataType>,
    pub pk_indices: Vec<usize>,
    pub pk_orders: Vec<OrderType>,
    /// Columns stored in the value; the rest must be pk columns (they are read back from the key).
    pub value_indices: Vec<usize>,
    pub distribution: Distribution,
    pub vnode_count: VnodeCount,
}

impl TableDesc {
    /// A table whose value holds every column, hash-distributed by the pk columns at `dist_key_in_pk`.
    pub fn hash(
        table_id: TableId,
        column_types: Vec<DataType>,
        pk_indices: Vec<usize>,
        dist_key_in_pk: Vec<usize>,
        vnode_count: VnodeCount,
    ) -> Self {
        let n = column_types.len();
        let pk_orders = vec![OrderType::ascending(); pk_indices.len()];
        Self {
            table_id,
            column_types,
            pk_indices,
            pk_orders,
            value_indices: (0..n).collect(),
            distribution: Distribution::HashDistKey { dist_key_in_pk },
            vnode_count,
        }
    }

    /// A backfill progress table (RisingWave's `build_backfill_state_catalog`): columns
    /// `[vnode Int16, upstream pk..., backfill_finished Bool, row_count Int64]`, pk `[vnode]`, the vnode taken
    /// from the pk column, the vnode stored only in the key.
    pub fn backfill_state(
        table_id: TableId,
        upstream_pk_types: &[DataType],
        vnode_count: VnodeCount,
    ) -> Self {
        let mut column_types = vec![DataType::Int16];
        column_types.extend_from_slice(upstream_pk_types);
        column_types.push(DataType::Boolean);
        column_types.push(DataType::Int64);
        let n = column_types.len();
        Self {
            table_id,
            column_types,
            pk_indices: vec![0],
            pk_orders: vec![OrderType::ascending()],
            value_indices: (1..n).collect(),
            distribution: Distribution::VnodeColumn {
                vnode_col_idx_in_pk: 0,
            },
            vnode_count,
        }
    }

    /// A watermark filter's table (RisingWave's `infer_internal_table_catalog` of `StreamWatermarkFilter`):
    /// columns `[vnode Int16, watermark]`, pk `[vnode]`, the vnode taken from the pk column, the watermark
    /// the value.
    pub fn watermark_filter_state(
        table_id: TableId,
        watermark_type: DataType,
        vnode_count: VnodeCount,
    ) -> Self {
        Self {
            table_id,
            column_types: vec![DataType::Int16, watermark_type],
            pk_indices: vec![0],
            pk_orders: vec![OrderType::ascending()],
            value_indices: vec![1],
            distribution: Distribution::VnodeColumn {
                vnode_col_idx_in_pk: 0,
            },
            vnode_count,
        }
    }

    /// The columns a row is hashed by to find its vnode (indices into the row): the distribution key's
    /// columns; none for a singleton (vnode 0). A vnode-column table's vnode is not a hash: its pk is given.
    pub fn dist_key_indices(&self) -> Vec<usize> {
        match &self.distribution {
            Distribution::Singleton => vec![],
            Distribution::HashDistKey { dist_key_in_pk } => {
                dist_key_in_pk.iter().map(|&i| self.pk_indices[i]).collect()
            }
            Distribution::VnodeColumn { .. } => self.pk_indices.clone(),
        }
    }

    pub fn pk_types(&self) -> Vec<DataType> {
        self.pk_indices
            .iter()
            .map(|&i| self.column_types[i].clone())
            .collect()
    }

    /// Check the description is self-consistent; called by `StateTable::new`.
    pub fn validate(&self) {
        let n = self.column_types.len();
        assert_eq!(
            self.pk_indices.len(),
            self.pk_orders.len(),
            "one order per pk column"
        );
        assert!(
            self.pk_indices.iter().all(|&i| i < n),
            "pk index out of range"
        );
        assert!(
            self.value_indices.iter().all(|&i| i < n),
            "value index out of range"
        );
        for i in 0..n {
            assert!(
                self.value_indices.contains(&i) || self.pk_indices.contains(&i),
                "column {i} is neither in the value nor in the pk"
            );
        }
        match &self.distribution {
            Distribution::Singleton => {}
            Distribution::HashDistKey { dist_key_in_pk } => {
                assert!(dist_key_in_pk.iter().all(|&i| i < self.pk_indices.len()));
            }
            Distribution::VnodeColumn {
                vnode_col_idx_in_pk,
            } => {
                assert!(*vnode_col_idx_in_pk < self.pk_indices.len());
                assert_eq!(
                    self.column_types[self.pk_indices[*vnode_col_idx_in_pk]],
                    DataType::Int16,
                    "the vnode column is Int16"
                );
            }
        }
    }
}
