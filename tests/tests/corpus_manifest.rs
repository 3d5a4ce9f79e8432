//! RisingWave's corpus under `tests/slt/risingwave/` is exactly the files its `MANIFEST` lists, byte for byte:
//! each file's SHA-256 (a symbolic link's: of its target's text) is the one recorded when it was copied from
//! RisingWave's tree at f21fb9b7915, and no file is missing or added (but the README, the MANIFEST and the
//! ratchets, `expected.txt` and `ci-expected.txt`, which are epochlab's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Epochlab's own files in the corpus folder.
const OURS: [&str; 4] = ["README.md", "MANIFEST", "expected.txt", "ci-expected.txt"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/slt/risingwave")
}

/// One manifest line: git mode, git blob id (information), SHA-256.
#[derive(Debug)]
struct Entry {
    mode: String,
    blob: String,
    sha256: String,
}

fn manifest() -> BTreeMap<String, Entry> {
    let text = std::fs::read_to_string(root().join("MANIFEST")).expect("the MANIFEST");
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let [path, mode, blob, sha256] = line.split(' ').collect::<Vec<_>>()[..] else {
            panic!(
                "MANIFEST:{}: `{line}` is not `path mode blob sha256`",
                i + 1
            )
        };
        let entry = Entry {
            mode: mode.into(),
            blob: blob.into(),
            sha256: sha256.into(),
        };
        assert!(
            out.insert(path.to_string(), entry).is_none(),
            "{path} twice"
        );
    }
    out
}

/// Every file and symbolic link under the corpus (links to folders are not entered), relative paths.
fn on_disk() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        for entry in std::fs::read_dir(root().join(&rel)).unwrap() {
            let entry = entry.unwrap();
            let path = rel.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                dirs.push(path);
            } else {
                let key = path.to_str().unwrap().replace('\\', "/");
                out.insert(key, root().join(&path));
            }
        }
    }
    out
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn the_corpus_is_risingwaves_files_unmodified() {
    let manifest = manifest();
    assert!(manifest.len() >= 290, "{} entries", manifest.len());
    let disk = on_disk();
    for (rel, e) in &manifest {
        let path = disk
            .get(rel)
            .unwrap_or_else(|| panic!("{rel}: listed in the MANIFEST, missing"));
        assert_eq!(e.blob.len(), 40, "{rel}: a git blob id");
        let bytes = match e.mode.as_str() {
            "120000" => {
                let target = std::fs::read_link(path).unwrap_or_else(|err| {
                    panic!("{rel}: a symbolic link in RisingWave's tree: {err}")
                });
                target.to_str().unwrap().as_bytes().to_vec()
            }
            "100644" | "100755" => std::fs::read(path).unwrap(),
            other => panic!("{rel}: git mode {other}"),
        };
        assert_eq!(sha256(&bytes), e.sha256, "{rel} differs from RisingWave's");
    }
    for rel in disk.keys() {
        assert!(
            manifest.contains_key(rel) || OURS.contains(&rel.as_str()),
            "{rel}: not in the MANIFEST (the corpus holds RisingWave's files only)"
        );
    }
}

#[test]
fn the_sha256_is_right() {
    assert_eq!(
        sha256(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}
