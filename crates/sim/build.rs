//! Finds the bug catalogue's entries: every file of `src/bugs/` with a line that begins `pub const INFO: BugInfo` is one,
//! in file-name order. It writes `$OUT_DIR/catalogue.rs`, which declares each entry's module and calls
//! `bugs/mod.rs`'s `catalogue!` with them, so a new bug's module is all the catalogue needs (no list to edit).
//! `b14910.rs` becomes `BugId::Rw14910`, `reschedule_unpinned.rs` `BugId::RescheduleUnpinned`.

use std::fmt::Write;
use std::path::PathBuf;
use std::{env, fs};

/// What marks a file of `src/bugs/` as a catalogue entry.
const ENTRY_MARK: &str = "pub const INFO: BugInfo";

fn main() {
    let dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("src/bugs");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut modules: Vec<(String, PathBuf)> = Vec::new();
    for entry in fs::read_dir(&dir).expect("src/bugs is readable") {
        let path = entry.expect("a directory entry").path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
            continue;
        };
        let is_rust = path.extension().is_some_and(|e| e == "rs");
        if is_rust && stem != "mod" && declares_info(&path) {
            println!("cargo:rerun-if-changed={}", path.display());
            modules.push((stem, path));
        }
    }
    modules.sort();
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets it")).join("catalogue.rs");
    fs::write(out, render(&modules)).expect("OUT_DIR is writable");
}

/// Whether a line of the file begins with [`ENTRY_MARK`] (not a comment that names it).
fn declares_info(path: &std::path::Path) -> bool {
    let text = fs::read_to_string(path).expect("a file of src/bugs is readable");
    text.lines().any(|line| line.starts_with(ENTRY_MARK))
}

fn render(modules: &[(String, PathBuf)]) -> String {
    let mut s = String::from("// Written by crates/sim/build.rs from the files of src/bugs/.\n");
    for (module, path) in modules {
        writeln!(
            s,
            "#[path = {:?}]\npub mod {module};",
            path.display().to_string()
        )
        .unwrap();
    }
    s.push_str("catalogue! {\n");
    for (module, _) in modules {
        writeln!(s, "    {} => {module},", variant(module)).unwrap();
    }
    s.push_str("}\n");
    s
}

/// `b14910` → `Rw14910` (a RisingWave number), `reschedule_unpinned` → `RescheduleUnpinned`.
fn variant(module: &str) -> String {
    if let Some(number) = module
        .strip_prefix('b')
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
    {
        return format!("Rw{number}");
    }
    module
        .split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}
