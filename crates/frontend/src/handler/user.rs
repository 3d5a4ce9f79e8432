//! `CREATE USER` and `ALTER USER` (RisingWave's `create_user.rs`, `alter_user.rs`).

use super::parse::{Cursor, Value};
use super::{HandlerResult, done};
use crate::catalog::UserCatalog;
use crate::error::SqlError;
use crate::frontend::Session;

/// One option of `CREATE / ALTER USER ... [WITH] options`.
fn apply_option(u: &mut UserCatalog, c: &mut Cursor<'_>) -> Result<bool, SqlError> {
    let Some(word) = c.keyword_at(0) else {
        return Ok(false);
    };
    c.eat(&[&word]);
    match word.as_str() {
        "SUPERUSER" => u.is_super = true,
        "NOSUPERUSER" => u.is_super = false,
        "CREATEDB" => u.can_create_db = true,
        "NOCREATEDB" => u.can_create_db = false,
        "CREATEUSER" => u.can_create_user = true,
        "NOCREATEUSER" => u.can_create_user = false,
        "LOGIN" => u.can_login = true,
        "NOLOGIN" => u.can_login = false,
        "PASSWORD" => {
            u.password = match c.value()? {
                Value::Null => None,
                Value::Text(p) if p.is_empty() => None,
                Value::Text(p) if p.starts_with("md5") && p.len() == 35 => Some(p),
                // A plain text password is stored as a marker only: nothing here authenticates.
                Value::Text(_) => Some("<plain>".into()),
                _ => return Err(c.unexpected("a password string")),
            };
        }
        "ENCRYPTED" => {
            c.expect(&["PASSWORD"])?;
            u.password = Some(c.value()?.text());
        }
        _ => return Err(SqlError::Parse(format!("unknown user option {word}"))),
    }
    Ok(true)
}

impl Session {
    /// `CREATE USER name [[WITH] options]`.
    pub(super) fn handle_create_user(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["CREATE", "USER"])?;
        let name = c.ident()?;
        c.eat(&["WITH"]);
        let mut u = UserCatalog::new(&name);
        while apply_option(&mut u, c)? {}
        c.end()?;
        self.catalog_write(|c| c.create_user(u))?;
        done()
    }

    /// `ALTER USER name RENAME TO new` | `ALTER USER name [WITH] options`.
    pub(super) fn handle_alter_user(&mut self, c: &mut Cursor<'_>) -> HandlerResult {
        c.expect(&["ALTER", "USER"])?;
        let name = c.ident()?;
        if c.eat(&["RENAME", "TO"]) {
            let to = c.ident()?;
            c.end()?;
            self.catalog_write(|c| c.rename_user(&name, &to))?;
            if self.user == name {
                self.user = to;
            }
            return done();
        }
        c.eat(&["WITH"]);
        let mut u = self.catalog().user(&name)?.clone();
        while apply_option(&mut u, c)? {}
        c.end()?;
        self.catalog_write(|c| c.user_mut(&name).map(|x| *x = u))?;
        done()
    }
}
