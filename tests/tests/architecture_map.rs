//! ARCHITECTURE.md stays a true map, where a machine can tell.
//!
//! The conventions the file states at its top, checked here:
//! - it is under [`MAX_LINES`] lines;
//! - a path in backticks exists: a full one (starting `crates/`, `tests/`, `xtask/`, `deploy/` or `.ci/`) from
//!   the workspace root; a relative one (`local.rs`, `executor/backfill/`) only inside a crate's paragraph,
//!   which opens with ``**`epochlab-x`** (`crates/x/`)``, from that crate's `src/`;
//! - a crate name in backticks (`epochlab-sim`) is a workspace member;
//! - a Rust name in backticks is declared in the workspace's sources: a `CamelCase` type (struct, enum,
//!   trait or type alias; a few std types are allowed by name), an `ALL_CAPS` const or static, a
//!   `snake_case_name` with an underscore (a fn), a `Type::item` (a fn or const in a file that has an `impl`
//!   of `Type`) and a `crate::item` (declared in that crate);
//! - the ```` ```deps ```` block, lines `a -> b, c`, has one line per workspace member and its arrows are
//!   exactly the epochlab crates in that member's `[dependencies]` (normal dependencies only: dev- and
//!   build-dependencies are not arrows).
//!
//! The `*_fails` tests break a copy of the map in each of these ways and check that [`check`] says so.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const MAX_LINES: usize = 300;
/// Types named in the map that are not the workspace's own.
const FOREIGN_TYPES: &[&str] = &["HashMap", "HashSet", "BTreeMap"];
const FULL_PATH_PREFIXES: &[&str] = &["crates/", "tests/", "xtask/", "deploy/", ".ci/"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// The workspace's members as short names (`state-table`, `tests`, `xtask`) with their directories.
fn members(root: &Path) -> BTreeMap<String, PathBuf> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).expect("the workspace's Cargo.toml");
    let list = manifest
        .split_once("members = [")
        .and_then(|(_, rest)| rest.split_once(']'))
        .expect("a members list")
        .0;
    list.split(',')
        .map(|s| s.trim().trim_matches('"'))
        .filter(|s| !s.is_empty())
        .map(|dir| {
            let name = dir
                .rsplit('/')
                .next()
                .expect("a directory name")
                .to_string();
            (name, root.join(dir))
        })
        .collect()
}

/// The epochlab crates in the `[dependencies]` table of a member's Cargo.toml, as short names.
fn internal_deps(manifest: &str) -> BTreeSet<String> {
    let mut section = String::new();
    let mut deps = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.to_string();
        } else if section == "[dependencies]" {
            let key = line.split(['=', '.', ' ']).next().unwrap_or("");
            if let Some(name) = key.strip_prefix("epochlab-") {
                deps.insert(name.to_string());
            }
        }
    }
    deps
}

/// What one source file declares: `(kind, name)` pairs (`("fn", "run_plan")`), and the types it has an
/// `impl` of.
#[derive(Default)]
struct FileDecls {
    path: PathBuf,
    decls: BTreeSet<(String, String)>,
    impls: BTreeSet<String>,
}

const KINDS: &[&str] = &[
    "fn", "const", "static", "struct", "enum", "trait", "type", "mod",
];

/// The identifiers of a line of code.
fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

fn file_decls(path: PathBuf, text: &str) -> FileDecls {
    let mut f = FileDecls {
        path,
        ..FileDecls::default()
    };
    for line in text.lines() {
        let w: Vec<&str> = words(line).collect();
        for pair in w.windows(2).filter(|p| KINDS.contains(&p[0])) {
            f.decls.insert((pair[0].to_string(), pair[1].to_string()));
        }
        if line.trim_start().starts_with("impl") {
            f.impls.extend(w.iter().map(|s| s.to_string()));
        }
    }
    f
}

/// The declarations of every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<FileDecls>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() && name != "target" && !name.to_string_lossy().starts_with('.') {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&path).unwrap_or_default();
            out.push(file_decls(path, &text));
        }
    }
}

struct Workspace {
    root: PathBuf,
    members: BTreeMap<String, PathBuf>,
    files: Vec<FileDecls>,
}

impl Workspace {
    /// The workspace, read once per test binary.
    fn get() -> &'static Workspace {
        static WS: OnceLock<Workspace> = OnceLock::new();
        WS.get_or_init(Workspace::load)
    }

    fn load() -> Self {
        let root = root();
        let members = members(&root);
        let mut files = Vec::new();
        for dir in members.values() {
            sources(dir, &mut files);
        }
        Workspace {
            root,
            members,
            files,
        }
    }

    /// Whether a file (under `under`, if given) declares `name` as one of `kinds`.
    fn any_declares(&self, under: Option<&Path>, kinds: &[&str], name: &str) -> bool {
        self.files
            .iter()
            .filter(|f| under.is_none_or(|u| f.path.starts_with(u)))
            .any(|f| {
                kinds
                    .iter()
                    .any(|k| f.decls.contains(&(k.to_string(), name.to_string())))
            })
    }

    /// What is wrong with one backticked token, if the conventions say what it is.
    fn check_token(&self, token: &str, context: Option<&Path>) -> Option<String> {
        let is_ident =
            |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
        if FULL_PATH_PREFIXES.iter().any(|p| token.starts_with(p)) {
            let ok = !token.contains(['<', ' ', '*']) && self.root.join(token).exists();
            return (!ok).then(|| format!("path `{token}` does not exist"));
        }
        let is_rel_dir =
            token.ends_with('/') && token.split('/').all(|p| p.is_empty() || is_ident(p));
        if token.ends_with(".rs") || is_rel_dir {
            let Some(src) = context else {
                return Some(format!(
                    "relative path `{token}` outside a crate's paragraph"
                ));
            };
            let ok = src.join(token).exists();
            return (!ok).then(|| format!("path `{token}` is not in {}", src.display()));
        }
        if let Some(name) = token.strip_prefix("epochlab-") {
            let ok = self.members.contains_key(name);
            return (!ok).then(|| format!("crate `{token}` is not a workspace member"));
        }
        if let Some((head, item)) = token.split_once("::") {
            if !is_ident(head) || !is_ident(item) {
                return None;
            }
            return self.check_path_item(token, head, item);
        }
        if !is_ident(token) {
            return None;
        }
        let first = token.chars().next()?;
        let ok = if first.is_uppercase() && token.chars().any(char::is_lowercase) {
            FOREIGN_TYPES.contains(&token)
                || self.any_declares(None, &["struct", "enum", "trait", "type"], token)
        } else if first.is_uppercase() {
            self.any_declares(None, &["const", "static"], token)
        } else if token.contains('_') {
            self.any_declares(None, &["fn"], token)
        } else {
            true
        };
        (!ok).then(|| format!("`{token}` is declared nowhere in the workspace"))
    }

    /// `Type::item` (an item of an impl of the type) or `crate::item` (an item the crate declares).
    fn check_path_item(&self, token: &str, head: &str, item: &str) -> Option<String> {
        let ok = if head.starts_with(char::is_uppercase) {
            self.files.iter().any(|f| {
                f.impls.contains(head)
                    && KINDS
                        .iter()
                        .any(|k| f.decls.contains(&(k.to_string(), item.to_string())))
            })
        } else if let Some(dir) = self.members.get(&head.replace('_', "-")) {
            self.any_declares(Some(&dir.join("src")), KINDS, item)
        } else {
            return None;
        };
        (!ok).then(|| format!("`{token}` is declared nowhere in the workspace"))
    }
}

/// The arrows of the ```` ```deps ```` block: each crate with the crates it depends on.
fn arrows(map: &str) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let block = map
        .split_once("```deps\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .ok_or("no ```deps block")?
        .0;
    let mut out = BTreeMap::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let (from, to) = line
            .split_once("->")
            .ok_or_else(|| format!("`{line}` is not `a -> b, c`"))?;
        let to: BTreeSet<String> = to
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if out.insert(from.trim().to_string(), to).is_some() {
            return Err(format!("crate `{}` has two lines", from.trim()));
        }
    }
    Ok(out)
}

/// Everything wrong with `map`, one line each.
fn check(map: &str, ws: &Workspace) -> Vec<String> {
    let mut errors = Vec::new();
    let lines = map.lines().count();
    if lines >= MAX_LINES {
        errors.push(format!(
            "{lines} lines, the map must stay under {MAX_LINES}"
        ));
    }
    let mut context: Option<PathBuf> = None;
    let mut in_code = false;
    for (n, line) in map.lines().enumerate() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if in_code {
            continue;
        }
        if line.starts_with('#') {
            context = None;
        }
        if let Some(rest) = line.strip_prefix("**`epochlab-") {
            let name = rest.split('`').next().unwrap_or("");
            context = ws.members.get(name).map(|d| {
                if d.join("src").is_dir() {
                    d.join("src")
                } else {
                    d.clone()
                }
            });
        }
        for token in line.split('`').skip(1).step_by(2) {
            if let Some(e) = ws.check_token(token, context.as_deref()) {
                errors.push(format!("line {}: {e}", n + 1));
            }
        }
    }
    match arrows(map) {
        Err(e) => errors.push(e),
        Ok(drawn) => {
            for (name, dir) in &ws.members {
                let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
                let real = internal_deps(&manifest);
                match drawn.get(name) {
                    None => errors.push(format!("crate `{name}` has no line in the deps block")),
                    Some(d) if *d != real => errors.push(format!(
                        "crate `{name}`: the map draws {d:?}, its Cargo.toml has {real:?}"
                    )),
                    Some(_) => {}
                }
            }
            for name in drawn.keys().filter(|n| !ws.members.contains_key(*n)) {
                errors.push(format!(
                    "the deps block names `{name}`, no workspace member"
                ));
            }
        }
    }
    errors
}

fn the_map() -> String {
    fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

#[test]
fn the_map_names_what_exists_and_draws_the_real_dependencies() {
    let errors = check(&the_map(), Workspace::get());
    assert!(errors.is_empty(), "ARCHITECTURE.md:\n{}", errors.join("\n"));
}

/// Breaking the map in one way must make [`check`] name that break.
fn fails_with(edit: impl Fn(&str) -> String, expected: &str) {
    let map = the_map();
    let broken = edit(&map);
    assert_ne!(broken, map, "the edit changed nothing");
    let errors = check(&broken, Workspace::get());
    assert!(
        errors.iter().any(|e| e.contains(expected)),
        "expected an error with `{expected}`, got {errors:?}"
    );
}

#[test]
fn a_missing_path_fails() {
    fails_with(
        |m| m.replacen("crates/meta/src/graph.rs", "crates/meta/src/graf.rs", 1),
        "crates/meta/src/graf.rs",
    );
}

#[test]
fn a_missing_relative_path_fails() {
    fails_with(
        |m| m.replacen("(`local.rs`", "(`locale.rs`", 1),
        "locale.rs",
    );
}

#[test]
fn an_unknown_crate_fails() {
    fails_with(
        |m| m.replacen("`epochlab-sim`", "`epochlab-simulator`", 1),
        "epochlab-simulator",
    );
}

#[test]
fn a_method_of_the_wrong_type_fails() {
    fails_with(
        |m| m.replacen("`MetaNode`", "`Meta::create_table_distributed`", 1),
        "Meta::create_table_distributed",
    );
}

#[test]
fn an_undeclared_type_fails() {
    fails_with(|m| m.replacen("`MetaNode`", "`MetaNodes`", 1), "MetaNodes");
}

#[test]
fn an_arrow_too_many_fails() {
    fails_with(
        |m| m.replacen("\nstorage -> common\n", "\nstorage -> common, meta\n", 1),
        "crate `storage`",
    );
}

#[test]
fn a_missing_arrow_fails() {
    fails_with(
        |m| {
            m.replacen(
                "\ncli -> meta, sim, simulation, telemetry\n",
                "\ncli -> meta, sim, simulation\n",
                1,
            )
        },
        "crate `cli`",
    );
}

#[test]
fn a_missing_crate_line_fails() {
    fails_with(
        |m| m.replacen("\nbench ->\n", "\n", 1),
        "crate `bench` has no line",
    );
}

#[test]
fn a_long_map_fails() {
    fails_with(
        |m| format!("{m}{}", "\n".repeat(MAX_LINES)),
        "must stay under",
    );
}

#[test]
fn dev_dependencies_are_not_arrows() {
    let manifest = "[dependencies]\nepochlab-common.workspace = true\nserde.workspace = true\n\
                    [dev-dependencies]\nepochlab-bench.workspace = true\n";
    assert_eq!(
        internal_deps(manifest),
        BTreeSet::from(["common".to_string()])
    );
}
