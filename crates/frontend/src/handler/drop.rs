//! `DROP TABLE | MATERIALIZED VIEW | VIEW | INDEX | SINK | SOURCE [IF EXISTS] name [CASCADE]` (RisingWave's
//! `drop_*.rs`, and meta's dependency check).

use super::parse::Cursor;
use super::{HandlerResult, done};
use crate::catalog::{CatalogError, RelationKind};
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
            Err(e) => return Err(e.into()),
        };
        self.drop_relations(target.id, cascade).await
    }

    /// Drops `id` (and with `cascade` its dependents): one request meta runs whole, the catalog rows first
    /// (the catalog decides what goes, and refuses), then their jobs, dependents first. Gone already
    /// (another session's drop, or this statement's earlier attempt, cut off by a kill) is what was asked.
    pub(super) async fn drop_relations(&mut self, id: u32, cascade: bool) -> HandlerResult {
        self.check_writable()?;
        let command = epochlab_meta::DdlCommand::DropRelation { id, cascade };
        match self.engine().cluster.meta().run_command(command).await {
            Ok(outcome) => self.wait_version(outcome.version).await?,
            Err(epochlab_meta::DdlError::Catalog(CatalogError::NotFound(..))) => {}
            Err(e) => return Err(SqlError::of_ddl(e)),
        }
        done()
    }
}
