//! The mem-table: a local store's writes of the current epoch, one [`KeyOp`] per key, with RisingWave's
//! op-consistency transition rules (reference §3.3).

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Bound;

use bytes::Bytes;
use epochlab_common::{TableId, value_encoding};

use crate::error::{Inconsistency, StorageError, StorageResult};

#[derive(Clone, PartialEq, Eq)]
pub enum KeyOp {
    Insert(Bytes),
    /// Delete, carrying the old value.
    Delete(Bytes),
    /// Update `(old, new)`.
    Update(Bytes, Bytes),
}

impl KeyOp {
    /// The value after this op: `None` for a delete.
    pub fn new_value(&self) -> Option<&Bytes> {
        match self {
            KeyOp::Insert(v) | KeyOp::Update(_, v) => Some(v),
            KeyOp::Delete(_) => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            KeyOp::Insert(_) => "Insert",
            KeyOp::Delete(_) => "Delete",
            KeyOp::Update(..) => "Update",
        }
    }
}

impl fmt::Debug for KeyOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values are opaque bytes; their length is what helps when reading an error.
        match self {
            KeyOp::Update(o, n) => write!(f, "Update({}B -> {}B)", o.len(), n.len()),
            KeyOp::Insert(v) | KeyOp::Delete(v) => write!(f, "{}({}B)", self.name(), v.len()),
        }
    }
}

#[derive(Default)]
pub struct MemTable {
    buffer: BTreeMap<Bytes, KeyOp>,
    size_bytes: usize,
}

impl MemTable {
    pub fn is_dirty(&self) -> bool {
        !self.buffer.is_empty()
    }

    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    pub fn size_bytes(&self) -> usize {
        self.size_bytes
    }

    pub fn get(&self, key: &[u8]) -> Option<&KeyOp> {
        self.buffer.get(key)
    }

    pub fn range(
        &self,
        range: (Bound<&[u8]>, Bound<&[u8]>),
    ) -> impl Iterator<Item = (&Bytes, &KeyOp)> {
        self.buffer.range::<[u8], _>(range)
    }

    /// Take the buffer, leaving the mem-table clean.
    pub fn drain(&mut self) -> BTreeMap<Bytes, KeyOp> {
        self.size_bytes = 0;
        std::mem::take(&mut self.buffer)
    }

    /// Apply `op` without checks (`OpConsistencyLevel::Inconsistent`): the last write wins.
    pub fn apply_inconsistent(&mut self, key: Bytes, op: KeyOp) {
        self.size_bytes += key.len() + op_size(&op);
        self.buffer.insert(key, op);
    }

    /// Apply `op` with the consistency rules. `lower` gives what the layers below the mem-table hold for the
    /// key; it is consulted only when the mem-table has no entry for the key. One descent of the tree.
    pub fn apply_consistent(
        &mut self,
        table_id: TableId,
        key: Bytes,
        op: KeyOp,
        lower: impl FnOnce(&[u8]) -> Option<Bytes>,
    ) -> StorageResult<()> {
        use std::collections::btree_map::Entry;
        let err = |prev: Option<KeyOp>, new: &KeyOp, key: &Bytes| {
            StorageError::InconsistentOperation(Box::new(Inconsistency {
                table_id,
                key: key.clone(),
                prev,
                new: new.clone(),
            }))
        };
        self.size_bytes += key.len() + op_size(&op);
        match self.buffer.entry(key) {
            Entry::Vacant(v) => {
                // Nothing in the mem-table: check against storage below (RisingWave's flush-time sanity
                // check, done at write time here so the error carries the key that caused it).
                let stored = lower(v.key());
                match (&op, &stored) {
                    (KeyOp::Insert(_), None) => {}
                    (KeyOp::Insert(_), Some(s)) => {
                        return Err(err(Some(KeyOp::Insert(s.clone())), &op, v.key()));
                    }
                    (KeyOp::Delete(old) | KeyOp::Update(old, _), Some(s))
                        if value_encoding::same_row(old, s) => {}
                    (KeyOp::Delete(_) | KeyOp::Update(..), Some(s)) => {
                        return Err(err(Some(KeyOp::Insert(s.clone())), &op, v.key()));
                    }
                    (KeyOp::Delete(_) | KeyOp::Update(..), None) => {
                        return Err(err(None, &op, v.key()));
                    }
                }
                v.insert(op);
                Ok(())
            }
            Entry::Occupied(mut o) => {
                let next = match (o.get(), &op) {
                    // Insert, then delete of the same value: nothing happened this epoch.
                    (KeyOp::Insert(v), KeyOp::Delete(old)) if v == old => None,
                    (KeyOp::Insert(v), KeyOp::Update(old, new)) if v == old => {
                        Some(KeyOp::Insert(new.clone()))
                    }
                    (KeyOp::Delete(old), KeyOp::Insert(new)) => {
                        Some(KeyOp::Update(old.clone(), new.clone()))
                    }
                    (KeyOp::Update(orig, v), KeyOp::Delete(old)) if v == old => {
                        Some(KeyOp::Delete(orig.clone()))
                    }
                    (KeyOp::Update(orig, v), KeyOp::Update(old, new)) if v == old => {
                        Some(KeyOp::Update(orig.clone(), new.clone()))
                    }
                    (prev, _) => return Err(err(Some(prev.clone()), &op, o.key())),
                };
                match next {
                    Some(next) => *o.get_mut() = next,
                    None => {
                        o.remove();
                    }
                }
                Ok(())
            }
        }
    }
}

fn op_size(op: &KeyOp) -> usize {
    match op {
        KeyOp::Insert(v) | KeyOp::Delete(v) => v.len(),
        KeyOp::Update(o, n) => o.len() + n.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn apply(m: &mut MemTable, op: KeyOp, lower: Option<&str>) -> StorageResult<()> {
        m.apply_consistent(TableId(1), b("k"), op, |_| lower.map(b))
    }

    /// Every transition of §3.3, legal and illegal.
    #[test]
    fn transitions() {
        use KeyOp::*;
        // (ops applied in order, value below the mem-table, expected final op or error at step)
        type Case = (
            Vec<KeyOp>,
            Option<&'static str>,
            Result<Option<KeyOp>, usize>,
        );
        let cases: Vec<Case> = vec![
            (vec![Insert(b("a"))], None, Ok(Some(Insert(b("a"))))),
            (vec![Insert(b("a"))], Some("x"), Err(0)),
            (vec![Delete(b("x"))], Some("x"), Ok(Some(Delete(b("x"))))),
            (vec![Delete(b("x"))], None, Err(0)),
            (vec![Delete(b("y"))], Some("x"), Err(0)),
            (
                vec![Update(b("x"), b("z"))],
                Some("x"),
                Ok(Some(Update(b("x"), b("z")))),
            ),
            (vec![Update(b("x"), b("z"))], None, Err(0)),
            (vec![Insert(b("a")), Insert(b("b"))], None, Err(1)),
            (vec![Insert(b("a")), Delete(b("a"))], None, Ok(None)),
            (vec![Insert(b("a")), Delete(b("b"))], None, Err(1)),
            (
                vec![Insert(b("a")), Update(b("a"), b("c"))],
                None,
                Ok(Some(Insert(b("c")))),
            ),
            (
                vec![Delete(b("x")), Insert(b("n"))],
                Some("x"),
                Ok(Some(Update(b("x"), b("n")))),
            ),
            (vec![Delete(b("x")), Delete(b("x"))], Some("x"), Err(1)),
            (
                vec![Delete(b("x")), Update(b("x"), b("n"))],
                Some("x"),
                Err(1),
            ),
            (
                vec![Update(b("x"), b("n")), Insert(b("q"))],
                Some("x"),
                Err(1),
            ),
            (
                vec![Update(b("x"), b("n")), Delete(b("n"))],
                Some("x"),
                Ok(Some(Delete(b("x")))),
            ),
            (
                vec![Update(b("x"), b("n")), Delete(b("x"))],
                Some("x"),
                Err(1),
            ),
            (
                vec![Update(b("x"), b("n")), Update(b("n"), b("m"))],
                Some("x"),
                Ok(Some(Update(b("x"), b("m")))),
            ),
        ];
        for (i, (ops, lower, expected)) in cases.into_iter().enumerate() {
            let mut m = MemTable::default();
            let mut failed_at = None;
            for (step, op) in ops.into_iter().enumerate() {
                if let Err(e) = apply(&mut m, op, lower) {
                    assert!(matches!(e, StorageError::InconsistentOperation(_)));
                    failed_at = Some(step);
                    break;
                }
            }
            match expected {
                Ok(op) => {
                    assert_eq!(failed_at, None, "case {i}");
                    assert_eq!(m.get(b"k").cloned(), op, "case {i}");
                }
                Err(step) => assert_eq!(failed_at, Some(step), "case {i}"),
            }
        }
    }

    #[test]
    fn error_message_names_the_transition() {
        let mut m = MemTable::default();
        let e = apply(&mut m, KeyOp::Update(b("x"), b("y")), None).unwrap_err();
        assert!(
            e.to_string().contains("prev: None, new: Update(1B -> 1B)"),
            "{e}"
        );
    }

    #[test]
    fn inconsistent_mode_last_write_wins() {
        let mut m = MemTable::default();
        m.apply_inconsistent(b("k"), KeyOp::Insert(b("a")));
        m.apply_inconsistent(b("k"), KeyOp::Insert(b("b")));
        assert_eq!(m.get(b"k"), Some(&KeyOp::Insert(b("b"))));
        assert_eq!(m.drain().len(), 1);
        assert!(!m.is_dirty());
    }
}
