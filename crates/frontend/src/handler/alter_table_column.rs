//! `ALTER TABLE t ADD [COLUMN] c type` and `ALTER TABLE t DROP [COLUMN] [IF EXISTS] c` (RisingWave's
//! `alter_table_column.rs`), with its errors.
//!
//! RisingWave replaces the table: a new table job from the altered definition, column ids kept by name and
//! never reused, downstream jobs switched to it on one barrier, each keeping the columns it reads. Here a
//! column is its position in the stored rows, positions are never reused, and the table's actors stay:
//! - `ADD` appends a stored position: meta gives the table its wider desc on one barrier
//!   (`MetaNode::replace_table`), then the catalog takes the column. Older rows read NULL there; every job
//!   over the table keeps the columns it was planned over.
//! - `DROP` takes the column out of the catalog; its position stays in the stored rows (NULL in every row
//!   written after). It is refused while a job over the table reads it: a view's projection or filter, or
//!   any column of a planned job's scan (RisingWave refuses only the columns the job's plan keeps).
//!
//! A kill during `ADD` leaves the old table (the barrier was not collected) or the wider desc in meta's
//! catalog with the SQL catalog still the old one (the front end's write did not happen): the statement
//! failed, the table reads as before, and a retry appends at the next position.

use epochlab_common::plan::StreamNode;
use epochlab_common::{DataType, TableId};
use sqlparser::ast::{self, AlterTableOperation, ColumnDef, ColumnOption, DropBehavior, Statement};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::create_table::{TableExtras, split_create_table, table_definition};
use super::parse::Name;
use super::{HandlerResult, done};
use crate::catalog::{
    Catalog, CatalogError, Column, ColumnCatalog, Def, RelationCatalog, RelationKind,
};
use crate::dialect::RisingWaveDialect;
use crate::error::SqlError;
use crate::frontend::{ROW_ID, Session, data_type};

/// What an `ALTER TABLE` does to a column.
enum ColumnChange {
    Add(ColumnDef),
    Drop { name: String, if_exists: bool },
}

/// Whether `tokens` are `ALTER TABLE name ADD ..` or `ALTER TABLE name DROP ..`.
pub(super) fn is_column_change(tokens: &[Token]) -> bool {
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut i = 3;
    // A qualified name: `schema.table`.
    while matches!(tokens.get(i), Some(Token::Period)) {
        i += 2;
    }
    tokens
        .get(i)
        .is_some_and(|t| word(t, "ADD") || word(t, "DROP"))
}

impl Session {
    /// `ALTER TABLE .. ADD | DROP [COLUMN] ..`.
    pub(super) async fn handle_alter_table_column(&mut self, text: &str) -> HandlerResult {
        let (name, change) = parse_change(text)?;
        let r = self.table_to_alter(&name)?;
        let def = self
            .catalog()
            .def(&r.job)
            .cloned()
            .ok_or_else(|| CatalogError::NotFound("table", r.name.clone()))?;
        if !def.generated.is_empty() {
            return Err(SqlError::Bind(
                "Alter a table with generated column has not been implemented.".into(),
            ));
        }
        self.check_writable()?;
        match change {
            ColumnChange::Add(column) => self.add_column(&r, def, &column).await,
            ColumnChange::Drop { name, if_exists } => self.drop_column(&r, def, &name, if_exists),
        }
    }

    /// The table `name`, or RisingWave's error for a relation that is not one.
    fn table_to_alter(&self, name: &Name) -> Result<RelationCatalog, SqlError> {
        match self.resolve_kind(name, RelationKind::Table) {
            Ok(r) if r.table_id.is_some() => Ok(r),
            Ok(_) | Err(CatalogError::WrongKind(_)) => Err(SqlError::InvalidInputSyntax(format!(
                "\"{}\" is not a table or cannot be altered",
                name.last()
            ))),
            Err(e) => Err(e.into()),
        }
    }

    async fn add_column(&self, r: &RelationCatalog, def: Def, column: &ColumnDef) -> HandlerResult {
        let name = crate::binder::ident(&column.name);
        check_new_name(&def, &name, &r.name)?;
        check_added_column(column)?;
        crate::binder::check_column_name(&name)?;
        let ty = data_type(&column.data_type)?;
        let table_id = r.table_id.expect("a table has its job");
        let desc = self
            .cluster()
            .meta()
            .replace_table(table_id, std::slice::from_ref(&ty))
            .await?;
        self.catalog_write(|catalog: &mut Catalog| {
            apply_altered(catalog, r.id, |def, ct| {
                check_new_name(def, &name, &r.name)?;
                // Pinned before `stored` grows: the row id stays where the table was created with it.
                def.row_id_at = def.row_id_index();
                def.columns.push(Column {
                    name: name.clone(),
                    ty: ty.clone(),
                    src: desc.column_types.len() - 1,
                });
                def.stored = desc.column_types.clone();
                ct.columns.push(column.clone());
                Ok(())
            })
        })?;
        done()
    }

    fn drop_column(
        &self,
        r: &RelationCatalog,
        def: Def,
        name: &str,
        if_exists: bool,
    ) -> HandlerResult {
        let Some(column) = def.columns.iter().find(|c| c.name == name) else {
            if if_exists {
                self.engine()
                    .note(format!("column \"{name}\" does not exist, skipping"));
                return done();
            }
            return Err(no_such_column(name, &r.name));
        };
        let src = column.src;
        if def.pk.contains(&src) {
            return Err(SqlError::InvalidInputSyntax(
                "alter primary key of table is not supported".into(),
            ));
        }
        if self.column_is_read(r, src) {
            return Err(SqlError::Invalid(
                "unable to drop the column due to being referenced by downstream materialized views or sinks"
                    .into(),
            ));
        }
        self.catalog_write(|catalog: &mut Catalog| {
            apply_altered(catalog, r.id, |def, ct| {
                let Some(i) = def.columns.iter().position(|c| c.name == name) else {
                    return Err(no_such_column(name, &r.name));
                };
                def.row_id_at = def.row_id_index();
                def.columns.remove(i);
                ct.columns.retain(|c| crate::binder::ident(&c.name) != name);
                Ok(())
            })
        })?;
        done()
    }

    /// Whether a job over table `r` reads its stored column `src`: an index the columns it holds; a view of
    /// the table's rows reads its projection's and filter's columns; a planned job every column its scans of the table emit (the
    /// table's columns when the job was created: the planner keeps them all).
    fn column_is_read(&self, r: &RelationCatalog, src: usize) -> bool {
        let table = r.table_id.expect("a table has its job");
        let catalog = self.catalog();
        catalog.dependents(r.id).into_iter().any(|d| {
            let Some(dep) = catalog.relation(d) else {
                return false;
            };
            // An index with its own layout of plain columns holds the columns its `index_item` names (one
            // with a key expression is judged by its scan, as any job).
            if let Some(info) = dep.index.as_ref().filter(|i| !i.index_item.is_empty())
                && info.index_item.iter().all(Option::is_some)
            {
                return info.index_item.contains(&Some(src));
            }
            match (dep.kind, catalog.def(&dep.job)) {
                (RelationKind::View, _) => false,
                (
                    _,
                    Some(Def {
                        project: Some(project),
                        filter,
                        ..
                    }),
                ) => project
                    .iter()
                    .chain(filter.as_ref())
                    .any(|e| e.input_refs().contains(&src)),
                _ => dep
                    .table_id
                    .is_none_or(|job| self.scans_read(job, table, src)),
            }
        })
    }

    /// Whether job `job`'s scans of `table` emit its stored column `src` (a scan stored without output
    /// columns emits the ones its table had when the job was planned).
    fn scans_read(&self, job: TableId, table: TableId, src: usize) -> bool {
        let Some(rel) = self.cluster().meta().relation(job) else {
            return true;
        };
        let Some(graph) = &rel.graph else {
            return true;
        };
        let nodes =
            std::iter::once(&graph.root_node).chain(graph.fragments.iter().map(|f| &f.node));
        nodes.flat_map(|n| n.walk()).any(|n| match n {
            StreamNode::StreamScan {
                upstream_table,
                output_indices,
                ..
            } if upstream_table.table_id == table => match output_indices.is_empty() {
                true => src < upstream_table.column_types.len(),
                false => output_indices.contains(&src),
            },
            _ => false,
        })
    }
}

fn no_such_column(column: &str, table: &str) -> SqlError {
    SqlError::InvalidInputSyntax(format!(
        "column \"{column}\" of table \"{table}\" does not exist"
    ))
}

fn check_new_name(def: &Def, name: &str, table: &str) -> Result<(), SqlError> {
    if def.columns.iter().any(|c| c.name == name) || name == ROW_ID {
        return Err(SqlError::InvalidInputSyntax(format!(
            "column \"{name}\" of table \"{table}\" already exists"
        )));
    }
    Ok(())
}

/// Table `id` as the catalog holds it now, changed by `change` (its `Def`, and its definition's columns),
/// in the same write: the catalog's columns (the visible ones, then the hidden row id), its key and
/// comments by column name, its definition, its `Def`.
fn apply_altered(
    catalog: &mut Catalog,
    id: crate::catalog::RelationId,
    change: impl FnOnce(&mut Def, &mut ast::CreateTable) -> Result<(), SqlError>,
) -> Result<(), SqlError> {
    let r = catalog
        .relation(id)
        .cloned()
        .ok_or_else(|| CatalogError::NotFound("table", id.to_string()))?;
    let mut def = catalog
        .def(&r.job)
        .cloned()
        .ok_or_else(|| CatalogError::NotFound("table", r.name.clone()))?;
    let (mut ct, extras) = parsed_definition(&r.definition)?;
    change(&mut def, &mut ct)?;
    let mut columns: Vec<ColumnCatalog> = def
        .columns
        .iter()
        .map(|c| ColumnCatalog::new(c.name.clone(), c.ty.clone()))
        .collect();
    if def.row_id {
        columns.push(ColumnCatalog::hidden(ROW_ID, DataType::Int64));
    }
    let at = |old: usize| -> Option<usize> {
        let name = &r.columns.get(old)?.name;
        columns.iter().position(|c| &c.name == name)
    };
    let pk = r.pk.iter().filter_map(|&p| at(p)).collect();
    let dist_key = r.dist_key.iter().filter_map(|&p| at(p)).collect();
    let descriptions = r
        .column_descriptions
        .iter()
        .filter_map(|(&p, text)| Some((at(p)?, text.clone())))
        .collect();
    let rel = catalog.relation_mut(id).expect("read above");
    rel.columns = columns;
    rel.pk = pk;
    rel.dist_key = dist_key;
    rel.column_descriptions = descriptions;
    rel.definition = table_definition(&ct, &extras)
        .replace("\"STRUCT<", "STRUCT<")
        .replace(">\"", ">");
    catalog.set_def(r.job, def);
    Ok(())
}

/// The table's name and the change, from the statement's text.
fn parse_change(text: &str) -> Result<(Name, ColumnChange), SqlError> {
    let parsed = Parser::parse_sql(&RisingWaveDialect, text)?;
    let [Statement::AlterTable(at)] = parsed.as_slice() else {
        return Err(SqlError::Parse("expected one ALTER TABLE".into()));
    };
    let name = Name::of_object(&at.name)?;
    let change = match at.operations.as_slice() {
        [AlterTableOperation::AddColumn { column_def, .. }] => {
            ColumnChange::Add(column_def.clone())
        }
        [
            AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                drop_behavior,
                ..
            },
        ] => {
            if *drop_behavior == Some(DropBehavior::Cascade) {
                return Err(SqlError::NotImplemented("drop column cascade".into()));
            }
            let [column] = column_names.as_slice() else {
                return Err(SqlError::Unsupported("DROP of several columns".into()));
            };
            ColumnChange::Drop {
                name: crate::binder::ident(column),
                if_exists: *if_exists,
            }
        }
        _ => return Err(SqlError::Unsupported(format!("{at}"))),
    };
    Ok((name, change))
}

/// An added column's options, as RisingWave checks them: no primary key, no generated column.
fn check_added_column(column: &ColumnDef) -> Result<(), SqlError> {
    for o in &column.options {
        match &o.option {
            ColumnOption::PrimaryKey(_) => {
                return Err(SqlError::InvalidInputSyntax(
                    "alter primary key of table is not supported".into(),
                ));
            }
            ColumnOption::Generated { .. } => {
                return Err(SqlError::InvalidInputSyntax(
                    "alter table add generated columns is not supported".into(),
                ));
            }
            ColumnOption::Collation(name) => {
                crate::frontend::ddl::check_collation(name, &data_type(&column.data_type)?)?
            }
            _ => {
                return Err(SqlError::NotImplemented(format!(
                    "column constraints \"{o}\""
                )));
            }
        }
    }
    Ok(())
}

/// A table's definition as `sqlparser` reads it, and its `APPEND ONLY` and `FORMAT .. ENCODE ..`.
fn parsed_definition(definition: &str) -> Result<(ast::CreateTable, TableExtras), SqlError> {
    let tokens: Vec<Token> = sqlparser::tokenizer::Tokenizer::new(&RisingWaveDialect, definition)
        .tokenize()
        .map_err(|e| SqlError::Parse(e.to_string()))?
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    let (text, extras) = split_create_table(&tokens)?
        .unwrap_or_else(|| (definition.to_string(), TableExtras::default()));
    let text = crate::frontend::readable_create_table(&text)?;
    let parsed = Parser::parse_sql(&RisingWaveDialect, &text)?;
    match parsed.as_slice() {
        [Statement::CreateTable(ct)] => Ok((ct.clone(), extras)),
        _ => Err(SqlError::Parse(format!(
            "the table's definition is not a CREATE TABLE: {definition}"
        ))),
    }
}
