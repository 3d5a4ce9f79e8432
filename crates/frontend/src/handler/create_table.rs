//! The catalog's side of `CREATE TABLE`: RisingWave's clauses that `sqlparser` does not read (`APPEND ONLY`,
//! `FORMAT ... ENCODE ...`), a connector's formats (RisingWave's `validate_compatibility`), and the
//! definition `SHOW CREATE TABLE` prints. A table with a connector is a table the engine writes only through
//! DML: no connector runs here, so no data is generated (noted).

use sqlparser::ast::{self, CreateTable, CreateTableOptions, Statement};
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::HandlerResult;
use super::parse::{Cursor, join_tokens};
use crate::catalog::CatalogError;
use crate::dialect::RisingWaveDialect;
use crate::error::SqlError;
use crate::frontend::Session;

/// `FORMAT f ENCODE e [(options)]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FormatEncode {
    /// Upper-cased, as `SHOW CREATE` prints them.
    pub format: String,
    pub encode: String,
    /// The whole clause as `SHOW CREATE` prints it (with a leading space).
    pub sql: String,
}

/// What a `CREATE TABLE` says beyond what `sqlparser` reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableExtras {
    pub append_only: bool,
    pub format: Option<FormatEncode>,
    /// `WATERMARK FOR col AS expr` clauses of the column list, in order.
    pub watermarks: Vec<SourceWatermark>,
}

/// A `WATERMARK FOR column AS expr` of a `CREATE TABLE`'s column list (RisingWave's `SourceWatermark`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceWatermark {
    pub column: ast::Ident,
    pub expr: ast::Expr,
}

impl std::fmt::Display for SourceWatermark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "WATERMARK FOR {} AS {}", self.column, self.expr)
    }
}

/// The statement's tokens without the watermark clauses of its column list, and those clauses (each taken
/// with the comma before it, or after it when it comes first).
fn take_watermarks(tokens: &[Token]) -> Result<(Vec<Token>, Vec<SourceWatermark>), SqlError> {
    let word = |t: Option<&Token>, w: &str| matches!(t, Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let mut kept: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut watermarks = Vec::new();
    let (mut i, mut depth) = (0, 0i32);
    while i < tokens.len() {
        let at_clause =
            depth == 1 && word(tokens.get(i), "WATERMARK") && word(tokens.get(i + 1), "FOR");
        if !at_clause {
            match tokens[i] {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ => {}
            }
            kept.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let (mut end, mut d) = (i, 0i32);
        while end < tokens.len() && !(d == 0 && matches!(tokens[end], Token::Comma | Token::RParen))
        {
            match tokens[end] {
                Token::LParen => d += 1,
                Token::RParen => d -= 1,
                _ => {}
            }
            end += 1;
        }
        if !watermarks.is_empty() {
            return Err(SqlError::Parse(
                "Only 1 watermark is allowed to be defined on source.".into(),
            ));
        }
        watermarks.push(watermark_clause(&tokens[i..end])?);
        if kept.last() == Some(&Token::Comma) {
            kept.pop();
            i = end;
        } else {
            // The first element: the comma after it goes with it.
            i = end + usize::from(tokens.get(end) == Some(&Token::Comma));
        }
    }
    Ok((kept, watermarks))
}

/// `WATERMARK FOR column AS expr`, read (its first two words already matched).
fn watermark_clause(tokens: &[Token]) -> Result<SourceWatermark, SqlError> {
    let mut parser = Parser::new(&RisingWaveDialect).with_tokens(tokens[2..].to_vec());
    let column = parser.parse_identifier()?;
    parser.expect_keyword(Keyword::AS)?;
    let expr = parser.parse_expr()?;
    parser.expect_token(&Token::EOF)?;
    Ok(SourceWatermark { column, expr })
}

/// The statement without its `APPEND ONLY` and `FORMAT ... ENCODE ...` clauses and its watermarks, and
/// those; `None` when it has none.
pub fn split_create_table(tokens: &[Token]) -> Result<Option<(String, TableExtras)>, SqlError> {
    let (tokens, watermarks) = take_watermarks(tokens)?;
    let tokens = &tokens[..];
    let mut extras = TableExtras {
        watermarks,
        ..TableExtras::default()
    };
    let mut kept: Vec<Token> = Vec::new();
    let mut depth = 0i32;
    let mut i = 0;
    let word = |t: Option<&Token>, w: &str| matches!(t, Some(Token::Word(x)) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    while i < tokens.len() {
        let t = &tokens[i];
        match t {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ if depth == 0 && word(Some(t), "APPEND") && word(tokens.get(i + 1), "ONLY") => {
                extras.append_only = true;
                i += 2;
                continue;
            }
            _ if depth == 0 && word(Some(t), "FORMAT") => {
                let mut c = Cursor::new(&tokens[i..]);
                extras.format = Some(format_encode(&mut c)?);
                c.end()?;
                break;
            }
            _ => {}
        }
        kept.push(t.clone());
        i += 1;
    }
    if extras == TableExtras::default() {
        return Ok(None);
    }
    Ok(Some((join_tokens(&kept), extras)))
}

pub(super) fn format_encode(c: &mut Cursor<'_>) -> Result<FormatEncode, SqlError> {
    c.expect(&["FORMAT"])?;
    let format = c.ident()?.to_uppercase();
    c.expect(&["ENCODE"])?;
    let encode = c.ident()?.to_uppercase();
    let mut sql = format!(" FORMAT {format} ENCODE {encode}");
    if let Some(o) = c.options()? {
        sql.push_str(&format!(" ({})", super::ddl_catalog::options_sql(&o)));
    }
    Ok(FormatEncode {
        format,
        encode,
        sql,
    })
}

/// RisingWave's names of a format and an encode (its `Format` / `Encode` enums' `Debug`).
fn camel(word: &str) -> String {
    match word {
        "DEBEZIUM_MONGO" => "DebeziumMongo".into(),
        w => {
            let lower = w.to_lowercase();
            let mut cs = lower.chars();
            cs.next()
                .map_or_else(String::new, |f| f.to_uppercase().chain(cs).collect())
        }
    }
}

/// The formats and encodes each connector takes (RisingWave's `CONNECTORS_COMPATIBLE_FORMATS`).
fn compatible(connector: &str, format: &str) -> Option<&'static [&'static str]> {
    const JSON: &[&str] = &["JSON"];
    Some(match (connector, format) {
        ("kafka", "PLAIN") => &["JSON", "PROTOBUF", "AVRO", "BYTES", "CSV"],
        ("kafka", "UPSERT" | "DEBEZIUM") => &["JSON", "AVRO"],
        ("kafka", "MAXWELL" | "CANAL" | "DEBEZIUM_MONGO") => JSON,
        ("pulsar" | "kinesis" | "google_pubsub", "PLAIN") => &["JSON", "PROTOBUF", "AVRO", "BYTES"],
        ("pulsar" | "kinesis", "UPSERT") => &["JSON", "AVRO"],
        ("pulsar" | "kinesis" | "google_pubsub", "DEBEZIUM" | "MAXWELL" | "CANAL") => JSON,
        ("nexmark" | "datagen", "NATIVE") => &["NATIVE"],
        ("nexmark", "PLAIN") => &["BYTES"],
        ("datagen", "PLAIN") => &["BYTES", "JSON"],
        ("s3" | "s3_v2" | "gcs", "PLAIN") => &["CSV", "JSON"],
        ("posix_fs", "PLAIN") => &["CSV"],
        ("mysql-cdc" | "postgres-cdc", "DEBEZIUM" | "PLAIN") => JSON,
        ("citus-cdc", "DEBEZIUM") => JSON,
        ("nats" | "test", "PLAIN") => JSON,
        _ => return None,
    })
}

/// `connector` takes `f`, else RisingWave's error.
pub fn validate_compatibility(connector: &str, f: &FormatEncode) -> Result<(), CatalogError> {
    let encodes =
        compatible(connector, &f.format).ok_or_else(|| CatalogError::FormatNotSupported {
            connector: connector.into(),
            format: camel(&f.format),
            encode: None,
        })?;
    if !encodes.contains(&f.encode.as_str()) {
        return Err(CatalogError::FormatNotSupported {
            connector: connector.into(),
            format: camel(&f.format),
            encode: Some(camel(&f.encode)),
        });
    }
    Ok(())
}

/// `CREATE TABLE` as `SHOW CREATE TABLE` prints it: without `IF NOT EXISTS`, `APPEND ONLY` after the
/// columns, then the `WITH` options and `FORMAT ... ENCODE ...`.
pub fn table_definition(ct: &CreateTable, extras: &TableExtras) -> String {
    let mut shown = ct.clone();
    for c in &mut shown.columns {
        c.data_type = rw_data_type(&c.data_type);
    }
    shown.if_not_exists = false;
    shown.table_options = CreateTableOptions::None;
    let mut out = shown.to_string();
    if ct.columns.is_empty() && ct.constraints.is_empty() {
        out = out.trim_end().trim_end_matches("()").trim_end().to_string();
    }
    if !extras.watermarks.is_empty() && out.ends_with(')') {
        // Back into the column list, after the columns (RisingWave prints them there).
        out.pop();
        for w in &extras.watermarks {
            out.push_str(&format!(", {w}"));
        }
        out.push(')');
    }
    if extras.append_only {
        out.push_str(" APPEND ONLY");
    }
    if let CreateTableOptions::With(options) = &ct.table_options {
        let o: Vec<String> = options.iter().map(ToString::to_string).collect();
        out.push_str(&format!(" WITH ({})", o.join(", ")));
    }
    if let Some(f) = &extras.format {
        out.push_str(&f.sql);
    }
    out
}

/// A column type as RisingWave's parser prints it: its spellings of one type read as that type
/// (`VARCHAR`/`STRING` as `CHARACTER VARYING`, `INTEGER` as `INT`, `DOUBLE PRECISION` as `DOUBLE`, `BOOL` as
/// `BOOLEAN`, `DECIMAL` as `NUMERIC`, `TIMESTAMP WITHOUT TIME ZONE` as `TIMESTAMP`); a name it reads as a
/// custom type (`int4`, `timestamptz`) is printed as written by both.
fn rw_data_type(t: &ast::DataType) -> ast::DataType {
    use ast::DataType as T;
    use ast::{ArrayElemTypeDef, ExactNumberInfo, TimezoneInfo};
    match t {
        T::Varchar(None) | T::CharacterVarying(None) | T::String(None) => T::CharacterVarying(None),
        T::Int(None) | T::Integer(None) => T::Int(None),
        T::Double(ExactNumberInfo::None) | T::DoublePrecision => T::Double(ExactNumberInfo::None),
        T::Bool | T::Boolean => T::Boolean,
        T::Numeric(info) | T::Decimal(info) | T::Dec(info) => T::Numeric(*info),
        T::Timestamp(p, TimezoneInfo::WithoutTimeZone) => T::Timestamp(*p, TimezoneInfo::None),
        T::Array(ArrayElemTypeDef::SquareBracket(inner, size)) => T::Array(
            ArrayElemTypeDef::SquareBracket(Box::new(rw_data_type(inner)), *size),
        ),
        other => other.clone(),
    }
}

impl Session {
    /// A `CREATE TABLE` with RisingWave's own clauses: the rest is the front end's `CREATE TABLE`.
    pub(super) async fn handle_create_table(&mut self, tokens: &[Token]) -> Option<HandlerResult> {
        let (text, extras) = match split_create_table(tokens) {
            Ok(Some(split)) => split,
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        };
        let parsed = Parser::parse_sql(&RisingWaveDialect, &text);
        let ct = match parsed.as_deref() {
            Ok([Statement::CreateTable(ct)]) => ct.clone(),
            Ok(_) => return Some(Err(SqlError::Parse("expected one CREATE TABLE".into()))),
            Err(e) => return Some(Err(e.clone().into())),
        };
        Some(self.create_table(&ct, &text, &extras).await)
    }
}

#[cfg(test)]
mod tests {
    use sqlparser::tokenizer::{Token, Tokenizer};

    use super::*;

    fn tokens(sql: &str) -> Vec<Token> {
        Tokenizer::new(&RisingWaveDialect, sql)
            .tokenize()
            .unwrap()
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect()
    }

    #[test]
    fn append_only_and_format_are_split_off() {
        let (text, extras) = split_create_table(&tokens(
            "create table t (v int) append only with (connector = 'datagen') format plain encode json",
        ))
        .unwrap()
        .unwrap();
        assert!(extras.append_only);
        assert_eq!(extras.format.unwrap().sql, " FORMAT PLAIN ENCODE JSON");
        assert!(!text.to_lowercase().contains("append"));
        assert!(
            split_create_table(&tokens("create table t (v int)"))
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn watermarks_are_taken_out_of_the_column_list_wherever_they_stand() {
        for sql in [
            "create table t (watermark for ts as ts - interval '1' second, v int, ts timestamp)",
            "create table t (v int, watermark for ts as ts - interval '1' second, ts timestamp)",
            "create table t (v int, ts timestamp, watermark for ts as ts - interval '1' second)",
        ] {
            let (text, extras) = split_create_table(&tokens(sql)).unwrap().unwrap();
            let parsed = Parser::parse_sql(&RisingWaveDialect, &text).expect(&text);
            let Statement::CreateTable(ct) = &parsed[0] else {
                panic!("{text}");
            };
            assert_eq!(ct.columns.len(), 2, "{text}");
            let w: Vec<String> = extras.watermarks.iter().map(ToString::to_string).collect();
            assert_eq!(w, ["WATERMARK FOR ts AS ts - INTERVAL '1' SECOND"], "{sql}");
        }
        let bad = split_create_table(&tokens("create table t (v int, watermark for ts ts)"));
        assert!(matches!(bad, Err(SqlError::Parse(_))), "{bad:?}");
    }

    #[test]
    fn formats_are_checked_as_risingwave_checks_them() {
        let f = |format: &str, encode: &str| FormatEncode {
            format: format.into(),
            encode: encode.into(),
            sql: String::new(),
        };
        assert!(validate_compatibility("datagen", &f("PLAIN", "JSON")).is_ok());
        let err = validate_compatibility("datagen", &f("DEBEZIUM", "JSON")).unwrap_err();
        assert!(
            err.to_string()
                .contains("connector datagen does not support format Debezium")
        );
        assert!(validate_compatibility("datagen", &f("PLAIN", "AVRO")).is_err());
    }
}
