//! How a record's text becomes statements: split at `;` outside parentheses ([`split_statements`]), a `CREATE
//! TABLE` rewritten into what `sqlparser` reads ([`rewrite_create_table`]), and [`Words`], the reader of
//! RisingWave's own statements that `sqlparser` does not know (`FLUSH`, `CREATE SINK`, `ALTER ... SET`, `SET`).

use sqlparser::ast::Statement;
use sqlparser::keywords::Keyword;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Span, Token, Tokenizer, Whitespace, Word};

use epochlab_common::{Datum, ScalarImpl};

use super::positive_u32;
use crate::dialect::{FRAME_EXCLUSIONS, RisingWaveDialect};
use crate::error::SqlError;

/// `sqlparser`'s reading of one statement.
pub(super) fn parse_one(text: &str) -> Result<Statement, SqlError> {
    let quoted = quote_table_names(text);
    let text = quoted.as_deref().unwrap_or(text);
    let marked = mark_frame_exclusions(text);
    let text = marked.as_deref().unwrap_or(text);
    let mut statements = Parser::parse_sql(&RisingWaveDialect, text)?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        0 => Err(SqlError::Invalid("empty statement".into())),
        _ => Err(SqlError::Invalid("one statement at a time".into())),
    }
}

/// A relation named `table` (RisingWave's parser reads one; `snapshot_amplification.slt` creates one), quoted
/// where it stands as a relation's name: after `FROM`, `JOIN`, `INTO`, `UPDATE` and a comma, where `sqlparser` reads the
/// keyword (Hive's `INSERT INTO TABLE name`, the `TABLE name` query) and PostgreSQL's grammar has no keyword
/// `TABLE`. Quoted, the name is the same (an unquoted identifier is lowercased). `None` when there is none.
fn quote_table_names(text: &str) -> Option<String> {
    // Most statements name no `table`: they are not tokenized a second time.
    if !text
        .as_bytes()
        .windows(5)
        .any(|w| w.eq_ignore_ascii_case(b"table"))
    {
        return None;
    }
    let mut tokens = Tokenizer::new(&RisingWaveDialect, text).tokenize().ok()?;
    // Whether the token before names a place for a relation (a comma too: `FROM a, table`).
    let mut at_a_place = false;
    let mut quoted = false;
    for t in tokens.iter_mut() {
        let keyword = match t {
            Token::Whitespace(_) => continue,
            Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
            _ => None,
        };
        if at_a_place && keyword == Some(Keyword::TABLE) {
            *t = Token::Word(Word {
                value: "table".into(),
                quote_style: Some('"'),
                keyword: Keyword::NoKeyword,
            });
            quoted = true;
            at_a_place = false;
            continue;
        }
        at_a_place = matches!(t, Token::Comma)
            || matches!(
                keyword,
                Some(Keyword::FROM | Keyword::JOIN | Keyword::INTO | Keyword::UPDATE)
            );
    }
    quoted.then(|| tokens.iter().map(token_sql).collect())
}

/// `f(..) OVER (.. ROWS .. EXCLUDE CURRENT ROW)` rewritten as `f(..) OVER ("exclude current row" .. ROWS ..)`
/// ([`FRAME_EXCLUSIONS`]: also `GROUP`, `TIES` and `NO OTHERS`) wherever the clause ends the parentheses
/// opened after `OVER`; `None` when there is none. Any other `EXCLUDE` stays, and `sqlparser` refuses it.
fn mark_frame_exclusions(text: &str) -> Option<String> {
    if !text
        .as_bytes()
        .windows(7)
        .any(|w| w.eq_ignore_ascii_case(b"exclude"))
    {
        return None;
    }
    let tokens = Tokenizer::new(&RisingWaveDialect, text).tokenize().ok()?;
    let significant: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .collect();
    let keyword = |i: usize| match &tokens[i] {
        Token::Word(w) if w.quote_style.is_none() => Some(w.keyword),
        _ => None,
    };
    // Each open parenthesis: its token, and whether `OVER` opened it.
    let mut open: Vec<(usize, bool)> = Vec::new();
    // Each `OVER (` given a name, and the name.
    let mut marked: Vec<(usize, String)> = Vec::new();
    let mut dropped = vec![false; tokens.len()];
    for (n, &i) in significant.iter().enumerate() {
        match &tokens[i] {
            Token::LParen => {
                let over = n > 0 && keyword(significant[n - 1]) == Some(Keyword::OVER);
                open.push((i, over));
            }
            Token::RParen => {
                open.pop();
            }
            _ => {}
        }
        let ends_over = matches!(open.last(), Some((_, true)));
        if !ends_over || keyword(i) != Some(Keyword::EXCLUDE) {
            continue;
        }
        // `EXCLUDE` then one or two words, then the `)` that closes `OVER (`.
        let clause = (2..=3).find_map(|len| {
            let words = significant.get(n..n + len)?;
            let closes = significant
                .get(n + len)
                .is_some_and(|&c| tokens[c] == Token::RParen);
            let text: Vec<String> = words.iter().map(|&w| tokens[w].to_string()).collect();
            let name = text.join(" ").to_lowercase();
            (closes && FRAME_EXCLUSIONS.contains(&name.as_str())).then_some((name, len))
        });
        if let Some((name, len)) = clause {
            let end = significant[n + len];
            dropped[i..end].iter_mut().for_each(|d| *d = true);
            let over = open.last().expect("inside OVER's parentheses").0;
            marked.push((over, name));
        }
    }
    if marked.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len() + 24 * marked.len());
    for (i, t) in tokens.iter().enumerate() {
        if dropped[i] {
            continue;
        }
        out.push_str(&token_sql(t));
        if let Some((_, name)) = marked.iter().find(|(at, _)| *at == i) {
            out.push_str(&format!("\"{name}\" "));
        }
    }
    Some(out)
}

/// A token as SQL that reads back as the same token: `sqlparser` prints a string literal or a quoted name
/// without doubling the quote inside it (`'a''b'`, read as `a'b`, would print as `'a'b'`).
pub(crate) fn token_sql(t: &Token) -> String {
    match t {
        Token::SingleQuotedString(s) => format!("'{}'", s.replace('\'', "''")),
        Token::Word(w) if w.quote_style == Some('"') => {
            format!("\"{}\"", w.value.replace('"', "\"\""))
        }
        other => other.to_string(),
    }
}

/// One statement of a record: its tokens and its text.
pub(super) struct Stmt {
    pub(super) tokens: Vec<Token>,
    pub(super) text: String,
}

/// The statements of `sql`, split at `;` outside parentheses.
pub(super) fn split_statements(sql: &str) -> Result<Vec<Stmt>, SqlError> {
    let tokens = Tokenizer::new(&RisingWaveDialect, sql)
        .tokenize()
        .map_err(|e| SqlError::Parse(e.to_string()))?;
    let mut out = Vec::new();
    let mut current: Vec<Token> = Vec::new();
    let mut depth = 0i32;
    let mut flush = |current: &mut Vec<Token>| {
        let text: String = current.iter().map(token_sql).collect();
        let tokens: Vec<Token> = std::mem::take(current)
            .into_iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect();
        if !tokens.is_empty() {
            out.push(Stmt { tokens, text });
        }
    };
    for t in tokens {
        match &t {
            // RisingWave's parser refuses `""` as a name (PostgreSQL's error).
            Token::Word(w) if w.quote_style == Some('"') && w.value.is_empty() => {
                return Err(SqlError::Parse(
                    "zero-length delimited identifier at or near \"\"".into(),
                ));
            }
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon if depth <= 0 => {
                flush(&mut current);
                continue;
            }
            Token::Whitespace(
                Whitespace::SingleLineComment { .. } | Whitespace::MultiLineComment(_),
            ) => {
                current.push(Token::Whitespace(Whitespace::Space));
                continue;
            }
            _ => {}
        }
        current.push(t);
    }
    flush(&mut current);
    Ok(out)
}

/// RisingWave's `CREATE TABLE` syntax that `sqlparser` does not read, rewritten: `APPEND ONLY` and
/// `FORMAT .. ENCODE .. [(..)]` dropped (the first reported), `STRUCT<..>` column types quoted as one type
/// name (the binder reads it back), a trailing comma after the last column dropped. Other statements are
/// left as they are.
pub(super) fn rewrite_create_table(s: &Stmt) -> (String, TableSyntax) {
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let t = &s.tokens;
    let mut syntax = TableSyntax::default();
    if let Some(text) = strip_emit_on_window_close(t) {
        syntax.emit_on_window_close = true;
        return (text, syntax);
    }
    if !(t.len() > 1 && word(&t[0], "CREATE") && word(&t[1], "TABLE")) {
        return (s.text.clone(), syntax);
    }
    let mut out: Vec<String> = Vec::with_capacity(t.len());
    let (mut i, mut depth) = (0, 0i32);
    while i < t.len() {
        if depth == 0
            && t[i] == Token::LParen
            && let Some((names, next)) = ctas_column_names(t, i)
        {
            // CREATE TABLE t (a, b) AS query: the columns' names, taken out (their types are the query's).
            syntax.column_names = names;
            i = next;
            continue;
        }
        match &t[i] {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        if depth == 0 && word(&t[i], "APPEND") && t.get(i + 1).is_some_and(|x| word(x, "ONLY")) {
            syntax.append_only = true;
            i += 2;
            continue;
        }
        if depth == 0
            && word(&t[i], "AS")
            && t.get(i + 1) == Some(&Token::LParen)
            && closing_paren(t, i + 1) == Some(t.len() - 1)
        {
            // CREATE TABLE t AS (query): the query without its parentheses.
            out.push("AS".into());
            out.extend(t[i + 2..t.len() - 1].iter().map(|x| x.to_string()));
            break;
        }
        if depth == 0 && word(&t[i], "FORMAT") && t.get(i + 2).is_some_and(|x| word(x, "ENCODE")) {
            // FORMAT f ENCODE e [( options )]: the rest of the statement.
            syntax.format = Some(t[i + 1].to_string());
            break;
        }
        if depth == 1 && t[i] == Token::Comma && t.get(i + 1) == Some(&Token::RParen) {
            // A trailing comma after the last column (RisingWave's parser takes it).
            i += 1;
            continue;
        }
        if word(&t[i], "STRUCT") && t.get(i + 1) == Some(&Token::Lt) {
            let (text, next) = struct_type(t, i + 1);
            out.push(format!("\"STRUCT<{text}>\""));
            i = next;
            continue;
        }
        out.push(token_sql(&t[i]));
        i += 1;
    }
    (out.join(" "), syntax)
}

/// A `[EXPLAIN] CREATE MATERIALIZED VIEW .. EMIT ON WINDOW CLOSE` without its last clause, which
/// `sqlparser` does not read; `None` for any other statement.
fn strip_emit_on_window_close(t: &[Token]) -> Option<String> {
    let word = |t: &Token, w: &str| matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w));
    let head = ["CREATE", "MATERIALIZED", "VIEW"];
    let tail = ["EMIT", "ON", "WINDOW", "CLOSE"];
    let n = t.len();
    let is = |at: usize, words: &[&str]| words.iter().enumerate().all(|(k, w)| word(&t[at + k], w));
    let start = usize::from(n > 0 && word(&t[0], "EXPLAIN"));
    if n < start + head.len() + tail.len() || !is(start, &head) || !is(n - tail.len(), &tail) {
        return None;
    }
    let kept: Vec<String> = t[..n - tail.len()].iter().map(token_sql).collect();
    Some(kept.join(" "))
}

/// What [`rewrite_create_table`] took out of a `CREATE TABLE` (or a `CREATE MATERIALIZED VIEW`'s `EMIT ON
/// WINDOW CLOSE`).
#[derive(Clone, Debug, Default)]
pub(crate) struct TableSyntax {
    /// `CREATE MATERIALIZED VIEW .. EMIT ON WINDOW CLOSE`.
    pub emit_on_window_close: bool,
    pub append_only: bool,
    /// `FORMAT <format> ENCODE ...`.
    pub format: Option<String>,
    /// `CREATE TABLE t (a, b) AS query`: the names given to the query's first columns.
    pub column_names: Vec<String>,
}

/// The names of a `CREATE TABLE .. AS`'s column list (names without types) opening at `open`, and the
/// position of its `AS`; `None` for any other parenthesized list.
fn ctas_column_names(t: &[Token], open: usize) -> Option<(Vec<String>, usize)> {
    let close = closing_paren(t, open)?;
    let is_as = |x: &Token| matches!(x, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("AS"));
    if !t.get(close + 1).is_some_and(is_as) || close == open + 1 {
        return None;
    }
    let mut names = Vec::new();
    for (k, x) in t[open + 1..close].iter().enumerate() {
        match x {
            Token::Word(w) if k % 2 == 0 => {
                names.push(crate::binder::ident(&w.to_ident(Span::empty())))
            }
            Token::Comma if k % 2 == 1 => {}
            _ => return None,
        }
    }
    (t[close - 1] != Token::Comma).then_some((names, close + 1))
}

/// The position of the `)` that closes the `(` at `open`.
pub(super) fn closing_paren(t: &[Token], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, x) in t.iter().enumerate().skip(open) {
        match x {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// The inside of `STRUCT<...>` starting at the `<` at `at`, lower-cased, and the position after its `>`.
pub(super) fn struct_type(t: &[Token], at: usize) -> (String, usize) {
    let mut depth = 0i32;
    let mut text = String::new();
    let mut i = at;
    while i < t.len() {
        let piece = match &t[i] {
            Token::Lt => {
                depth += 1;
                if depth == 1 {
                    i += 1;
                    continue;
                }
                "<".to_string()
            }
            Token::Gt => {
                depth -= 1;
                ">".to_string()
            }
            Token::ShiftRight => {
                depth -= 2;
                ">>".to_string()
            }
            // `>>>` (nested structs closing together) is read as one custom operator.
            Token::CustomBinaryOperator(op) if !op.is_empty() && op.chars().all(|c| c == '>') => {
                depth -= i32::try_from(op.len()).unwrap_or(i32::MAX);
                op.clone()
            }
            Token::Comma => ", ".to_string(),
            other => {
                let w = other.to_string();
                if text.ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                    format!(" {w}")
                } else {
                    w
                }
            }
        };
        i += 1;
        if depth <= 0 {
            // The closing `>` (or the second of `>>`) is the struct's own.
            let keep = piece
                .len()
                .saturating_sub(1 + usize::try_from(-depth).unwrap_or(0));
            text.push_str(&piece[..keep.min(piece.len())]);
            break;
        }
        text.push_str(&piece);
    }
    (text, i)
}

/// `unsupported: CREATE INDEX`: the statement's first `n` words (three for `CREATE MATERIALIZED VIEW`-like
/// heads), upper-cased.
pub(super) fn unsupported_words(tokens: &[Token], n: usize) -> SqlError {
    let words: Vec<String> = tokens
        .iter()
        .take(n + 1)
        .map_while(|t| match t {
            Token::Word(w) => Some(w.value.to_uppercase()),
            _ => None,
        })
        .collect();
    let n = if words.get(1).is_some_and(|w| w == "MATERIALIZED") {
        n + 1
    } else {
        n
    };
    let head: Vec<String> = words.into_iter().take(n).collect();
    let head = if head.is_empty() {
        tokens.first().map_or_else(String::new, |t| t.to_string())
    } else {
        head.join(" ")
    };
    SqlError::Unsupported(head)
}

/// A value of `SET`, `ALTER ... SET` or a sink's `WITH`: a word, a number or a string.
#[derive(Clone, Debug)]
pub enum SettingValue {
    Word(String),
    Number(i64),
    Text(String),
}

impl SettingValue {
    pub(super) fn text(&self) -> String {
        match self {
            SettingValue::Word(w) | SettingValue::Text(w) => w.clone(),
            SettingValue::Number(n) => n.to_string(),
        }
    }

    pub(super) fn invalid(&self) -> SqlError {
        SqlError::Invalid(format!("invalid value {}", self.text()))
    }

    /// A number, or `None` for `DEFAULT`.
    pub(super) fn number(&self) -> Result<Option<i64>, SqlError> {
        match self {
            SettingValue::Number(n) => Ok(Some(*n)),
            SettingValue::Word(w) if w.eq_ignore_ascii_case("default") => Ok(None),
            SettingValue::Text(t) => t.trim().parse().map(Some).map_err(|_| self.invalid()),
            _ => Err(self.invalid()),
        }
    }

    pub(super) fn rate_limit(&self) -> Result<Option<u32>, SqlError> {
        match self.number()? {
            None => Ok(None),
            Some(n) => positive_u32(&Some(ScalarImpl::Int64(n)), "rate limit"),
        }
    }

    pub(super) fn datum(&self) -> Result<Datum, SqlError> {
        match self {
            SettingValue::Number(n) => Ok(Some(ScalarImpl::Int64(*n))),
            _ => Err(self.invalid()),
        }
    }
}

/// A cursor over a statement's tokens (whitespace left out), for RisingWave's own statements.
pub(super) struct Words<'a> {
    pub(super) tokens: &'a [Token],
    pos: usize,
}

impl<'a> Words<'a> {
    pub(super) fn new(tokens: &'a [Token]) -> Self {
        Self { tokens, pos: 0 }
    }

    pub(super) fn next(&mut self) -> Option<&'a Token> {
        let t = self.tokens.get(self.pos);
        self.pos += 1;
        t
    }

    pub(super) fn peek_upper_at(&self, ahead: usize) -> Option<String> {
        match self.tokens.get(self.pos + ahead) {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_uppercase()),
            _ => None,
        }
    }

    pub(super) fn peek_upper(&self) -> Option<String> {
        self.peek_upper_at(0)
    }

    pub(super) fn eat(&mut self, word: &str) -> bool {
        if self.peek_upper().as_deref() == Some(word) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn eat_seq(&mut self, words: &[&str]) -> bool {
        let all = words
            .iter()
            .enumerate()
            .all(|(i, w)| self.peek_upper_at(i).as_deref() == Some(*w));
        if all {
            self.pos += words.len();
        }
        all
    }

    pub(super) fn eat_token(&mut self, t: &Token) -> bool {
        if self.tokens.get(self.pos) == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn ident(&mut self) -> Result<String, SqlError> {
        match self.next() {
            Some(Token::Word(w)) => Ok(match w.quote_style {
                Some(_) => w.value.clone(),
                None => w.value.to_lowercase(),
            }),
            Some(other) => Err(SqlError::Parse(format!("expected a name, found {other}"))),
            None => Err(SqlError::Parse("expected a name, found the end".into())),
        }
    }

    pub(super) fn setting_value(&mut self) -> Result<SettingValue, SqlError> {
        let negative = self.eat_token(&Token::Minus);
        match self.next() {
            Some(Token::Number(n, _)) => {
                let v: i64 = n
                    .parse()
                    .map_err(|_| SqlError::Invalid(format!("invalid number {n}")))?;
                Ok(SettingValue::Number(if negative { -v } else { v }))
            }
            Some(Token::Word(w)) if !negative => Ok(SettingValue::Word(w.value.clone())),
            Some(Token::SingleQuotedString(s)) if !negative => Ok(SettingValue::Text(s.clone())),
            Some(other) => Err(SqlError::Parse(format!("expected a value, found {other}"))),
            None => Err(SqlError::Parse("expected a value, found the end".into())),
        }
    }

    /// `(key = value, ...)`.
    pub(super) fn options(&mut self) -> Result<Vec<(String, SettingValue)>, SqlError> {
        if !self.eat_token(&Token::LParen) {
            return Err(SqlError::Parse("expected ( after WITH".into()));
        }
        let mut out = Vec::new();
        loop {
            let mut key = self.ident()?;
            while self.eat_token(&Token::Period) {
                key.push('.');
                key.push_str(&self.ident()?);
            }
            if !self.eat_token(&Token::Eq) {
                return Err(SqlError::Parse(format!("expected = after {key}")));
            }
            out.push((key, self.setting_value()?));
            if self.eat_token(&Token::RParen) {
                return Ok(out);
            }
            if !self.eat_token(&Token::Comma) {
                return Err(SqlError::Parse("expected , or ) in WITH (...)".into()));
            }
        }
    }

    /// The text from here to the last `WITH (` outside parentheses (or the end); the cursor moves there.
    pub(super) fn text_until_with(&mut self) -> String {
        let mut depth = 0i32;
        let mut end = self.tokens.len();
        for i in self.pos..self.tokens.len() {
            match &self.tokens[i] {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                Token::Word(w)
                    if depth == 0
                        && w.quote_style.is_none()
                        && w.value.eq_ignore_ascii_case("with")
                        && self.tokens.get(i + 1) == Some(&Token::LParen) =>
                {
                    end = i;
                }
                _ => {}
            }
        }
        let text = self.tokens[self.pos..end]
            .iter()
            .map(token_sql)
            .collect::<Vec<_>>()
            .join(" ");
        self.pos = end;
        text
    }

    pub(super) fn end(&self) -> Result<(), SqlError> {
        match self.tokens.get(self.pos) {
            None => Ok(()),
            Some(t) => Err(SqlError::Parse(format!(
                "unexpected {t} at the end of the statement"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_parentheses() {
        let s = split_statements("create table t (a int, b int); ; insert into t values (1, 2);")
            .unwrap();
        assert_eq!(s.len(), 2);
        assert!(s[0].text.starts_with("create table t (a int, b int)"));
    }

    /// Nested struct types closing together (`>>`, `>>>`) and a trailing comma after the last column are
    /// rewritten into what `sqlparser` reads.
    #[test]
    fn create_table_rewrites_nested_structs_and_a_trailing_comma() {
        let rewrite = |sql: &str| rewrite_create_table(&split_statements(sql).unwrap()[0]).0;
        let text =
            rewrite("create table t (a struct<b int, c struct<d int, e struct <f int>>>, g int,)");
        assert!(
            text.contains(r#""STRUCT<b int, c struct<d int, e struct<f int>>>""#),
            "{text}"
        );
        assert!(text.ends_with("g int )"), "{text}");
        assert!(
            matches!(parse_one(&text), Ok(Statement::CreateTable(_))),
            "{text}"
        );
    }

    /// `EXCLUDE CURRENT ROW` at the end of an `OVER (..)` reaches the binder as the specification's name,
    /// in each window of a statement; elsewhere it stays and `sqlparser` refuses it.
    #[test]
    fn a_frame_exclusion_is_carried_as_the_windows_name() {
        let sql = "select sum(a) over (partition by b order by c rows 2 preceding exclude current row), \
                   max(a) over (partition by b order by c rows between 1 preceding and 1 following \
                   exclude current row), lag(a) over (partition by b order by c) from t";
        let marked = mark_frame_exclusions(sql).expect("two exclusions");
        assert_eq!(marked.matches(FRAME_EXCLUSIONS[0]).count(), 2, "{marked}");
        let others = "select sum(a) over (order by c rows 1 preceding exclude no others), \
                      sum(a) over (order by c rows 1 preceding EXCLUDE Ties) from t";
        let marked = mark_frame_exclusions(others).expect("two exclusions");
        assert!(
            marked.contains(r#"over ("exclude no others" order by"#),
            "{marked}"
        );
        assert!(
            marked.contains(r#"over ("exclude ties" order by"#),
            "{marked}"
        );
        assert_eq!(
            parse_one("select 'it''s'").map(|s| s.to_string()).ok(),
            Some("SELECT 'it''s'".into())
        );
        assert!(
            !marked.to_lowercase().contains(" exclude current row)"),
            "{marked}"
        );
        assert!(parse_one(sql).is_ok());
        assert_eq!(mark_frame_exclusions("select a from t"), None);
        let elsewhere = "select a from t exclude current row";
        assert_eq!(mark_frame_exclusions(elsewhere), None);
        assert!(parse_one(elsewhere).is_err());
    }

    /// A relation named `table` (RisingWave's `snapshot_amplification.slt`) is inserted into, read and dropped.
    #[test]
    fn a_relation_named_table_is_inserted_into() {
        let Ok(Statement::Insert(insert)) =
            parse_one("INSERT INTO table select 1 from generate_series(1, 3)")
        else {
            panic!("an insert")
        };
        assert_eq!(insert.table.to_string(), r#""table""#);
        assert!(insert.source.is_some());
        for sql in [
            "CREATE TABLE table (i1 int)",
            "SELECT x.i1 FROM table x JOIN table s1 ON x.i1 = s1.i1",
            "DROP TABLE table",
            "insert into t values (1)",
            "SELECT * FROM t, table",
            "DELETE FROM table WHERE i1 = 1",
            "UPDATE table SET i1 = 2",
        ] {
            assert!(parse_one(sql).is_ok(), "{sql}");
        }
        assert!(quote_table_names("insert into t values (1)").is_none());
        // The keyword where it is one stays.
        assert!(quote_table_names("CREATE TABLE t (v int)").is_none());
        assert!(quote_table_names("GRANT SELECT ON TABLE t TO u").is_none());
    }

    #[test]
    fn unsupported_names_the_construct() {
        let tokens = |sql: &str| split_statements(sql).unwrap().remove(0).tokens;
        assert_eq!(
            unsupported_words(&tokens("create index i on t(a)"), 2).to_string(),
            "unsupported: CREATE INDEX"
        );
        assert_eq!(
            unsupported_words(&tokens("drop materialized view m"), 2).to_string(),
            "unsupported: DROP MATERIALIZED VIEW"
        );
    }
}
