//! `DROP TABLE | MATERIALIZED VIEW | VIEW | INDEX | SINK | SOURCE [IF EXISTS] name [CASCADE]` (RisingWave's
//! `drop_*.rs`, and meta's dependency check).

use super::parse::{Cursor, Name};
use super::{HandlerResult, done};
use crate::catalog::{CatalogError, RelationCatalog, RelationKind};
use crate::error::SqlError;
use crate::frontend::Session;

/// The kind a `DROP` / `ALTER` names.
pub(super) fn relation_kind(c: &mut Cursor<'_>) -> Option<RelationKind> {
    let kinds = [
        (&["TABLE"][..], RelationKind::Table),
        (
            &["MATERIALIZED", "VIEW"][..],
            RelationKind::MaterializedView,
        ),
        (&["VIEW"][..], RelationKind::View),
        (&["INDEX"][..], RelationKind::Index),
        (&["SINK"][..], RelationKind::Sink),
        (&["SOURCE"][..], RelationKind::Source),
    ];
    kinds.iter().find(|(w, _)| c.eat(w)).map(|(_, k)| *k)
}

impl Session {
    pub(super) async fn handle_drop_relation(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["DROP"])?;
        let Some(kind) = relation_kind(c) else {
            return Err(SqlError::Unsupported(format!(
                "DROP {}",
                c.keyword_at(0).unwrap_or_default()
            )));
        };
        let if_exists = c.eat(&["IF", "EXISTS"]);
        let name = c.name()?;
        let cascade = c.eat(&["CASCADE"]);
        c.eat(&["RESTRICT"]);
        c.end()?;
        let target = match self.resolve_kind(&name, kind) {
            Ok(r) => r,
            Err(CatalogError::NotFound(what, _)) if if_exists && what != "schema" => {
                return done();
            }
            Err(CatalogError::NotFound(..)) if self.meta_only_job(&name, kind).is_some() => {
                return self.drop_meta_only(&name, kind).await;
            }
            Err(e) => return Err(e.into()),
        };
        self.drop_relations(target.id, cascade).await
    }

    /// Drops `id` (and with `cascade` its dependents) from the catalog and their jobs from meta, dependents
    /// first. The catalog decides what goes (and refuses); meta drops the jobs; then the catalog forgets.
    pub(super) async fn drop_relations(&mut self, id: u32, cascade: bool) -> HandlerResult {
        self.check_writable()?;
        if self.engine().cluster.meta().config().ddl_in_meta {
            return self.drop_in_meta(id, cascade).await;
        }
        let going: Vec<RelationCatalog> = {
            let mut trial = crate::catalog::Catalog::clone(&self.catalog());
            trial.drop_relation(id, cascade)?
        };
        for r in going.iter().filter(|r| r.kind.has_job()) {
            let job = r
                .table_id
                .or_else(|| self.cluster_meta_relation(&r.job_name()).map(|m| m.id));
            let Some(job) = job else { continue };
            match self.engine().cluster.meta().drop_job(job).await {
                // Dropped meanwhile (by this statement's earlier attempt, cut off by a kill): gone.
                Ok(()) | Err(epochlab_meta::DdlError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // Another session (or this statement's earlier attempt, cut off by a kill) may have dropped it
        // while meta worked: gone is what was asked.
        match self.catalog_write(|c| c.drop_relation(id, cascade)) {
            Ok(_) | Err(CatalogError::NotFound(..)) => done(),
            Err(e) => Err(e.into()),
        }
    }

    /// [`Session::drop_relations`] as one request meta runs whole (`MetaConfig::ddl_in_meta`): the catalog
    /// rows first, then their jobs. Gone already (another session's drop, or this statement's earlier
    /// attempt, cut off by a kill) is what was asked.
    async fn drop_in_meta(&mut self, id: u32, cascade: bool) -> HandlerResult {
        let command = epochlab_meta::DdlCommand::DropRelation { id, cascade };
        match self.engine().cluster.meta().run_command(command).await {
            Ok(outcome) => self.wait_version(outcome.version).await?,
            Err(epochlab_meta::DdlError::Catalog(CatalogError::NotFound(..))) => {}
            Err(e) => return Err(SqlError::of_ddl(e)),
        }
        done()
    }

    fn cluster_meta_relation(&self, name: &str) -> Option<epochlab_meta::Relation> {
        self.engine().cluster.meta().relation_by_name(name)
    }

    /// A job meta has under `name` that the catalog does not list (its `CREATE` was cut off by a kill of
    /// the frontend before the catalog heard of it).
    fn meta_only_job(&self, name: &Name, kind: RelationKind) -> Option<epochlab_meta::Relation> {
        let [n] = name.0.as_slice() else {
            return None;
        };
        if self.listed_duplicate(n).is_some() {
            return None;
        }
        let rel = self.cluster_meta_relation(n)?;
        let same = matches!(
            (rel.kind, kind),
            (epochlab_meta::RelationKind::Table, RelationKind::Table)
                | (
                    epochlab_meta::RelationKind::MaterializedView,
                    RelationKind::MaterializedView
                )
                | (epochlab_meta::RelationKind::Sink, RelationKind::Sink)
        );
        same.then_some(rel)
    }

    async fn drop_meta_only(&mut self, name: &Name, kind: RelationKind) -> HandlerResult {
        self.check_writable()?;
        if let Some(rel) = self.meta_only_job(name, kind) {
            self.engine().cluster.meta().drop_job(rel.id).await?;
        }
        done()
    }
}
