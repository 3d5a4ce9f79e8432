//! Giving a table a new schema (`ALTER TABLE .. ADD COLUMN`; RisingWave's replace-table).
//!
//! RisingWave plans the table anew, builds new actors for it and switches its downstream merges to them on one
//! barrier; storage is column-aware, so rows written before read the new columns as NULL. Here the table's
//! actors keep their ids and take the new desc on that barrier instead, and a stored row is positional: the
//! new columns are appended (never reused after a drop) and an older, shorter row reads NULL in them
//! (`epochlab_state_table`). A job over the table keeps the columns it was planned over (its `StreamScan`'s
//! `output_indices`).
//!
//! One `ReplaceTable` command: an `Update` mutation with the table's new desc, taken after the barrier by the
//! table's materialize and by every backfill reading the table. Meta's catalog takes the new desc when the
//! barrier is collected, before the epoch after it can commit: a recovery before that rebuilds the old table
//! (the new columns' writes are in no committed epoch), one after it the new table. Until the front end has
//! written its own catalog (after this returns), its DML has the old columns, which the materialize pads.
use std::sync::Arc;

use epochlab_barrier::Command;
use epochlab_common::catalog::TableDesc;
use epochlab_common::plan::StreamNode;
use epochlab_common::{DataType, TableId, trace, vspan};

use crate::catalog::{Relation, RelationKind};
use crate::meta::{DdlError, MetaInner, MetaNode};

impl MetaNode {
    /// Append columns of types `added` to table `id`'s schema, its key the same. Returns the new desc once
    /// the barrier that carries it is collected and meta's catalog holds it.
    pub async fn replace_table(
        &self,
        id: TableId,
        added: &[DataType],
    ) -> Result<Arc<TableDesc>, DdlError> {
        let inner = &self.inner;
        // No job is being built over the table meanwhile (its actors would take the old desc), and one
        // replace runs at a time (each appends to the desc the other left).
        let _exclusive = inner.reschedule_lock.write().await;
        let (desc, what) = {
            let catalog = inner.catalog();
            let rel = catalog
                .get(id)
                .ok_or_else(|| DdlError::NotFound(format!("table {id}")))?;
            let desc = Arc::new(wider_desc(rel, added)?);
            let what = format!(
                "replace table {} id={id} columns={}->{}",
                rel.name,
                rel.desc.column_types.len(),
                desc.column_types.len()
            );
            (desc, what)
        };
        let clock = inner.clock.clone();
        let span = vspan!(parent: trace::root(), "replace table", clock, table_id = id.0 as i64);
        let command = Command::ReplaceTable {
            table_id: id,
            desc: desc.clone(),
        };
        let result = inner.run_traced(span, &what, vec![command]).await;
        result?;
        Ok(desc)
    }
}

/// A table's desc with columns of types `added` appended.
fn wider_desc(rel: &Relation, added: &[DataType]) -> Result<TableDesc, DdlError> {
    if rel.kind != RelationKind::Table || added.is_empty() {
        return Err(DdlError::Invalid(format!(
            "{} {} cannot take new columns: only a table can",
            rel.kind.as_str(),
            rel.name
        )));
    }
    let mut desc = (*rel.desc).clone();
    desc.column_types.extend(added.iter().cloned());
    desc.value_indices = (0..desc.column_types.len()).collect();
    Ok(desc)
}

impl MetaInner {
    /// Post-collect of a `ReplaceTable`: the catalog takes the table's new desc (a table dropped meanwhile is
    /// gone).
    pub(crate) fn apply_replace_table(&self, table: TableId, desc: &Arc<TableDesc>) {
        if let Some(rel) = self.catalog().relations.get_mut(&table) {
            replace_desc(rel, desc);
        }
    }
}

/// `rel` with its table's new desc, in its graph's materialize and DML nodes too.
fn replace_desc(rel: &mut Relation, desc: &Arc<TableDesc>) {
    rel.desc = desc.clone();
    let Some(g) = &mut rel.graph else {
        return;
    };
    let mut stack: Vec<&mut StreamNode> = vec![&mut g.root_node];
    stack.extend(g.fragments.iter_mut().map(|f| &mut f.node));
    while let Some(node) = stack.pop() {
        match node {
            StreamNode::Materialize { table, .. } if table.table_id == desc.table_id => {
                *table = desc.clone();
            }
            StreamNode::Dml {
                table_id,
                column_types,
            } if *table_id == desc.table_id => *column_types = desc.column_types.clone(),
            _ => {}
        }
        stack.extend(node.inputs_mut());
    }
}
