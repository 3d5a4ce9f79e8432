use epochlab_common::plan::ProjectSetSelectItem;
use epochlab_common::{Datum, OwnedRow, StreamChunk, StreamChunkBuilder};
use epochlab_expr::table_function::{self, ProjectSetValue};
use futures::StreamExt;
use futures_async_stream::try_stream;

use super::non_strict::NonStrict;
use super::{BoxedExecutor, BoxedMessageStream, Execute, Message, StreamExecutorError, Watermark};

/// The select list of a query with set-returning functions (RisingWave's `ProjectSetExecutor`). For each
/// input row, every item is evaluated: a table function gives its rows, a plain expression one value. The
/// row gives as many output rows as its longest table function (a shorter one is NULL past its end, a plain
/// expression repeats), each the `projected_row_id` (0, 1, ..) then the items. An update pair becomes a
/// delete and an insert: the old and the new row may give different numbers of rows. Evaluation is
/// non-strict: a failing expression is NULL, a failing table function gives no rows.
pub struct ProjectSetExecutor {
    input: BoxedExecutor,
    select_list: Vec<ProjectSetSelectItem>,
    eval: NonStrict,
}

/// Output rows per chunk at most (one input row may give many: `generate_series(1, 20000)`).
pub const PROJECT_SET_CHUNK_SIZE: usize = 1024;

impl ProjectSetExecutor {
    pub fn new(
        input: BoxedExecutor,
        select_list: Vec<ProjectSetSelectItem>,
        eval: NonStrict,
    ) -> Self {
        assert!(
            select_list
                .iter()
                .any(|i| matches!(i, ProjectSetSelectItem::TableFunction { .. })),
            "a ProjectSet has a table function (else it is a Project)"
        );
        Self {
            input,
            select_list,
            eval,
        }
    }

    fn item_values(&self, item: &ProjectSetSelectItem, row: &OwnedRow) -> ProjectSetValue {
        match item {
            ProjectSetSelectItem::Expr(e) => ProjectSetValue::One(self.eval.eval(e, row)),
            ProjectSetSelectItem::TableFunction { func, args, .. } => {
                let args: Vec<Datum> = args.iter().map(|a| self.eval.eval(a, row)).collect();
                match table_function::eval(*func, &args) {
                    Ok(rows) => ProjectSetValue::Set(rows),
                    Err(e) => {
                        self.eval.report(&e);
                        ProjectSetValue::Set(Vec::new())
                    }
                }
            }
        }
    }

    /// The output rows of one input row.
    fn rows_of(&self, row: &OwnedRow) -> Vec<OwnedRow> {
        let values: Vec<ProjectSetValue> = self
            .select_list
            .iter()
            .map(|i| self.item_values(i, row))
            .collect();
        table_function::project_set_rows(&values)
            .into_iter()
            .map(OwnedRow::new)
            .collect()
    }

    fn project_set(&self, chunk: &StreamChunk) -> Vec<StreamChunk> {
        let mut builder = StreamChunkBuilder::new(PROJECT_SET_CHUNK_SIZE);
        let mut out = Vec::new();
        for (op, row) in chunk.rows() {
            for r in self.rows_of(row) {
                if let Some(full) = builder.append(op.normalize(), r) {
                    out.push(full);
                }
            }
        }
        out.extend(builder.take());
        out
    }

    /// The watermarks of the select items that derive one from `w`'s column, on their output positions
    /// (after the `projected_row_id`), as a project derives them.
    fn derive_watermarks(&self, w: &Watermark) -> Vec<Watermark> {
        let mut row = vec![None; w.col_idx + 1];
        row[w.col_idx] = Some(w.val.clone());
        let row = OwnedRow::new(row);
        let items = self.select_list.iter().enumerate();
        items
            .filter_map(|(i, item)| match item {
                ProjectSetSelectItem::Expr(e) if e.derives_watermark(w.col_idx) => {
                    let val = self.eval.eval(e, &row)?;
                    Some(Watermark::new(i + 1, e.return_type(), val))
                }
                _ => None,
            })
            .collect()
    }

    #[try_stream(ok = Message, error = StreamExecutorError)]
    async fn execute_inner(mut self) {
        let input = std::mem::replace(&mut self.input, Box::new(super::Taken)).execute();
        #[for_await]
        for msg in input {
            match msg? {
                Message::Chunk(chunk) => {
                    for out in self.project_set(&chunk) {
                        yield Message::Chunk(out);
                    }
                }
                Message::Barrier(b) => yield Message::Barrier(b),
                Message::Watermark(w) => {
                    for w in self.derive_watermarks(&w) {
                        yield Message::Watermark(w);
                    }
                }
            }
        }
    }
}

impl Execute for ProjectSetExecutor {
    fn execute(self: Box<Self>) -> BoxedMessageStream {
        self.execute_inner().boxed()
    }

    fn identity(&self) -> String {
        format!(
            "ProjectSet(actor {}, {} items)",
            self.eval.actor_id,
            self.select_list.len()
        )
    }
}
