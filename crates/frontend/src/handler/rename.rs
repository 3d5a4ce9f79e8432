//! What a rename does to the relations that use the renamed one (RisingWave's `alter_rename` rewrites their
//! definitions): every `FROM` item that names the old relation names the new one, aliased by the old name
//! when it had no alias (`FROM t` becomes `FROM t2 AS t`), so that the rest of the query reads the same. A
//! view's query is rewritten too: it is bound again at each read.

use sqlparser::ast::{
    Ident, ObjectName, ObjectNamePart, Query, SetExpr, Statement, TableAlias, TableFactor,
    TableWithJoins,
};
use sqlparser::parser::Parser;

use crate::dialect::RisingWaveDialect;

/// How deep the rewrite follows nested queries (bounded).
const MAX_DEPTH: usize = 64;

/// `query` with the `FROM` items naming `old` renamed to `new`; `None` when it names none (or does not
/// parse).
pub fn rename_in_query(query: &str, old: &str, new: &str) -> Option<String> {
    let mut q = parse_query(query)?;
    rename_query(&mut q, old, new, 0).then(|| q.to_string())
}

/// The `CREATE (MATERIALIZED) VIEW` statement with its query's `FROM` items renamed; `None` when nothing
/// changed (or it is not such a statement).
pub fn rename_in_definition(definition: &str, old: &str, new: &str) -> Option<String> {
    let mut stmts = Parser::parse_sql(&RisingWaveDialect, definition).ok()?;
    let [Statement::CreateView(cv)] = stmts.as_mut_slice() else {
        return None;
    };
    rename_query(&mut cv.query, old, new, 0).then(|| cv.to_string())
}

fn parse_query(text: &str) -> Option<Query> {
    let stmts = Parser::parse_sql(&RisingWaveDialect, text).ok()?;
    match stmts.into_iter().next()? {
        Statement::Query(q) => Some(*q),
        _ => None,
    }
}

fn rename_query(q: &mut Query, old: &str, new: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let mut changed = false;
    if let Some(with) = &mut q.with {
        for cte in &mut with.cte_tables {
            changed |= rename_query(&mut cte.query, old, new, depth + 1);
        }
    }
    changed | rename_set_expr(&mut q.body, old, new, depth + 1)
}

fn rename_set_expr(e: &mut SetExpr, old: &str, new: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match e {
        SetExpr::Select(s) => s
            .from
            .iter_mut()
            .fold(false, |c, t| c | rename_twj(t, old, new, depth + 1)),
        SetExpr::Query(q) => rename_query(q, old, new, depth + 1),
        SetExpr::SetOperation { left, right, .. } => {
            rename_set_expr(left, old, new, depth + 1) | rename_set_expr(right, old, new, depth + 1)
        }
        _ => false,
    }
}

fn rename_twj(t: &mut TableWithJoins, old: &str, new: &str, depth: usize) -> bool {
    let mut changed = rename_factor(&mut t.relation, old, new, depth + 1);
    for j in &mut t.joins {
        changed |= rename_factor(&mut j.relation, old, new, depth + 1);
    }
    changed
}

fn rename_factor(f: &mut TableFactor, old: &str, new: &str, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match f {
        TableFactor::Table {
            name, alias, args, ..
        } if args.is_none() && names(name, old) => {
            if let Some(ObjectNamePart::Identifier(last)) = name.0.last_mut() {
                *last = Ident::new(new);
            }
            if alias.is_none() {
                *alias = Some(TableAlias {
                    explicit: true,
                    name: Ident::new(old),
                    columns: Vec::new(),
                    at: None,
                });
            }
            true
        }
        TableFactor::Derived { subquery, .. } => rename_query(subquery, old, new, depth + 1),
        TableFactor::NestedJoin {
            table_with_joins, ..
        } => rename_twj(table_with_joins, old, new, depth + 1),
        _ => false,
    }
}

/// `name` (possibly qualified) names `old`.
fn names(name: &ObjectName, old: &str) -> bool {
    match name.0.last() {
        Some(ObjectNamePart::Identifier(id)) => match id.quote_style {
            Some(_) => id.value == old,
            None => id.value.to_lowercase() == old,
        },
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_items_are_renamed_and_aliased() {
        let q = rename_in_query(
            "SELECT COUNT(*) FROM t, t AS t2 WHERE t.v1 = t2.v1",
            "t",
            "t2",
        )
        .unwrap();
        assert_eq!(
            q,
            "SELECT COUNT(*) FROM t2 AS t, t2 AS t2 WHERE t.v1 = t2.v1"
        );
        let d = rename_in_definition(
            "CREATE MATERIALIZED VIEW mv AS SELECT v1 FROM t JOIN u ON t.a = u.a",
            "t",
            "t9",
        )
        .unwrap();
        assert_eq!(
            d,
            "CREATE MATERIALIZED VIEW mv AS SELECT v1 FROM t9 AS t JOIN u ON t.a = u.a"
        );
        assert!(rename_in_query("SELECT 1 FROM u", "t", "t2").is_none());
    }
}

/// `CREATE SINK` as `SHOW CREATE SINK` prints it: `CREATE SINK name AS query WITH (options)` (the query
/// and the options in canonical form; `FROM relation` kept), without `IF NOT EXISTS`. The text as given
/// when it does not read so.
pub fn sink_definition(text: &str) -> String {
    canonical_sink(text).unwrap_or_else(|| text.trim().trim_end_matches(';').to_string())
}

fn canonical_sink(text: &str) -> Option<String> {
    let tokens: Vec<sqlparser::tokenizer::Token> =
        sqlparser::tokenizer::Tokenizer::new(&RisingWaveDialect, text)
            .tokenize()
            .ok()?
            .into_iter()
            .filter(|t| !matches!(t, sqlparser::tokenizer::Token::Whitespace(_)))
            .filter(|t| *t != sqlparser::tokenizer::Token::SemiColon)
            .collect();
    let mut c = super::parse::Cursor::new(&tokens);
    c.expect(&["CREATE", "SINK"]).ok()?;
    c.eat(&["IF", "NOT", "EXISTS"]);
    let name = c.name().ok()?;
    let body = if c.eat(&["FROM"]) {
        format!("FROM {}", c.name().ok()?)
    } else {
        c.expect(&["AS"]).ok()?;
        format!("AS {}", parse_query(&c.text_until("WITH"))?)
    };
    c.expect(&["WITH"]).ok()?;
    let options = c.options().ok()??;
    let rest = c.rest();
    let rest = if rest.is_empty() {
        rest
    } else {
        format!(" {rest}")
    };
    Some(format!(
        "CREATE SINK {name} {body} WITH ({}){rest}",
        super::ddl_catalog::options_sql(&options)
    ))
}

/// A sink's canonical definition with its query's `FROM` items renamed; `None` when nothing changed.
pub fn rename_in_sink(definition: &str, old: &str, new: &str) -> Option<String> {
    let as_at = definition.find(" AS ")?;
    let with_at = definition.rfind(" WITH (")?;
    if with_at <= as_at {
        return None;
    }
    let query = &definition[as_at + 4..with_at];
    let renamed = rename_in_query(query, old, new)?;
    Some(format!(
        "{} AS {renamed}{}",
        &definition[..as_at],
        &definition[with_at..]
    ))
}

#[cfg(test)]
mod sink_tests {
    use super::*;

    #[test]
    fn sink_definitions_are_canonical_and_renamed() {
        let d = sink_definition(
            "CREATE SINK sink AS SELECT mv3.v1 AS v1 FROM mv AS mv3 WITH (\n    connector = 'blackhole'\n);",
        );
        assert_eq!(
            d,
            "CREATE SINK sink AS SELECT mv3.v1 AS v1 FROM mv AS mv3 WITH (connector = 'blackhole')"
        );
        assert_eq!(
            rename_in_sink(&d, "mv", "mv2").unwrap(),
            "CREATE SINK sink AS SELECT mv3.v1 AS v1 FROM mv2 AS mv3 WITH (connector = 'blackhole')"
        );
    }
}

/// `CREATE MATERIALIZED VIEW` as `SHOW CREATE` prints it: `sqlparser`'s canonical text, without `IF NOT
/// EXISTS`; the text as given when it does not parse.
pub fn mv_definition(text: &str) -> String {
    let parsed = Parser::parse_sql(&RisingWaveDialect, text);
    match parsed.as_deref() {
        Ok([Statement::CreateView(cv)]) => {
            let mut cv = cv.clone();
            cv.if_not_exists = false;
            cv.to_string()
        }
        _ => text.trim().trim_end_matches(';').to_string(),
    }
}
