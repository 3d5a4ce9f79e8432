//! What the front end keeps of each streaming job beyond the relation's catalog entry, and meta stores for
//! it: the columns SQL sees over the stored rows, a view's filter and projection, a table's stored types,
//! primary key and hidden row id, and the statement. RisingWave keeps the same in its `TableCatalog` (columns,
//! `pk`, `row_id_index`, `append_only`, `definition`), which meta owns.

use epochlab_common::DataType;
use epochlab_common::expr_node::ExprNode;
use serde::{Deserialize, Serialize};

use crate::catalog::RelationKind;

/// A column of a relation as SQL sees it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub ty: DataType,
    /// Its position in the rows the relation is read from.
    pub src: usize,
}

/// What a relation is, as SQL names it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Table,
    MaterializedView,
    Sink,
}

impl Kind {
    /// What SQL calls a job of meta's `kind`.
    pub fn of(kind: RelationKind) -> Self {
        match kind {
            RelationKind::Table => Kind::Table,
            RelationKind::MaterializedView => Kind::MaterializedView,
            RelationKind::Sink => Kind::Sink,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Table => "table",
            Kind::MaterializedView => "materialized view",
            Kind::Sink => "sink",
        }
    }
}

/// What SQL knows of a relation beyond meta's catalog: its columns, its filter, its statement.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Def {
    pub kind: Kind,
    /// The columns SQL sees; each `src` is a position in the stored rows.
    pub columns: Vec<Column>,
    /// The view's `WHERE` (and its upstream's), over the stored rows.
    pub filter: Option<ExprNode>,
    /// A view's columns as expressions over the stored rows (one per column); `None`: each column is the
    /// stored column at its `src`.
    pub project: Option<Vec<ExprNode>>,
    /// A table's stored columns (the visible ones, then `_row_id` when it has no primary key).
    pub stored: Vec<DataType>,
    /// A table without a primary key: it has a hidden row id (see [`Def::row_id_index`]).
    pub row_id: bool,
    /// Where the hidden row id is stored: the last stored column when the table was created, which
    /// `ALTER TABLE .. ADD COLUMN` then sets (`None`: the last stored column).
    #[serde(default)]
    pub row_id_at: Option<usize>,
    /// The table's primary key, as positions in the stored rows.
    pub pk: Vec<usize>,
    /// `CREATE TABLE ... APPEND ONLY`: no `UPDATE` or `DELETE`.
    pub append_only: bool,
    /// The statement that created it (`SHOW JOBS`).
    pub statement: String,
    /// A table's generated columns (`v INT AS expr`): each stored column's position and its expression over
    /// the stored row, evaluated when a row is written (none reads another generated column).
    #[serde(default)]
    pub generated: Vec<(usize, ExprNode)>,
    /// A table's watermarks (`WATERMARK FOR col AS expr`, RisingWave's `WatermarkDesc`): the stored
    /// position of the column and the expression over the stored row whose value is its watermark.
    #[serde(default)]
    pub watermarks: Vec<(usize, ExprNode)>,
    /// A materialized view's stored columns its job sends watermarks for (RisingWave's
    /// `watermark_columns` of its table catalog): a job over it may emit on window close by them.
    #[serde(default)]
    pub watermark_columns: Vec<usize>,
}

impl Def {
    /// Whether the column stored at `src` is generated.
    pub fn is_generated(&self, src: usize) -> bool {
        self.generated.iter().any(|(at, _)| *at == src)
    }

    /// The stored position of a table's hidden row id; `None` when it has a primary key.
    pub fn row_id_index(&self) -> Option<usize> {
        self.row_id.then(|| {
            self.row_id_at
                .unwrap_or(self.stored.len().saturating_sub(1))
        })
    }
}
