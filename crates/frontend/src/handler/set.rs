//! `SET [SESSION | LOCAL] name { = | TO } value [, ...]`, `SET TIME ZONE value`, `RESET name` (RisingWave's
//! `variable.rs`); the values live in the session's [`crate::session_config::SessionConfig`].

use sqlparser::tokenizer::Token;

use super::parse::Cursor;
use super::{HandlerResult, done};
use crate::error::SqlError;
use crate::frontend::Session;

impl Session {
    pub(super) fn handle_set(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        if c.eat(&["RESET"]) {
            let name = c.ident()?;
            c.end()?;
            self.config.reset(&name)?;
            return done();
        }
        c.expect(&["SET"])?;
        if !c.eat(&["SESSION"]) {
            c.eat(&["LOCAL"]);
        }
        let name = if c.eat(&["TIME", "ZONE"]) {
            "timezone".to_string()
        } else {
            let n = c.ident()?;
            if !(c.eat_token(&Token::Eq) || c.eat(&["TO"])) {
                return Err(c.unexpected("= or TO"));
            }
            n
        };
        let mut values = vec![c.value()?.text()];
        while c.eat_token(&Token::Comma) {
            values.push(c.value()?.text());
        }
        c.end()?;
        if name == "search_path" {
            values = values
                .into_iter()
                .map(|v| if v == "$user" { "\"$user\"".into() } else { v })
                .collect();
        }
        self.config.set(&name, &values).map_err(SqlError::from)?;
        done()
    }
}
