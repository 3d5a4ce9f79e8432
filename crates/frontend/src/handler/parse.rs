//! A cursor over a statement's tokens, for the statements the handlers read themselves (RisingWave's own
//! syntax, which `sqlparser`'s PostgreSQL dialect does not have: `CREATE USER ... WITH SUPERUSER`,
//! `GRANT ... ON ALL SOURCES IN SCHEMA`, `ALTER ... SET SCHEMA`, ...).

use sqlparser::tokenizer::Token;

use crate::error::SqlError;

/// A name as the statement wrote it: its parts, each folded to lower case unless quoted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Name(pub Vec<String>);

impl Name {
    /// `sqlparser`'s name, each part folded unless quoted.
    pub fn of_object(n: &sqlparser::ast::ObjectName) -> Result<Self, SqlError> {
        n.0.iter()
            .map(|p| match p {
                sqlparser::ast::ObjectNamePart::Identifier(id) => Ok(match id.quote_style {
                    Some(_) => id.value.clone(),
                    None => id.value.to_lowercase(),
                }),
                other => Err(SqlError::Unsupported(format!("name {other}"))),
            })
            .collect::<Result<_, _>>()
            .map(Name)
    }

    pub fn last(&self) -> &str {
        self.0.last().map_or("", String::as_str)
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.join("."))
    }
}

/// A literal or word of an option or setting, as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    Word(String),
    Number(String),
    Text(String),
    Null,
}

impl Value {
    pub fn text(&self) -> String {
        match self {
            Value::Word(s) | Value::Number(s) | Value::Text(s) => s.clone(),
            Value::Null => String::new(),
        }
    }

    /// As a `WITH` option's value prints in `SHOW CREATE` (strings quoted).
    pub fn sql(&self) -> String {
        match self {
            Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
            Value::Null => "NULL".into(),
            Value::Word(s) | Value::Number(s) => s.clone(),
        }
    }
}

pub struct Cursor<'a> {
    tokens: &'a [Token],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(tokens: &'a [Token]) -> Self {
        Self { tokens, pos: 0 }
    }

    pub fn peek(&self) -> Option<&'a Token> {
        self.tokens.get(self.pos)
    }

    /// The unquoted keyword `ahead` tokens on, upper-cased.
    pub fn keyword_at(&self, ahead: usize) -> Option<String> {
        match self.tokens.get(self.pos + ahead) {
            Some(Token::Word(w)) if w.quote_style.is_none() => Some(w.value.to_uppercase()),
            _ => None,
        }
    }

    pub fn is(&self, word: &str) -> bool {
        self.keyword_at(0).as_deref() == Some(word)
    }

    /// Eats the keywords when they all come next.
    pub fn eat(&mut self, words: &[&str]) -> bool {
        let all = words
            .iter()
            .enumerate()
            .all(|(i, w)| self.keyword_at(i).as_deref() == Some(*w));
        if all {
            self.pos += words.len();
        }
        all
    }

    pub fn expect(&mut self, words: &[&str]) -> Result<(), SqlError> {
        if self.eat(words) {
            Ok(())
        } else {
            Err(self.unexpected(&words.join(" ")))
        }
    }

    pub fn eat_token(&mut self, t: &Token) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.tokens.len()
    }

    pub fn end(&self) -> Result<(), SqlError> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(self.unexpected("end of statement")),
        }
    }

    /// RisingWave's parser's wording for a token it did not expect.
    pub fn unexpected(&self, expected: &str) -> SqlError {
        let found = self
            .peek()
            .map_or_else(|| "EOF".to_string(), |t| t.to_string());
        SqlError::Parse(format!("Expected {expected}, found: {found}"))
    }

    /// One identifier, folded unless quoted.
    pub fn ident(&mut self) -> Result<String, SqlError> {
        match self.peek() {
            Some(Token::Word(w)) => {
                self.pos += 1;
                Ok(match w.quote_style {
                    Some(_) => w.value.clone(),
                    None => w.value.to_lowercase(),
                })
            }
            _ => Err(self.unexpected("identifier")),
        }
    }

    /// `a`, `a.b`, `a.b.c`.
    pub fn name(&mut self) -> Result<Name, SqlError> {
        let mut parts = vec![self.ident()?];
        while self.eat_token(&Token::Period) {
            parts.push(self.ident()?);
        }
        Ok(Name(parts))
    }

    /// Names separated by commas.
    pub fn names(&mut self) -> Result<Vec<Name>, SqlError> {
        let mut out = vec![self.name()?];
        while self.eat_token(&Token::Comma) {
            out.push(self.name()?);
        }
        Ok(out)
    }

    /// A literal, a word or `NULL`.
    pub fn value(&mut self) -> Result<Value, SqlError> {
        let negative = self.eat_token(&Token::Minus);
        let v = match self.peek() {
            Some(Token::Number(n, _)) => {
                Value::Number(if negative { format!("-{n}") } else { n.clone() })
            }
            Some(
                Token::SingleQuotedString(s)
                | Token::EscapedStringLiteral(s)
                | Token::NationalStringLiteral(s),
            ) => Value::Text(s.clone()),
            Some(Token::Word(w))
                if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("null") =>
            {
                Value::Null
            }
            Some(Token::Word(w)) if w.quote_style == Some('"') => Value::Text(w.value.clone()),
            Some(Token::Word(w)) => Value::Word(w.value.clone()),
            _ => return Err(self.unexpected("a value")),
        };
        self.pos += 1;
        Ok(v)
    }

    /// `( key = value, ... )` with dotted keys; `None` without the parenthesis.
    pub fn options(&mut self) -> Result<Option<Vec<(String, Value)>>, SqlError> {
        if !self.eat_token(&Token::LParen) {
            return Ok(None);
        }
        let mut out = Vec::new();
        loop {
            let key = self.name()?.to_string();
            if !self.eat_token(&Token::Eq) {
                return Err(self.unexpected("="));
            }
            out.push((key, self.value()?));
            if self.eat_token(&Token::Comma) {
                continue;
            }
            if self.eat_token(&Token::RParen) {
                return Ok(Some(out));
            }
            return Err(self.unexpected(", or )"));
        }
    }

    /// The tokens up to (not including) the next top-level keyword `word`, or the end, as text.
    pub fn text_until(&mut self, word: &str) -> String {
        let mut depth = 0i32;
        let start = self.pos;
        while let Some(t) = self.peek() {
            match t {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                _ if depth == 0 && self.is(word) => break,
                _ => {}
            }
            self.pos += 1;
        }
        join_tokens(&self.tokens[start..self.pos])
    }

    /// The rest of the statement as text.
    pub fn rest(&mut self) -> String {
        let start = self.pos;
        self.pos = self.tokens.len();
        join_tokens(&self.tokens[start..])
    }
}

/// Tokens (whitespace dropped) back to text, one space between words.
pub fn join_tokens(tokens: &[Token]) -> String {
    let mut out = String::new();
    let mut prev: Option<&Token> = None;
    for t in tokens {
        let tight = matches!(t, Token::Comma | Token::RParen | Token::Period)
            || matches!(prev, Some(Token::LParen | Token::Period) | None);
        if !tight {
            out.push(' ');
        }
        out.push_str(&crate::frontend::token_sql(t));
        prev = Some(t);
    }
    out
}
