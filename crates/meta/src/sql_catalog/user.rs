//! Users and their privileges (RisingWave's `src/frontend/src/user/` and `risingwave_common::acl`).

use serde::{Deserialize, Serialize};

use super::{CatalogError, DatabaseId, RelationId, SchemaId, UserId};

/// One user and its attributes.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct UserCatalog {
    pub id: UserId,
    pub name: String,
    pub is_super: bool,
    pub can_create_db: bool,
    pub can_create_user: bool,
    pub can_login: bool,
    /// The stored password: an `md5...` hash as given, else the plain text's marker (nothing reads it).
    pub password: Option<String>,
    pub privileges: Vec<Privilege>,
}

impl UserCatalog {
    pub fn superuser(id: UserId, name: &str) -> Self {
        Self {
            id,
            name: name.into(),
            is_super: true,
            can_create_db: true,
            can_create_user: true,
            can_login: true,
            password: None,
            privileges: Vec::new(),
        }
    }

    /// A new user as `CREATE USER` makes it before its options: may log in, nothing else.
    pub fn new(name: &str) -> Self {
        Self {
            name: name.into(),
            can_login: true,
            ..Self::default()
        }
    }

    /// Has `action` on `object` (a superuser has everything).
    pub fn has_privilege(&self, object: &Object, action: Action) -> bool {
        self.is_super
            || self
                .privileges
                .iter()
                .any(|p| p.object == *object && p.action == action)
    }

    /// Adds the privileges, keeping one per object and action (a grant option, once given, stays).
    pub fn grant(&mut self, granted: &[Privilege]) {
        for g in granted {
            match self
                .privileges
                .iter_mut()
                .find(|p| p.object == g.object && p.action == g.action)
            {
                Some(p) => p.with_grant_option |= g.with_grant_option,
                None => self.privileges.push(g.clone()),
            }
        }
    }

    /// Takes the privileges away, or only their grant option.
    pub fn revoke(&mut self, revoked: &[(Object, Action)], grant_option_only: bool) {
        if grant_option_only {
            for p in &mut self.privileges {
                if revoked.contains(&(p.object.clone(), p.action)) {
                    p.with_grant_option = false;
                }
            }
        } else {
            self.privileges
                .retain(|p| !revoked.contains(&(p.object.clone(), p.action)));
        }
    }

    /// Forgets privileges on objects that no longer exist.
    pub fn forget(&mut self, gone: impl Fn(&Object) -> bool) {
        self.privileges.retain(|p| !gone(&p.object));
    }
}

/// What a privilege is on (RisingWave's `PbObject`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Object {
    Database(DatabaseId),
    Schema(SchemaId),
    Relation(RelationId),
    AllSourcesInSchema(SchemaId),
    AllMviewsInSchema(SchemaId),
    AllDmlTablesInSchema(SchemaId),
}

/// What a privilege allows (RisingWave's `AclMode`s that SQL grants).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    Select,
    Insert,
    Update,
    Delete,
    Create,
    Connect,
    Usage,
}

impl Action {
    pub fn from_sql(word: &str) -> Option<Self> {
        Some(match word.to_ascii_uppercase().as_str() {
            "SELECT" => Action::Select,
            "INSERT" => Action::Insert,
            "UPDATE" => Action::Update,
            "DELETE" => Action::Delete,
            "CREATE" => Action::Create,
            "CONNECT" => Action::Connect,
            "USAGE" => Action::Usage,
            _ => return None,
        })
    }
}

/// The kind of object a `GRANT` names, which decides the actions it may grant.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantKind {
    Database,
    Schema,
    Source,
    Mview,
    Table,
    View,
    Sink,
}

impl GrantKind {
    /// Every action the kind has (what `ALL [PRIVILEGES]` grants): RisingWave's `ALL_AVAILABLE_*_MODES`.
    pub fn available(self) -> &'static [Action] {
        use Action::*;
        match self {
            GrantKind::Database => &[Create, Connect],
            GrantKind::Schema => &[Create, Usage],
            GrantKind::Source | GrantKind::Mview | GrantKind::View => &[Select],
            GrantKind::Table => &[Select, Insert, Update, Delete],
            GrantKind::Sink => &[],
        }
    }

    /// `actions` (`None`: `ALL`) checked against the kind.
    pub fn actions(self, actions: Option<&[Action]>) -> Result<Vec<Action>, CatalogError> {
        match actions {
            None => Ok(self.available().to_vec()),
            Some(a) if a.iter().all(|x| self.available().contains(x)) => Ok(a.to_vec()),
            Some(_) => Err(CatalogError::InvalidPrivilegeType),
        }
    }
}

/// One privilege a user holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Privilege {
    pub object: Object,
    pub action: Action,
    pub with_grant_option: bool,
    pub granted_by: UserId,
}
