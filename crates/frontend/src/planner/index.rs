//! Reading an index instead of its table (RisingWave's `LogicalScan::to_index_scan_if_index_covered`): an
//! index is a materialized view of its key and included columns, keyed by its key then the table's pk and
//! hashed by its distribution key, so a scan that needs only columns the index holds reads the same rows
//! from it in another layout. The delta join reads both sides' indexes; the temporal join looks an index up
//! when its key is a longer prefix of the index's pk than of the table's.

use epochlab_common::TableId;

use super::LogicalPlan;
use super::pushdown::remap;
use crate::scalar::ExprNode;

/// An index a scan may read instead of its table.
#[derive(Clone, Debug)]
pub struct IndexScan {
    /// The index's job's table.
    pub table_id: TableId,
    /// The index's catalog id (a view that reads it depends on it).
    pub catalog_id: u32,
    pub name: String,
    /// For each of the table's stored columns, where the index stores it (`None`: not in the index).
    pub columns: Vec<Option<usize>>,
    /// The index's stored pk positions.
    pub pk: Vec<usize>,
}

impl IndexScan {
    /// The index of `table_width` stored columns whose `index_item` (each index column's table column,
    /// `None` for a key expression) is as given.
    pub fn new(
        table_id: TableId,
        catalog_id: u32,
        name: String,
        table_width: usize,
        index_item: &[Option<usize>],
        pk: Vec<usize>,
    ) -> Self {
        let mut columns = vec![None; table_width];
        for (at, from) in index_item.iter().enumerate() {
            if let Some(c) = from.and_then(|f| columns.get_mut(f)) {
                c.get_or_insert(at);
            }
        }
        Self {
            table_id,
            catalog_id,
            name,
            columns,
            pk,
        }
    }

    /// The table's stored column the index's first key column holds.
    pub fn first_key(&self) -> Option<usize> {
        self.columns.iter().position(|c| *c == Some(0))
    }

    /// `scan` (of the index's table) reading the index instead: its expressions and filter over the index's
    /// stored columns. `None` when the scan needs a column the index does not hold, or is not a scan.
    pub fn read(&self, scan: &LogicalPlan) -> Option<LogicalPlan> {
        let LogicalPlan::Scan {
            exprs,
            types,
            filter,
            as_of_proctime,
            ..
        } = scan
        else {
            return None;
        };
        let covered = |e: &ExprNode| {
            let missing = std::cell::Cell::new(false);
            remap(e, &|i| {
                let at = self.columns.get(i).copied().flatten();
                missing.set(missing.get() || at.is_none());
                at.unwrap_or(i)
            });
            !missing.get()
        };
        if !exprs.iter().chain(filter).all(covered) {
            return None;
        }
        let at = |i: usize| self.columns[i].expect("covered");
        Some(LogicalPlan::Scan {
            table: self.name.clone(),
            table_id: self.table_id,
            exprs: exprs.iter().map(|e| remap(e, &at)).collect(),
            types: types.clone(),
            pk: self.pk.clone(),
            filter: filter.as_ref().map(|f| remap(f, &at)),
            as_of_proctime: *as_of_proctime,
        })
    }
}

#[cfg(test)]
mod tests {
    use epochlab_common::DataType;

    use super::*;

    /// A table (id2, a2, b2) with pk id2 and an index on a2 that includes every column: (a2, id2, b2).
    fn index() -> IndexScan {
        let item = [Some(1), Some(0), Some(2)];
        IndexScan::new(TableId(7), 9, "idx".into(), 3, &item, vec![0, 1])
    }

    fn scan(cols: &[usize]) -> LogicalPlan {
        LogicalPlan::Scan {
            table: "version".into(),
            table_id: TableId(1),
            exprs: cols
                .iter()
                .map(|&c| ExprNode::input_ref(c, DataType::Int32))
                .collect(),
            types: vec![DataType::Int32; cols.len()],
            pk: vec![0],
            filter: None,
            as_of_proctime: true,
        }
    }

    #[test]
    fn a_covered_scan_reads_the_index_in_its_layout() {
        let idx = index();
        assert_eq!(idx.first_key(), Some(1));
        let Some(LogicalPlan::Scan {
            table, exprs, pk, ..
        }) = idx.read(&scan(&[0, 1, 2]))
        else {
            panic!("covered")
        };
        assert_eq!((table.as_str(), pk), ("idx", vec![0, 1]));
        let at: Vec<usize> = exprs
            .iter()
            .map(|e| match e {
                ExprNode::InputRef { index, .. } => *index,
                _ => usize::MAX,
            })
            .collect();
        assert_eq!(at, vec![1, 0, 2]);
    }

    #[test]
    fn a_scan_of_a_column_the_index_lacks_reads_the_table() {
        let narrow = IndexScan::new(
            TableId(7),
            9,
            "idx".into(),
            3,
            &[Some(1), Some(0)],
            vec![0, 1],
        );
        assert!(narrow.read(&scan(&[0, 2])).is_none());
        assert!(narrow.read(&scan(&[1, 0])).is_some());
    }
}
