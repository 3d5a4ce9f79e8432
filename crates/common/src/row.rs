//! An owned row of datums.

use std::fmt;

use crate::types::Datum;

#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct OwnedRow(Vec<Datum>);

impl OwnedRow {
    pub fn new(datums: Vec<Datum>) -> Self {
        Self(datums)
    }

    pub fn empty() -> Self {
        Self(Vec::new())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn datum_at(&self, i: usize) -> &Datum {
        &self.0[i]
    }

    pub fn datums(&self) -> &[Datum] {
        &self.0
    }

    pub fn into_inner(self) -> Vec<Datum> {
        self.0
    }

    /// The datums at `indices`, in that order.
    pub fn project(&self, indices: &[usize]) -> OwnedRow {
        OwnedRow(indices.iter().map(|&i| self.0[i].clone()).collect())
    }

    pub fn chain(&self, other: &OwnedRow) -> OwnedRow {
        let mut v = self.0.clone();
        v.extend(other.0.iter().cloned());
        OwnedRow(v)
    }
}

/// Prints as a plain list, `[Some(Int16(0))]`, as RisingWave prints a row's datums.
impl fmt::Debug for OwnedRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl From<Vec<Datum>> for OwnedRow {
    fn from(v: Vec<Datum>) -> Self {
        Self(v)
    }
}

impl std::ops::Index<usize> for OwnedRow {
    type Output = Datum;
    fn index(&self, i: usize) -> &Datum {
        &self.0[i]
    }
}

/// Build a row from scalars: `row![1i64, "a", None::<i32>]`.
#[macro_export]
macro_rules! row {
    ($($e:expr),* $(,)?) => {
        $crate::OwnedRow::new(vec![$($crate::row::IntoDatum::into_datum($e)),*])
    };
}

/// Conversion used by [`row!`].
pub trait IntoDatum {
    fn into_datum(self) -> Datum;
}

macro_rules! impl_into_datum {
    ($($t:ty),*) => {$(
        impl IntoDatum for $t {
            fn into_datum(self) -> Datum {
                Some(self.into())
            }
        }
        impl IntoDatum for Option<$t> {
            fn into_datum(self) -> Datum {
                self.map(Into::into)
            }
        }
    )*};
}

impl_into_datum!(bool, i16, i32, i64, &str);

#[cfg(test)]
mod tests {
    #[test]
    fn debug_matches_the_original_log() {
        let pk = row![0i16];
        assert_eq!(format!("{pk:?}"), "[Some(Int16(0))]");
        let with_null = row![1i64, None::<i32>];
        assert_eq!(format!("{with_null:?}"), "[Some(Int64(1)), None]");
    }
}
