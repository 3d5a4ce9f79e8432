//! DDL through the front end: `CREATE TABLE` (with its connector and its key), `CREATE MATERIALIZED VIEW`,
//! `CREATE VIEW`, `CREATE SINK` and `ALTER ... SET`, each mapped onto meta's jobs and the engine's [`Def`]s.

use epochlab_common::plan::SinkKind;
use epochlab_common::{DataType, TableId};
use epochlab_meta::{JobOptions, JobState, Relation, SinkOptions};
use sqlparser::ast::{
    self, ColumnOption, CreateTableOptions, Expr as Ast, Query, Statement, TableConstraint,
};
use sqlparser::tokenizer::Token;

use super::words::{SettingValue, Words, parse_one, unsupported_words};
use super::{
    Def, Kind, Output, ROW_ID, Session, data_type, distinct_options, ident, listed_columns,
    positive_u32,
};
use crate::binder::Binder;
use crate::catalog::{ColumnCatalog, RelationKind as CatalogKind};
use crate::error::{CatalogProblem, SqlError};
use crate::expr::{Column, literal, resolve};
use crate::handler::create_table::{TableExtras, table_definition, validate_compatibility};
use crate::scalar::ExprNode;
use crate::scalar::cast::CastContext;

/// A `CREATE SINK` statement as read from its words.
struct SinkStatement {
    target: crate::handler::stream_job::CreationTarget,
    if_not_exists: bool,
    query: Box<Query>,
    with: SinkWith,
}

/// What a sink's WITH options decide (see [`Session::sink_with`]).
#[derive(Clone, Debug)]
pub(crate) struct SinkWith {
    /// The connector's name, lower case (only `blackhole` runs here; EXPLAIN plans any).
    pub connector: String,
    /// Options accepted and ignored (noted once the sink is accepted).
    pub ignored: Vec<String>,
    pub rate_limit: Option<u32>,
    /// `type = 'append-only'` (otherwise an upsert sink).
    pub append_only: bool,
    /// `force_append_only = 'true'`.
    pub forced: bool,
}

impl Session {
    pub(crate) fn parallelism(&self) -> usize {
        self.config
            .streaming_parallelism()
            .unwrap_or(self.engine.default_parallelism)
    }

    pub(crate) fn rate_limit(&self) -> Option<u32> {
        self.config.streaming_rate_limit()
    }

    /// A new relation's name must be free: `Ok(true)` when it exists and `IF NOT EXISTS` was given. A job
    /// still being created is RisingWave's meta's `table is in creating procedure` (see
    /// [`SqlError::InCreatingProcedure`]), not `exists`.
    /// The catalog's relation of that name answers with its kind (RisingWave's frontend catalog check).
    pub(crate) fn check_free(&self, name: &str, if_not_exists: bool) -> Result<bool, SqlError> {
        let rel = self.cluster().meta().relation_by_name(name);
        if let Some(rel) = &rel
            && rel.state == JobState::Creating
        {
            return Err(SqlError::InCreatingProcedure { id: rel.id.0 });
        }
        match (rel, self.listed_duplicate(name)) {
            (None, None) => Ok(false),
            _ if if_not_exists => Ok(true),
            (_, Some(dup)) => Err(dup.into()),
            (Some(rel), None) => Err(SqlError::catalog(
                CatalogProblem::Exists,
                format!(
                    "{} with name \"{name}\" exists",
                    Kind::of(rel.kind).as_str()
                ),
            )),
        }
    }

    /// A `CREATE TABLE`'s `connector` option: only datagen (not run: the table gets rows from DML only), in
    /// a plain format.
    pub(super) fn table_connector(
        &self,
        name: &str,
        ct: &ast::CreateTable,
        extras: &TableExtras,
    ) -> Result<Option<String>, SqlError> {
        let mut connector = None;
        if let CreateTableOptions::With(options) = &ct.table_options {
            for (key, value) in distinct_options(options)? {
                if key == "connector" {
                    // A datagen table is accepted without its generator (the ddl files only list it);
                    // other connectors need an external system.
                    let datagen = value
                        .to_string()
                        .trim_matches('\'')
                        .eq_ignore_ascii_case("datagen");
                    if !datagen {
                        return Err(SqlError::Unsupported(
                            "CREATE TABLE with a connector (a source)".into(),
                        ));
                    }
                    if let Some(f) = extras.format.as_ref().map(|f| f.format.clone())
                        && !f.eq_ignore_ascii_case("plain")
                    {
                        let mut f = f.to_lowercase();
                        if let Some(c) = f.get_mut(0..1) {
                            c.make_ascii_uppercase();
                        }
                        return Err(SqlError::Invalid(format!(
                            "connector datagen does not support format {f}"
                        )));
                    }
                    self.engine.note(format!(
                        "CREATE TABLE {name}: its datagen connector is not run; the table gets rows from DML only"
                    ));
                    connector = Some("datagen".to_string());
                }
            }
        }
        if let (Some(c), Some(f)) = (&connector, &extras.format) {
            validate_compatibility(c, f)?;
        }
        Ok(connector)
    }

    /// `CREATE TABLE`, with RisingWave's clauses `sqlparser` does not read in `extras` (see
    /// [`crate::handler::create_table`]).
    pub(crate) async fn create_table(
        &self,
        ct: &ast::CreateTable,
        text: &str,
        extras: &TableExtras,
    ) -> Result<Output, SqlError> {
        let target = self.creation_name(&ct.name)?;
        let name = target.job.clone();
        if self.check_free(&name, ct.if_not_exists)? {
            return Ok(Output::Done(0));
        }
        let connector = self.table_connector(&name, ct, extras)?;
        let (columns, pk_names, generated) = bind_table_columns(&name, ct)?;
        let (stored, row_id, pk) = table_key(&columns, &pk_names)?;
        let mut def = Def {
            kind: Kind::Table,
            columns,
            filter: None,
            project: None,
            stored: stored.clone(),
            row_id,
            row_id_at: None,
            pk: pk.clone(),
            append_only: extras.append_only,
            statement: text.trim().to_string(),
            generated: Vec::new(),
            watermarks: Vec::new(),
            watermark_columns: Vec::new(),
        };
        def.generated = self.bind_generated_columns(&name, &def, &generated)?;
        def.watermarks = self.bind_watermarks(&name, &def, &extras.watermarks)?;
        if !def.append_only && !def.watermarks.is_empty() {
            return Err(SqlError::NotSupported(
                "Defining watermarks on table requires the table to be append only.".into(),
            ));
        }
        let watermark = def.watermarks.first().cloned();
        let mut columns_listed = listed_columns(&def);
        if row_id {
            columns_listed.push(ColumnCatalog::hidden(ROW_ID, DataType::Int64));
        }
        // The STRUCT<..> types the rewrite quoted (see `rewrite_create_table`), shown as written.
        let shown = table_definition(ct, extras)
            .replace("\"STRUCT<", "STRUCT<")
            .replace(">\"", ">");
        let mut relation = self.job_relation(
            &target,
            CatalogKind::Table,
            columns_listed,
            pk.clone(),
            &shown,
            Vec::new(),
        )?;
        relation.connector = connector;
        relation.append_only = extras.append_only;
        let job = epochlab_meta::StreamingJob::Table {
            column_types: stored,
            dist_key_in_pk: (0..pk.len()).collect(),
            pk,
            conflict: table_conflict(row_id),
            watermark,
        };
        let options = JobOptions::parallelism(self.parallelism());
        self.create_in_meta(relation, None, def, job, options).await
    }

    pub(super) async fn create_mv(
        &self,
        cv: &ast::CreateView,
        text: &str,
        eowc: bool,
    ) -> Result<Output, SqlError> {
        if cv.or_replace || cv.or_alter {
            return Err(SqlError::Unsupported("CREATE OR REPLACE".into()));
        }
        let target = self.creation_name(&cv.name)?;
        let name = target.job.clone();
        let options = match &cv.options {
            CreateTableOptions::None => Vec::new(),
            CreateTableOptions::With(o) => o.clone(),
            other => return Err(SqlError::Unsupported(format!("view options {other}"))),
        };
        let mut rate_limit = self.rate_limit();
        for (key, value) in distinct_options(&options)? {
            match key.as_str() {
                "streaming_rate_limit" | "backfill_rate_limit" => {
                    rate_limit = positive_u32(&literal(&value)?, &key)?;
                }
                other => return Err(SqlError::UnexpectedOptions(other.to_string())),
            }
        }
        if self.check_free(&name, cv.if_not_exists)? {
            return Ok(Output::Done(0));
        }
        let options = self.job_options(rate_limit);
        let renames: Vec<String> = cv.columns.iter().map(|c| ident(&c.name)).collect();
        // An emit-on-window-close view waits in an executor of its own: a graph job.
        let single = match eowc {
            true => Err(SqlError::Unsupported("EMIT ON WINDOW CLOSE".into())),
            false => self.view_of(&cv.query, Kind::MaterializedView, text, &renames),
        };
        let (upstream, def) = match single {
            Ok(v) => v,
            Err(SqlError::Unsupported(_)) => {
                return self
                    .create_mv_graph(&target, cv, &renames, options, text, eowc)
                    .await;
            }
            Err(e) => return Err(e),
        };
        let mut shown = cv.clone();
        shown.if_not_exists = false;
        let mut relation = self.job_relation(
            &target,
            CatalogKind::MaterializedView,
            listed_columns(&def),
            Vec::new(),
            &shown.to_string(),
            self.job_dependencies(upstream, &cv.query),
        )?;
        self.with_upstream_key(&mut relation, upstream);
        let job = epochlab_meta::StreamingJob::MaterializedView { upstream };
        self.create_in_meta(relation, None, def, job, options).await
    }

    /// `CREATE SINK [IF NOT EXISTS] name (FROM relation | AS query) WITH (...)` read from its words
    /// (`CREATE` next): its target, its query and its options.
    fn parse_sink(&self, w: &mut Words<'_>) -> Result<SinkStatement, SqlError> {
        w.next();
        w.next();
        let if_not_exists = w.eat_seq(&["IF", "NOT", "EXISTS"]);
        let target = self.creation_name(&ast::ObjectName::from(vec![ast::Ident::with_quote(
            '"',
            w.ident()?,
        )]))?;
        let name = target.job.clone();
        let query_text = if w.eat("FROM") {
            let from = w.ident()?;
            format!("SELECT * FROM {from}")
        } else if w.eat("AS") {
            w.text_until_with()
        } else {
            return Err(SqlError::Parse(format!(
                "expected FROM or AS after CREATE SINK {name}"
            )));
        };
        if !w.eat("WITH") {
            // RisingWave's parser requires the clause.
            return Err(SqlError::Parse(format!(
                "Expected WITH, found: EOF (sink {name} needs WITH (connector = ...))"
            )));
        }
        let options = w.options()?;
        w.end()?;
        let query = match parse_one(&query_text)? {
            Statement::Query(q) => q,
            _ => return Err(SqlError::Parse("expected a query after AS".into())),
        };
        let with = self.sink_with(&name, options)?;
        Ok(SinkStatement {
            target,
            if_not_exists,
            query,
            with,
        })
    }

    /// `EXPLAIN CREATE SINK ...`: the sink's stream plan, whatever its connector (nothing is created).
    pub(super) fn explain_sink(&self, w: &mut Words<'_>) -> Result<Output, SqlError> {
        w.next();
        let st = self.parse_sink(w)?;
        let (plan, _) = self.sink_plan(&st.query, &st.with)?;
        let lines = crate::planner::explain::explain_stream(&plan);
        Ok(Output::Rows {
            numeric: vec![false],
            rows: lines.into_iter().map(|l| vec![l]).collect(),
        })
    }

    /// `CREATE SINK [IF NOT EXISTS] name (FROM relation | AS query) WITH (connector = 'blackhole', ...)`.
    pub(super) async fn create_sink(
        &self,
        w: &mut Words<'_>,
        text: &str,
    ) -> Result<Output, SqlError> {
        let SinkStatement {
            target,
            if_not_exists,
            query,
            with,
        } = self.parse_sink(w)?;
        let name = target.job.clone();
        match with.connector.as_str() {
            "blackhole" => {}
            c => return Err(SqlError::Unsupported(format!("sink connector '{c}'"))),
        }
        for key in &with.ignored {
            self.engine.note(format!(
                "CREATE SINK {name}: option {key} accepted and ignored"
            ));
        }
        let rate_limit = with.rate_limit;
        if self.check_free(&name, if_not_exists)? {
            return Ok(Output::Done(0));
        }
        let (upstream, def) = match self.view_of(&query, Kind::Sink, text, &[]) {
            Ok(v) => v,
            Err(SqlError::Unsupported(_)) => {
                let options = self.job_options(rate_limit);
                return self
                    .create_sink_graph(&target, &query, &with, options, text)
                    .await;
            }
            Err(e) => return Err(e),
        };
        let input_append_only = self.def_of_table(upstream).is_some_and(|d| d.append_only);
        crate::planner::stream::check_sink_type(with.append_only, with.forced, input_append_only)?;
        let sink = SinkOptions {
            kind: SinkKind::Blackhole,
            ..SinkOptions::default()
        };
        let mut relation = self.job_relation(
            &target,
            CatalogKind::Sink,
            listed_columns(&def),
            Vec::new(),
            &crate::handler::sink_definition(text),
            self.job_dependencies(upstream, &query),
        )?;
        self.with_upstream_key(&mut relation, upstream);
        let job = epochlab_meta::StreamingJob::Sink { upstream, sink };
        let options = self.job_options(rate_limit);
        self.create_in_meta(relation, None, def, job, options).await
    }

    /// A new streaming job's options: the session's parallelism, DDL mode and scan type, and `rate_limit`.
    pub(crate) fn job_options(&self, rate_limit: Option<u32>) -> JobOptions {
        JobOptions {
            parallelism: self.parallelism(),
            rate_limit,
            background: self.config.background_ddl(),
            scan_type: self.config.stream_scan_type(),
        }
    }

    /// A sink's WITH options: its connector, its rate limit (the session's unless given), its `type`
    /// (`append-only`, `upsert` or `debezium`) and `force_append_only`; any other option listed as ignored.
    pub(super) fn sink_with(
        &self,
        name: &str,
        options: Vec<(String, SettingValue)>,
    ) -> Result<SinkWith, SqlError> {
        let mut connector = None;
        let mut rate_limit = self.rate_limit();
        let (mut append_only, mut forced) = (false, false);
        let (mut seen, mut ignored) = (Vec::new(), Vec::new());
        for (key, value) in options {
            if seen.contains(&key) {
                return Err(SqlError::DuplicatedOption(key));
            }
            seen.push(key.clone());
            match key.as_str() {
                "connector" => connector = Some(value),
                "streaming_rate_limit" | "backfill_rate_limit" => {
                    rate_limit = positive_u32(&value.datum()?, &key)?;
                }
                "type" => {
                    // RisingWave's legacy `type`: append-only, upsert or debezium (the last two keep
                    // updates and deletes).
                    append_only = match value.text().to_ascii_lowercase().as_str() {
                        "append-only" => true,
                        "upsert" | "debezium" => false,
                        other => {
                            return Err(SqlError::Invalid(format!(
                                "sink type '{other}': expected 'append-only', 'upsert' or 'debezium'"
                            )));
                        }
                    };
                }
                "force_append_only" => {
                    forced = match value.text().to_ascii_lowercase().as_str() {
                        "true" => true,
                        "false" => false,
                        _ => {
                            return Err(SqlError::Invalid(
                                "`force_append_only` must be true or false".into(),
                            ));
                        }
                    };
                }
                _ => ignored.push(key),
            }
        }
        let Some(connector) = connector.as_ref().map(|c| c.text().to_ascii_lowercase()) else {
            return Err(SqlError::Invalid(format!(
                "sink {name} needs WITH (connector = ...)"
            )));
        };
        if forced && !append_only {
            return Err(SqlError::Invalid(
                "Cannot force the sink to be append-only without type = 'append-only'".into(),
            ));
        }
        Ok(SinkWith {
            connector,
            ignored,
            rate_limit,
            append_only,
            forced,
        })
    }

    /// The upstream and definition of a view or sink over one table: a plan that is a scan of it under
    /// projections and filters (see [`crate::planner::stream::single_table`]), kept as expressions over the
    /// upstream's stored rows and applied when the view is read.
    pub(super) fn view_of(
        &self,
        q: &Query,
        kind: Kind,
        text: &str,
        renames: &[String],
    ) -> Result<(TableId, Def), SqlError> {
        let mut bound = Binder::new(self, true).bind_query(q)?;
        crate::binder::output_names(&mut bound.names, renames)?;
        let shape = crate::planner::stream::single_table(&bound.plan)?;
        let upstream = self.def_of_table(shape.table_id).ok_or_else(|| {
            SqlError::Invalid(format!("the upstream of {} is gone", kind.as_str()))
        })?;
        let columns = bound
            .names
            .iter()
            .zip(&shape.exprs)
            .enumerate()
            .map(|(i, (name, e))| Column {
                name: name.clone(),
                ty: e.return_type(),
                src: i,
            })
            .collect();
        let def = Def {
            kind,
            columns,
            filter: shape.filter,
            project: Some(shape.exprs),
            stored: upstream.stored.clone(),
            row_id: false,
            row_id_at: None,
            pk: Vec::new(),
            append_only: false,
            statement: text.trim().to_string(),
            generated: Vec::new(),
            watermarks: Vec::new(),
            watermark_columns: Vec::new(),
        };
        Ok((shape.table_id, def))
    }

    /// SQL's definition of the relation with the engine's table `id`.
    pub(crate) fn def_of_table(&self, id: TableId) -> Option<Def> {
        let rel = self
            .cluster()
            .meta()
            .catalog()
            .relations
            .get(&id)
            .cloned()?;
        self.catalog().def(&rel.name).cloned()
    }

    /// `CREATE VIEW name [(cols)] AS query`: a logical view, its query bound to check it and kept as text.
    pub(super) fn create_view(&self, cv: &ast::CreateView) -> Result<Output, SqlError> {
        if cv.or_replace || cv.or_alter {
            return Err(SqlError::Unsupported("CREATE OR REPLACE VIEW".into()));
        }
        let target = self.creation_name(&cv.name)?;
        let mut binder = Binder::new(self, false);
        let mut bound = binder.bind_query(&cv.query)?;
        let renames: Vec<String> = cv.columns.iter().map(|c| ident(&c.name)).collect();
        crate::binder::output_names(&mut bound.names, &renames)?;
        let columns = bound
            .names
            .iter()
            .zip(bound.types())
            .map(|(n, t)| ColumnCatalog::new(n.clone(), t))
            .collect();
        let mut shown = cv.clone();
        shown.if_not_exists = false;
        // A logical view has no job: its row is the whole of it, one catalog write.
        let mut view = self.job_relation(
            &target,
            CatalogKind::View,
            columns,
            Vec::new(),
            &shown.to_string(),
            binder.depends_on.clone(),
        )?;
        view.view_query = Some(cv.query.to_string());
        let registered = self.catalog_write(|c| c.create_relation(view));
        match registered.map_err(SqlError::from) {
            Ok(_) => Ok(Output::Done(0)),
            Err(SqlError::CatalogError(crate::catalog::CatalogError::Duplicated(..)))
                if cv.if_not_exists =>
            {
                Ok(Output::Done(0))
            }
            Err(e) => Err(e),
        }
    }

    /// A relation a query or a view may read: it exists, is not a sink, and is created.
    pub(super) fn readable(&self, name: &str) -> Result<(Relation, Def), SqlError> {
        let Some((rel, def)) = self.engine.lookup(name) else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("table or source not found: {name}"),
            ));
        };
        self.check_readable(name, rel, def)
    }

    /// The engine's table `id` (which the catalog's relation `name` lists), readable.
    pub(super) fn readable_id(&self, id: TableId, name: &str) -> Result<(Relation, Def), SqlError> {
        let rel = self.cluster().meta().relation(id);
        let found = rel.and_then(|r| self.def_of_table(id).map(|d| (r, d)));
        let Some((rel, def)) = found else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("table or source not found: {name}"),
            ));
        };
        self.check_readable(name, rel, def)
    }

    pub(super) fn check_readable(
        &self,
        name: &str,
        rel: Relation,
        def: Def,
    ) -> Result<(Relation, Def), SqlError> {
        if def.kind == Kind::Sink {
            return Err(SqlError::Invalid(format!("sink {name} cannot be read")));
        }
        if rel.state != JobState::Created {
            return Err(SqlError::catalog(
                CatalogProblem::StillCreating,
                format!(
                    "{} \"{name}\" is still being created (table is in creating procedure)",
                    def.kind.as_str()
                ),
            ));
        }
        Ok((rel, def))
    }

    /// `ALTER SYSTEM SET name TO value` (noted), `ALTER (TABLE | MATERIALIZED VIEW | SINK) name SET
    /// (STREAMING_RATE_LIMIT | BACKFILL_RATE_LIMIT | PARALLELISM) (= | TO) value`.
    pub(super) async fn alter(&self, w: &mut Words<'_>) -> Result<Output, SqlError> {
        w.next();
        if w.eat("SYSTEM") {
            if !w.eat("SET") {
                return Err(unsupported_words(w.tokens, 3));
            }
            let name = w.ident()?;
            if !(w.eat_token(&Token::Eq) || w.eat("TO")) {
                return Err(SqlError::Parse(format!("expected = or TO after {name}")));
            }
            let value = w.setting_value()?;
            w.end()?;
            self.engine.note(format!(
                "ALTER SYSTEM SET {name} TO {} accepted and ignored: epochlab has no such system parameter at runtime",
                value.text()
            ));
            return Ok(Output::Done(0));
        }
        let kind = if w.eat("TABLE") {
            Kind::Table
        } else if w.eat_seq(&["MATERIALIZED", "VIEW"]) {
            Kind::MaterializedView
        } else if w.eat("SINK") {
            Kind::Sink
        } else {
            return Err(unsupported_words(w.tokens, 2));
        };
        let name = w.ident()?;
        if !w.eat("SET") {
            return Err(unsupported_words(w.tokens, 2));
        }
        let setting = w.ident()?;
        if !(w.eat_token(&Token::Eq) || w.eat("TO")) {
            return Err(SqlError::Parse(format!("expected = or TO after {setting}")));
        }
        let value = w.setting_value()?;
        w.end()?;
        let Some(rel) = self.cluster().meta().relation_by_name(&name) else {
            return Err(SqlError::catalog(
                CatalogProblem::NotFound,
                format!("{} not found: {name}", kind.as_str()),
            ));
        };
        match setting.as_str() {
            "parallelism" => Err(SqlError::Unsupported(
                "ALTER ... SET PARALLELISM (a reschedule here moves vnodes among a job's actors, never changes their number)".into(),
            )),
            "streaming_rate_limit" | "backfill_rate_limit" if kind != Kind::Table => {
                let limit = value.rate_limit()?;
                self.check_writable()?;
                self.cluster().meta().set_rate_limit(rel.id, limit).await?;
                Ok(Output::Done(0))
            }
            other => Err(SqlError::Unsupported(format!(
                "ALTER {} ... SET {other}",
                kind.as_str().to_uppercase()
            ))),
        }
    }
}

/// A table's stored types, whether it has a hidden row id (no primary key given: the last stored
/// column), and its primary key's positions.
fn table_key(
    columns: &[Column],
    pk_names: &[String],
) -> Result<(Vec<DataType>, bool, Vec<usize>), SqlError> {
    let mut stored: Vec<DataType> = columns.iter().map(|c| c.ty.clone()).collect();
    let row_id = pk_names.is_empty();
    let pk = if row_id {
        stored.push(DataType::Int64);
        vec![stored.len() - 1]
    } else {
        pk_names
            .iter()
            .map(|n| resolve(columns, n))
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok((stored, row_id, pk))
}

/// How a table's materialize meets a row whose pk it holds: a table with a primary key overwrites it (an insert
/// of an existing key is an update, RisingWave's default `ON CONFLICT OVERWRITE`); a table keyed by its hidden
/// row id never meets one.
fn table_conflict(row_id: bool) -> epochlab_common::plan::ConflictBehavior {
    use epochlab_common::plan::ConflictBehavior;
    if row_id {
        ConflictBehavior::NoCheck
    } else {
        ConflictBehavior::Overwrite
    }
}

/// A column's `COLLATE`, as RisingWave's `bind_sql_columns` checks it: `"C"` or `"POSIX"` (which order
/// strings by byte, as every comparison here does), on a string column.
pub(crate) fn check_collation(name: &ast::ObjectName, ty: &DataType) -> Result<(), SqlError> {
    let collation = match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(id)] => id.value.as_str(),
        _ => "",
    };
    if !["C", "POSIX"].contains(&collation) {
        return Err(SqlError::NotImplemented(
            "Collate collation other than `C` or `POSIX` is not implemented".into(),
        ));
    }
    if *ty != DataType::Varchar {
        return Err(SqlError::NotSupported(format!(
            "{ty} is not a collatable data type"
        )));
    }
    Ok(())
}

impl Session {
    /// A table's generated columns bound over its stored row as RisingWave's `bind_sql_column_constraints`
    /// binds them: assignment-cast to the column's type, none reading another generated column, none in
    /// the primary key with an impure expression (`proctime()`).
    fn bind_generated_columns(
        &self,
        name: &str,
        def: &Def,
        generated: &[(usize, &Ast)],
    ) -> Result<Vec<(usize, ExprNode)>, SqlError> {
        let scope = Self::stored_scope(name, def);
        let column = |src: usize| &def.columns[src].name;
        let mut out = Vec::with_capacity(generated.len());
        for &(src, ast) in generated {
            let bound = Binder::for_generated_column(self)
                .bind_scalar(ast, &scope)
                .map_err(|e| SqlError::BindExpr {
                    expr: ast.to_string(),
                    source: Box::new(e),
                })?;
            if let Some(other) = bound
                .input_refs()
                .into_iter()
                .find(|r| generated.iter().any(|(g, _)| g == r))
            {
                return Err(SqlError::Bind(format!(
                    "Generated can not reference another generated column. But here generated column \"{}\" referenced another generated column \"{}\"",
                    column(src),
                    column(other)
                )));
            }
            if def.pk.contains(&src) && !crate::planner::pushdown::is_pure(&bound) {
                return Err(SqlError::Bind(format!(
                    "Generated columns with impure expressions should not be part of the primary key. Here column \"{}\" is defined as part of the primary key.",
                    column(src)
                )));
            }
            let ty = def.columns[src].ty.clone();
            out.push((src, crate::binder::coerce(bound, ty, CastContext::Assign)?));
        }
        Ok(out)
    }
}

impl Session {
    /// A table's watermarks bound over its stored row as RisingWave's `bind_source_watermark` binds them:
    /// the expression's type is the column's.
    fn bind_watermarks(
        &self,
        name: &str,
        def: &Def,
        watermarks: &[crate::handler::create_table::SourceWatermark],
    ) -> Result<Vec<(usize, ExprNode)>, SqlError> {
        let scope = Self::stored_scope(name, def);
        let mut out = Vec::with_capacity(watermarks.len());
        for w in watermarks {
            let column = crate::binder::ident(&w.column);
            let c = def
                .columns
                .iter()
                .find(|c| c.name == column)
                .ok_or_else(|| SqlError::ItemNotFound(format!("Invalid column: {column}")))?;
            let bound = Binder::new(self, false).bind_scalar(&w.expr, &scope)?;
            let ty = bound.return_type();
            if ty != c.ty {
                return Err(SqlError::Bind(format!(
                    "The return value type of the watermark expression must be identical to the watermark column data type. Current data type of watermark return value: `{ty}`, column `{}`",
                    c.ty
                )));
            }
            out.push((c.src, bound));
        }
        Ok(out)
    }
}

/// A `CREATE TABLE`'s columns, the names of its primary key (from a column option or the constraint), and
/// its generated columns' positions and expressions.
#[allow(clippy::type_complexity)]
fn bind_table_columns<'a>(
    name: &str,
    ct: &'a ast::CreateTable,
) -> Result<(Vec<Column>, Vec<String>, Vec<(usize, &'a Ast)>), SqlError> {
    let mut columns = Vec::new();
    let mut pk_names: Vec<String> = Vec::new();
    let mut generated = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let col = ident(&c.name);
        crate::binder::check_column_name(&col)?;
        if columns.iter().any(|x: &Column| x.name == col) {
            return Err(SqlError::Invalid(format!(
                "column \"{col}\" specified more than once"
            )));
        }
        let ty = data_type(&c.data_type)?;
        for o in &c.options {
            if let Some(e) = crate::dialect::generation_expr(&o.option) {
                generated.push((i, e));
                continue;
            }
            match &o.option {
                ColumnOption::PrimaryKey(_) => pk_names.push(col.clone()),
                ColumnOption::Collation(name) => check_collation(name, &ty)?,
                _ => {
                    return Err(SqlError::NotImplemented(format!(
                        "column constraints \"{o}\""
                    )));
                }
            }
        }
        columns.push(Column {
            name: col.clone(),
            ty,
            src: i,
        });
    }
    for constraint in &ct.constraints {
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                if !pk_names.is_empty() {
                    return Err(SqlError::Invalid(format!(
                        "multiple primary keys for table {name} are not allowed"
                    )));
                }
                for c in &pk.columns {
                    match &c.column.expr {
                        Ast::Identifier(id) => pk_names.push(ident(id)),
                        other => {
                            return Err(SqlError::Unsupported(format!(
                                "primary key expression {other}"
                            )));
                        }
                    }
                }
            }
            other => return Err(SqlError::Unsupported(format!("table constraint {other}"))),
        }
    }
    Ok((columns, pk_names, generated))
}

/// The [`Def`] of a source's table job: its columns, then a hidden row id of type `row_id` as its key,
/// append-only; generated columns bound by the caller.
pub(crate) fn source_table_def(
    columns: Vec<crate::expr::Column>,
    row_id: DataType,
    text: &str,
) -> Def {
    let mut stored: Vec<DataType> = columns.iter().map(|c| c.ty.clone()).collect();
    stored.push(row_id);
    Def {
        kind: Kind::Table,
        columns,
        filter: None,
        project: None,
        pk: vec![stored.len() - 1],
        stored,
        row_id: true,
        row_id_at: None,
        append_only: true,
        statement: text.trim().to_string(),
        generated: Vec::new(),
        watermarks: Vec::new(),
        watermark_columns: Vec::new(),
    }
}

/// A datagen source read from its `CREATE SOURCE`: the engine's [`Def`] of its table job (its columns,
/// generated ones bound, then a `serial` row id) and its connector.
pub(crate) struct DatagenSource {
    def: Def,
    datagen: epochlab_common::source::DatagenSpec,
}

impl Session {
    /// A `CREATE SOURCE name (columns) WITH (connector = 'datagen', ..)`'s columns (as written after the
    /// name) and options bound, before anything is created: a bad option or column is refused here.
    pub(crate) fn datagen_source(
        &self,
        job: &str,
        columns_sql: &str,
        options: &[(String, String)],
        text: &str,
    ) -> Result<DatagenSource, SqlError> {
        use epochlab_common::source::{DatagenSpec, SourceColumn};
        let sql = format!("CREATE TABLE t {columns_sql}");
        let parsed =
            sqlparser::parser::Parser::parse_sql(&crate::dialect::RisingWaveDialect, &sql)?;
        let Some(Statement::CreateTable(ct)) = parsed.first() else {
            return Err(SqlError::Parse(format!(
                "expected columns, found {columns_sql}"
            )));
        };
        let (columns, _, generated) = bind_table_columns(job, ct)?;
        let mut def = source_table_def(columns, DataType::Serial, text);
        let row_id_at = def.stored.len() - 1;
        def.generated = self.bind_generated_columns(job, &def, &generated)?;
        let sourced: Vec<SourceColumn<'_>> = def
            .stored
            .iter()
            .enumerate()
            .map(|(i, ty)| SourceColumn {
                name: def.columns.get(i).map_or(ROW_ID, |c| c.name.as_str()),
                ty,
                skip: i == row_id_at || def.generated.iter().any(|(g, _)| *g == i),
            })
            .collect();
        let options = options
            .iter()
            .map(|(k, v)| (k.to_lowercase(), v.clone()))
            .collect();
        let datagen = DatagenSpec::from_options(&sourced, &options)?;
        Ok(DatagenSource { def, datagen })
    }
}

impl DatagenSource {
    /// The definition and the job of a datagen source bound by [`Session::datagen_source`]: its table job
    /// runs the connector, its row id last.
    pub(crate) fn into_job(self) -> (Def, epochlab_meta::StreamingJob) {
        let DatagenSource { def, datagen } = self;
        let job = epochlab_meta::StreamingJob::Source {
            column_types: def.stored.clone(),
            row_id_index: def.stored.len() - 1,
            datagen: Some(datagen),
            generated: def.generated.clone(),
        };
        (def, job)
    }
}
