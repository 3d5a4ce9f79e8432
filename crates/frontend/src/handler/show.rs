//! `SHOW` (RisingWave's `show.rs`): databases, schemas, relations of a kind, columns, indexes, users,
//! `SHOW CREATE`, parameters and session variables.

use super::describe::column_rows;
use super::parse::{Cursor, Value};
use super::{HandlerResult, text_rows};
use crate::catalog::{RelationCatalog, RelationKind};
use crate::error::SqlError;
use crate::frontend::Session;

/// SQL's `LIKE`: `%` any run, `_` one character.
pub fn like(text: &str, pattern: &str) -> bool {
    fn go(t: &[char], p: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('%', rest)) => (0..=t.len()).any(|i| go(&t[i..], rest)),
            Some(('_', rest)) => !t.is_empty() && go(&t[1..], rest),
            Some((c, rest)) => t.first() == Some(c) && go(&t[1..], rest),
        }
    }
    let t: Vec<char> = text.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    go(&t, &p)
}

impl Session {
    pub(super) fn handle_show(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["SHOW"])?;
        let kinds = [
            (&["TABLES"][..], RelationKind::Table),
            (
                &["MATERIALIZED", "VIEWS"][..],
                RelationKind::MaterializedView,
            ),
            (&["VIEWS"][..], RelationKind::View),
            (&["SINKS"][..], RelationKind::Sink),
            (&["SOURCES"][..], RelationKind::Source),
        ];
        if let Some((_, kind)) = kinds.iter().find(|(w, _)| c.eat(w)) {
            return self.show_relations(c, *kind);
        }
        if c.eat(&["DATABASES"]) {
            c.end()?;
            return self.show_databases();
        }
        if c.eat(&["SCHEMAS"]) {
            c.end()?;
            return self.show_schemas();
        }
        if c.eat(&["COLUMNS", "FROM"]) {
            let r = self.describable(c)?;
            c.end()?;
            return text_rows(4, column_rows(&r));
        }
        if c.eat(&["INDEXES", "FROM"]) {
            return self.show_indexes(c);
        }
        if c.eat(&["USERS"]) {
            c.end()?;
            return self.show_users();
        }
        if c.eat(&["CREATE"]) {
            return self.show_create(c);
        }
        if c.eat(&["ALL"]) {
            c.end()?;
            return self.show_all();
        }
        if c.eat(&["PARAMETERS"]) {
            c.end()?;
            return text_rows(3, Vec::new());
        }
        let name = c.ident()?;
        c.end()?;
        let v = self.config.get(&name).map_err(SqlError::from)?;
        text_rows(1, vec![vec![v]])
    }

    /// `SHOW DATABASES`: their names.
    fn show_databases(&self) -> HandlerResult {
        let names = self
            .engine()
            .catalog()
            .databases()
            .map(|d| vec![d.name.clone()])
            .collect();
        text_rows(1, names)
    }

    /// `SHOW SCHEMAS`: the current database's schemas.
    fn show_schemas(&self) -> HandlerResult {
        let catalog = self.catalog();
        let names = catalog
            .database(&self.database)?
            .schemas
            .keys()
            .map(|s| vec![s.clone()])
            .collect();
        text_rows(1, names)
    }

    /// `SHOW USERS`: their names.
    fn show_users(&self) -> HandlerResult {
        let names = self
            .engine()
            .catalog()
            .users()
            .map(|u| vec![u.name.clone()])
            .collect();
        text_rows(1, names)
    }

    /// `SHOW ALL`: every session setting, its value, no description.
    fn show_all(&self) -> HandlerResult {
        let rows = self
            .config
            .all()
            .into_iter()
            .map(|(n, v)| vec![n.to_string(), v, String::new()])
            .collect();
        text_rows(3, rows)
    }

    /// `SHOW TABLES [FROM schema] [LIKE 'pattern']` and the like.
    fn show_relations(&mut self, c: &mut Cursor<'_>, kind: RelationKind) -> HandlerResult {
        let schema = if c.eat(&["FROM"]) || c.eat(&["IN"]) {
            c.ident()?
        } else {
            "public".to_string()
        };
        let pattern = if c.eat(&["LIKE"]) {
            Some(match c.value()? {
                Value::Text(t) => t,
                other => other.text(),
            })
        } else {
            None
        };
        c.end()?;
        let catalog = self.catalog();
        catalog.schema(&self.database, &schema)?;
        let mut names: Vec<String> = catalog
            .relations()
            .filter(|r| r.database == self.database && r.schema == schema)
            .filter(|r| r.kind == kind)
            .map(|r| r.name.clone())
            .filter(|n| pattern.as_deref().is_none_or(|p| like(n, p)))
            .collect();
        names.sort();
        text_rows(1, names.into_iter().map(|n| vec![n]).collect())
    }

    /// `SHOW INDEXES FROM t`: name, table, key, included columns, distribution key.
    fn show_indexes(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        let name = c.name()?;
        c.end()?;
        let table = self.resolve_any(&name)?;
        let catalog = self.catalog();
        let rows = catalog
            .relations()
            .filter_map(|r| Some((r, r.index.as_ref()?)))
            .filter(|(_, i)| i.primary_table == table.id)
            .map(|(r, i)| {
                vec![
                    r.name.clone(),
                    table.name.clone(),
                    i.key_with_orders().join(", "),
                    i.include.join(", "),
                    i.key[..i.dist_key_len].join(", "),
                ]
            })
            .collect();
        text_rows(5, rows)
    }

    /// `SHOW CREATE (TABLE | MATERIALIZED VIEW | VIEW | INDEX | SINK | SOURCE) name`: the qualified name and
    /// the definition.
    fn show_create(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        let Some(kind) = super::drop::relation_kind(c) else {
            return Err(c.unexpected("TABLE, MATERIALIZED VIEW, VIEW, INDEX, SINK or SOURCE"));
        };
        let name = c.name()?;
        c.end()?;
        let r: RelationCatalog = self.resolve_kind(&name, kind)?;
        text_rows(
            2,
            vec![vec![
                format!("{}.{}", r.schema, r.name),
                r.definition.clone(),
            ]],
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn like_matches_as_sql() {
        assert!(super::like("t3", "t_"));
        assert!(!super::like("t3", "_t"));
        assert!(super::like("abc", "a%"));
        assert!(super::like("", "%"));
    }
}
