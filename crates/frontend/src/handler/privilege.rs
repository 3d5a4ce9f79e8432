//! `GRANT` and `REVOKE` (RisingWave's `handle_privilege.rs`): privileges on databases, schemas, tables,
//! materialized views and sources, and on all of a kind in a schema.

use super::parse::{Cursor, Name};
use super::{HandlerResult, done};
use crate::catalog::{Action, CatalogError, GrantKind, Object, Privilege, RelationKind};
use crate::error::SqlError;
use crate::frontend::Session;

/// What a `GRANT` or `REVOKE` names: the actions (`None`: `ALL`), the kind of object, the objects.
struct Grant {
    actions: Option<Vec<Action>>,
    kind: GrantKind,
    objects: Vec<Object>,
    users: Vec<String>,
}

impl Session {
    /// `GRANT actions ON objects TO users [WITH GRANT OPTION] [GRANTED BY user]`.
    pub(super) fn handle_grant(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["GRANT"])?;
        let actions = privileges(c)?;
        let (kind, objects) = self.grant_objects(c)?;
        c.expect(&["TO"])?;
        let users = user_list(c)?;
        let with_grant_option = c.eat(&["WITH", "GRANT", "OPTION"]);
        let granted_by = granted_by(c)?;
        c.end()?;
        let g = Grant {
            actions,
            kind,
            objects,
            users,
        };
        let catalog = self.catalog();
        check_users(&catalog, &g.users, granted_by.as_deref())?;
        let actions = g.kind.actions(g.actions.as_deref())?;
        let grantor = catalog.user(&self.user)?.id;
        let granted: Vec<Privilege> = g
            .objects
            .iter()
            .flat_map(|o| {
                actions.iter().map(move |a| Privilege {
                    object: o.clone(),
                    action: *a,
                    with_grant_option,
                    granted_by: grantor,
                })
            })
            .collect();
        self.catalog_write(|catalog| {
            for u in &g.users {
                catalog.user_mut(u)?.grant(&granted);
            }
            Ok::<_, CatalogError>(())
        })?;
        done()
    }

    /// `REVOKE [GRANT OPTION FOR] actions ON objects FROM users [GRANTED BY user] [CASCADE | RESTRICT]`.
    pub(super) fn handle_revoke(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["REVOKE"])?;
        let grant_option_only = c.eat(&["GRANT", "OPTION", "FOR"]);
        let actions = privileges(c)?;
        let (kind, objects) = self.grant_objects(c)?;
        c.expect(&["FROM"])?;
        let users = user_list(c)?;
        let granted_by = granted_by(c)?;
        if !c.eat(&["CASCADE"]) {
            c.eat(&["RESTRICT"]);
        }
        c.end()?;
        check_users(&self.catalog(), &users, granted_by.as_deref())?;
        let actions = kind.actions(actions.as_deref())?;
        let revoked: Vec<(Object, Action)> = objects
            .iter()
            .flat_map(|o| actions.iter().map(move |a| (o.clone(), *a)))
            .collect();
        self.catalog_write(|catalog| {
            for u in &users {
                catalog.user_mut(u)?.revoke(&revoked, grant_option_only);
            }
            Ok::<_, CatalogError>(())
        })?;
        done()
    }

    /// `ON DATABASE d, ... | ON SCHEMA s, ... | ON ALL (TABLES | SOURCES | MATERIALIZED VIEWS) IN SCHEMA s,
    /// ... | ON [TABLE] t, ... | ON MATERIALIZED VIEW m, ... | ON SOURCE s, ...`.
    fn grant_objects(&self, c: &mut Cursor<'_>) -> Result<(GrantKind, Vec<Object>), SqlError> {
        c.expect(&["ON"])?;
        let catalog = self.catalog();
        let db = &self.database;
        if c.eat(&["DATABASE"]) {
            let names = c.names()?;
            let objects = names
                .iter()
                .map(|n| Ok(Object::Database(catalog.database(single(n)?)?.id)))
                .collect::<Result<_, SqlError>>()?;
            return Ok((GrantKind::Database, objects));
        }
        if c.eat(&["SCHEMA"]) {
            let names = c.names()?;
            let objects = names
                .iter()
                .map(|n| Ok(Object::Schema(catalog.schema(db, single(n)?)?.id)))
                .collect::<Result<_, SqlError>>()?;
            return Ok((GrantKind::Schema, objects));
        }
        if c.eat(&["ALL"]) {
            let (kind, make): (GrantKind, fn(u32) -> Object) = if c.eat(&["TABLES"]) {
                (GrantKind::Table, Object::AllDmlTablesInSchema)
            } else if c.eat(&["SOURCES"]) {
                (GrantKind::Source, Object::AllSourcesInSchema)
            } else if c.eat(&["MATERIALIZED", "VIEWS"]) {
                (GrantKind::Mview, Object::AllMviewsInSchema)
            } else {
                return Err(c.unexpected("TABLES, SOURCES or MATERIALIZED VIEWS"));
            };
            c.expect(&["IN", "SCHEMA"])?;
            let names = c.names()?;
            let objects = names
                .iter()
                .map(|n| Ok(make(catalog.schema(db, single(n)?)?.id)))
                .collect::<Result<_, SqlError>>()?;
            return Ok((kind, objects));
        }
        let (kind, rel_kind) = if c.eat(&["MATERIALIZED", "VIEW"]) {
            (GrantKind::Mview, RelationKind::MaterializedView)
        } else if c.eat(&["SOURCE"]) {
            (GrantKind::Source, RelationKind::Source)
        } else if c.eat(&["SINK"]) {
            (GrantKind::Sink, RelationKind::Sink)
        } else if c.eat(&["VIEW"]) {
            (GrantKind::View, RelationKind::View)
        } else {
            c.eat(&["TABLE"]);
            (GrantKind::Table, RelationKind::Table)
        };
        drop(catalog);
        let names = c.names()?;
        let objects = names
            .iter()
            .map(|n| Ok(Object::Relation(self.resolve_kind(n, rel_kind)?.id)))
            .collect::<Result<_, SqlError>>()?;
        Ok((kind, objects))
    }
}

/// A database or schema name: one part (RisingWave's `resolve_schema_name` refuses `db.schema`).
fn single(n: &Name) -> Result<&str, SqlError> {
    match n.0.as_slice() {
        [one] => Ok(one),
        _ => Err(SqlError::Parse(format!(
            "unqualified name expected, found {n}"
        ))),
    }
}

/// `ALL [PRIVILEGES]` (`None`) or a list of actions.
fn privileges(c: &mut Cursor<'_>) -> Result<Option<Vec<Action>>, SqlError> {
    if c.eat(&["ALL"]) {
        c.eat(&["PRIVILEGES"]);
        return Ok(None);
    }
    let mut out = Vec::new();
    loop {
        let word = c.keyword_at(0).unwrap_or_default();
        let a = Action::from_sql(&word).ok_or_else(|| c.unexpected("a privilege"))?;
        c.eat(&[&word]);
        out.push(a);
        if !c.eat_token(&sqlparser::tokenizer::Token::Comma) {
            return Ok(Some(out));
        }
    }
}

fn user_list(c: &mut Cursor<'_>) -> Result<Vec<String>, SqlError> {
    let mut out = vec![c.ident()?];
    while c.eat_token(&sqlparser::tokenizer::Token::Comma) {
        out.push(c.ident()?);
    }
    Ok(out)
}

fn granted_by(c: &mut Cursor<'_>) -> Result<Option<String>, SqlError> {
    if c.eat(&["GRANTED", "BY"]) {
        Ok(Some(c.ident()?))
    } else {
        Ok(None)
    }
}

/// Every grantee and the grantor exist (RisingWave's bind errors).
fn check_users(
    catalog: &crate::catalog::Catalog,
    users: &[String],
    granted_by: Option<&str>,
) -> Result<(), CatalogError> {
    if users.iter().any(|u| catalog.user(u).is_err()) {
        return Err(CatalogError::GranteeNotFound);
    }
    if granted_by.is_some_and(|g| catalog.user(g).is_err()) {
        return Err(CatalogError::GrantorNotFound);
    }
    Ok(())
}
