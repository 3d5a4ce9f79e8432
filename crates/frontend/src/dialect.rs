//! [`RisingWaveDialect`]: the one `sqlparser` dialect the front end reads SQL with. It is PostgreSQL's
//! (RisingWave's parser is a PostgreSQL parser extended with its own syntax) plus what RisingWave adds that
//! `sqlparser` has a switch or a hook for: `SELECT * EXCEPT (..)`, a generated column `v INT AS expr`, and
//! `FOR SYSTEM_TIME AS OF PROCTIME()`.
//!
//! Why a dialect over `sqlparser` and not a parser of our own: `sqlparser` is kept upstream, reads
//! PostgreSQL's grammar whole, and its dialect hooks (`parse_statement`, `parse_column_option`, the
//! `supports_*` switches) take RisingWave's additions one at a time; every construct neither reads stays a
//! one-line parse error. The dialect reports PostgreSQL's type id, so each of `sqlparser`'s
//! `dialect_of!(.. is PostgreSqlDialect)` branches reads as PostgreSQL; every method PostgreSQL's dialect
//! overrides is delegated to it (listed below; a test parses the same statements with both).

use std::any::TypeId;

use sqlparser::ast::{ColumnOption, Expr, GeneratedAs, UnaryOperator};
use sqlparser::dialect::{BindPlaceholderStyle, Dialect, PostgreSqlDialect, Precedence};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

/// The names a window specification is given in place of the frame exclusion that ends its frame
/// (`frontend::words::mark_frame_exclusions`), each the clause's words: `sqlparser` 0.64's `WindowFrame` has
/// no exclusion ("TBD: EXCLUDE"), so the clause is carried to the binder as the specification's window name,
/// quoted, which RisingWave's grammar has no place for (the binder refuses any other name there).
pub const FRAME_EXCLUSIONS: [&str; 4] = [
    "exclude current row",
    "exclude group",
    "exclude ties",
    "exclude no others",
];

/// PostgreSQL's dialect with RisingWave's additions (see the module's text).
#[derive(Debug, Default, Clone, Copy)]
pub struct RisingWaveDialect;

/// Each method named, passed to PostgreSQL's dialect as it is.
macro_rules! delegate_to_postgres {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> $ret {
                PostgreSqlDialect {}.$name($($arg),*)
            }
        )*
    };
}

impl Dialect for RisingWaveDialect {
    fn dialect(&self) -> TypeId {
        TypeId::of::<PostgreSqlDialect>()
    }

    /// `SELECT * EXCEPT (a, b)`: every column but those (RisingWave's `Wildcard(Some(except))`).
    fn supports_select_wildcard_except(&self) -> bool {
        true
    }

    /// A generated column, `v INT AS expr` (RisingWave's `ColumnOption::GeneratedColumns`): read as
    /// `sqlparser`'s generated option without its `GENERATED ALWAYS` keywords; the expression unparenthesized.
    fn parse_column_option(
        &self,
        parser: &mut Parser,
    ) -> Result<Option<Result<Option<ColumnOption>, ParserError>>, ParserError> {
        if !parser.parse_keyword(Keyword::AS) {
            return Ok(None);
        }
        let option = parser.parse_expr().map(|expr| Some(generated_column(expr)));
        Ok(Some(option))
    }

    /// `FROM t FOR SYSTEM_TIME AS OF PROCTIME()` (RisingWave's temporal join's lookup table). `sqlparser`
    /// reads other table versions under the same switch; the binder refuses every one but `PROCTIME()`.
    fn supports_table_versioning(&self) -> bool {
        true
    }

    /// A prefix `-` or `+` binds tighter than `^`, as PostgreSQL's and RisingWave's grammars have it
    /// (`-3 ^ 2` is 9); `sqlparser` reads its operand up to `*`, so `-3 ^ 2` would be `-(3 ^ 2)`.
    fn parse_prefix(&self, parser: &mut Parser) -> Option<Result<Expr, ParserError>> {
        let op = match parser.peek_token_ref().token {
            Token::Minus => UnaryOperator::Minus,
            Token::Plus => UnaryOperator::Plus,
            _ => return None,
        };
        parser.advance_token();
        let above_caret = self.prec_value(Precedence::Caret);
        Some(parser.parse_subexpr(above_caret).map(|e| Expr::UnaryOp {
            op,
            expr: Box::new(e),
        }))
    }

    delegate_to_postgres! {
        fn supports_cte_materialization(&self) -> bool;
        fn identifier_quote_style(&self, identifier: &str) -> Option<char>;
        fn ordered_bind_placeholder_style(&self) -> Option<BindPlaceholderStyle>;
        fn is_delimited_identifier_start(&self, ch: char) -> bool;
        fn is_identifier_start(&self, ch: char) -> bool;
        fn is_identifier_part(&self, ch: char) -> bool;
        fn supports_unicode_string_literal(&self) -> bool;
        fn is_reserved_for_identifier(&self, kw: Keyword) -> bool;
        fn is_table_alias(&self, kw: &Keyword, parser: &mut Parser) -> bool;
        fn supports_string_literal_column_alias(&self, explicit: bool) -> bool;
        fn supports_string_literal_table_alias(&self, explicit: bool) -> bool;
        fn is_custom_operator_part(&self, ch: char) -> bool;
        fn get_next_precedence(&self, parser: &Parser) -> Option<Result<u8, ParserError>>;
        fn supports_filter_during_aggregation(&self) -> bool;
        fn supports_group_by_expr(&self) -> bool;
        fn supports_drop_group(&self) -> bool;
        fn supports_alter_user_as_alter_role(&self) -> bool;
        fn supports_create_group(&self) -> bool;
        fn supports_create_role_if_not_exists(&self) -> bool;
        fn prec_value(&self, prec: Precedence) -> u8;
        fn allow_extract_custom(&self) -> bool;
        fn allow_extract_single_quotes(&self) -> bool;
        fn supports_create_index_with_clause(&self) -> bool;
        fn supports_sql_option_without_value(&self) -> bool;
        fn supports_explain_with_utility_options(&self) -> bool;
        fn supports_listen_notify(&self) -> bool;
        fn supports_exclude_constraint(&self) -> bool;
        fn supports_factorial_operator(&self) -> bool;
        fn supports_bitwise_shift_operators(&self) -> bool;
        fn supports_tilde_like_match_operator(&self) -> bool;
        fn supports_comparison_in_between_low_bound(&self) -> bool;
        fn supports_comment_on(&self) -> bool;
        fn supports_load_extension(&self) -> bool;
        fn supports_named_fn_args_with_colon_operator(&self) -> bool;
        fn supports_named_fn_args_with_expr_name(&self) -> bool;
        fn supports_named_fn_args_with_assignment_operator(&self) -> bool;
        fn supports_empty_projections(&self) -> bool;
        fn supports_nested_comments(&self) -> bool;
        fn supports_copy_from_stdin_data(&self) -> bool;
        fn supports_string_escape_constant(&self) -> bool;
        fn supports_numeric_literal_underscores(&self) -> bool;
        fn supports_non_decimal_integer_literals(&self) -> bool;
        fn supports_array_typedef_with_brackets(&self) -> bool;
        fn supports_geometric_types(&self) -> bool;
        fn supports_order_by_using_operator(&self) -> bool;
        fn supports_set_names(&self) -> bool;
        fn supports_alter_column_type_using(&self) -> bool;
        fn supports_left_associative_joins_without_parens(&self) -> bool;
        fn supports_notnull_operator(&self) -> bool;
        fn supports_interval_options(&self) -> bool;
        fn is_interval_qualifier(&self, kw: Keyword) -> bool;
        fn supports_insert_table_alias(&self) -> bool;
        fn supports_create_table_like_parenthesized(&self) -> bool;
        fn supports_select_wildcard_with_alias(&self) -> bool;
        fn supports_comma_separated_trim(&self) -> bool;
        fn supports_xml_expressions(&self) -> bool;
        fn is_custom_type_typed_string(&self, first_keyword: Keyword, qualified: bool) -> bool;
        fn supports_aliased_function_args(&self) -> bool;
        fn supports_comment_optimizer_hint(&self) -> bool;
        fn supports_add_column_if_not_exists(&self) -> bool;
        fn supports_attach_partition_of(&self) -> bool;
        fn supports_detach_partition_of(&self) -> bool;
        fn supports_table_inheritance_markers(&self) -> bool;
        fn supports_column_generic_options(&self) -> bool;
    }
}

/// The option of a column generated by `expr`.
pub fn generated_column(expr: Expr) -> ColumnOption {
    ColumnOption::Generated {
        generated_as: GeneratedAs::Always,
        sequence_options: None,
        generation_expr: Some(expr),
        generation_expr_mode: None,
        generated_keyword: false,
    }
}

/// The expression of a generated column's option; `None` for any other option.
pub fn generation_expr(option: &ColumnOption) -> Option<&Expr> {
    match option {
        ColumnOption::Generated {
            generation_expr: Some(e),
            generated_keyword: false,
            ..
        } => Some(e),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Statements both dialects read: the same tree from each.
    const SHARED: &[&str] = &[
        "SELECT a::int, b->>'k', c @> d, e ~ 'x', f !~* 'y', g || h FROM t WHERE i IS NOT DISTINCT FROM j",
        "SELECT count(*) FILTER (WHERE a > 1), string_agg(b, ',' ORDER BY c DESC NULLS LAST) FROM t GROUP BY 1",
        "SELECT x FROM t1 LEFT JOIN t2 ON t1.a = t2.b, t3 ORDER BY 1 LIMIT 2 OFFSET 1",
        "WITH c AS MATERIALIZED (SELECT 1) SELECT * FROM c",
        "SELECT $1, U&'d\\0061t', E'\\n', 0x1F, 1_000, 'a' COLLATE \"C\", ARRAY[1, 2][1], 5!",
        "SELECT extract(epoch FROM now()), trim(both 'x' FROM s), interval '1' day, a <<= b",
        "SELECT * FROM t AS x(a, b) WHERE a NOTNULL AND b IS NULL",
        "CREATE TABLE t (v INT PRIMARY KEY, w VARCHAR DEFAULT 'x')",
        "CREATE INDEX i ON t(v DESC) INCLUDE (w)",
        "SELECT * FROM t EXCEPT SELECT * FROM u",
    ];

    #[test]
    fn reads_what_postgres_reads_as_postgres_does() {
        for sql in SHARED {
            let pg = Parser::parse_sql(&PostgreSqlDialect {}, sql);
            let rw = Parser::parse_sql(&RisingWaveDialect, sql);
            assert_eq!(format!("{pg:?}"), format!("{rw:?}"), "{sql}");
            assert!(rw.is_ok(), "{sql}: {rw:?}");
        }
    }

    #[test]
    fn reads_a_wildcard_with_except() {
        let sql = "SELECT * EXCEPT (a, b) FROM t";
        assert!(Parser::parse_sql(&PostgreSqlDialect {}, sql).is_err());
        let rw = Parser::parse_sql(&RisingWaveDialect, sql).expect("read");
        assert_eq!(rw[0].to_string(), sql);
    }

    #[test]
    fn reads_a_generated_column() {
        let sql = "CREATE TABLE t (v1 INT AS v2 - 1, v2 INT, v3 TIMESTAMPTZ AS proctime())";
        assert!(Parser::parse_sql(&PostgreSqlDialect {}, sql).is_err());
        let rw = Parser::parse_sql(&RisingWaveDialect, sql).expect("read");
        let sqlparser::ast::Statement::CreateTable(ct) = &rw[0] else {
            panic!("{rw:?}");
        };
        let exprs: Vec<String> = ct
            .columns
            .iter()
            .map(|c| {
                c.options
                    .iter()
                    .find_map(|o| generation_expr(&o.option))
                    .map_or(String::new(), ToString::to_string)
            })
            .collect();
        assert_eq!(exprs, ["v2 - 1", "", "proctime()"]);
    }

    #[test]
    fn a_prefix_minus_binds_tighter_than_caret_and_looser_than_a_cast() {
        use sqlparser::ast::BinaryOperator as B;
        let read = |sql: &str| {
            let mut p = Parser::new(&RisingWaveDialect).try_with_sql(sql).unwrap();
            p.parse_expr().unwrap()
        };
        // The operator at the top, and whether its left operand is a prefix minus.
        let top = |sql: &str| match read(sql) {
            Expr::BinaryOp { left, op, .. } => (Some(op), matches!(*left, Expr::UnaryOp { .. })),
            Expr::UnaryOp { .. } => (None, true),
            other => panic!("{sql}: {other:?}"),
        };
        assert_eq!(top("-3 ^ 2"), (Some(B::PGExp), true));
        assert_eq!(top("-2 * 3"), (Some(B::Multiply), true));
        assert_eq!(top("1 - -2"), (Some(B::Minus), false));
        // A cast and a field access stay inside the minus.
        assert!(
            matches!(read("-x::int"), Expr::UnaryOp { expr, .. } if matches!(*expr, Expr::Cast { .. }))
        );
        assert!(
            matches!(read("- a.b"), Expr::UnaryOp { expr, .. } if matches!(*expr, Expr::CompoundIdentifier(_)))
        );
    }
}
