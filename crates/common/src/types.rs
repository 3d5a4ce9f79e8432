//! Datums: a nullable scalar of one of a few types. `Debug` prints like RisingWave's (`Some(Int16(0))`), so
//! that a missing-row error reads exactly as the original failure log: `row [Some(Int16(0))] not found`.

use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DataType {
    Boolean,
    Int16,
    Int32,
    Int64,
    Varchar,
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub enum ScalarImpl {
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Utf8(Box<str>),
}

pub type Datum = Option<ScalarImpl>;

impl ScalarImpl {
    pub fn as_int64(&self) -> Option<i64> {
        match self {
            ScalarImpl::Int64(v) => Some(*v),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            ScalarImpl::Bool(v) => Some(*v),
            _ => None,
        }
    }
}

impl fmt::Debug for ScalarImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarImpl::Bool(v) => f.debug_tuple("Bool").field(v).finish(),
            ScalarImpl::Int16(v) => f.debug_tuple("Int16").field(v).finish(),
            ScalarImpl::Int32(v) => f.debug_tuple("Int32").field(v).finish(),
            ScalarImpl::Int64(v) => f.debug_tuple("Int64").field(v).finish(),
            ScalarImpl::Utf8(v) => f.debug_tuple("Utf8").field(v).finish(),
        }
    }
}

impl fmt::Display for ScalarImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarImpl::Bool(v) => write!(f, "{v}"),
            ScalarImpl::Int16(v) => write!(f, "{v}"),
            ScalarImpl::Int32(v) => write!(f, "{v}"),
            ScalarImpl::Int64(v) => write!(f, "{v}"),
            ScalarImpl::Utf8(v) => write!(f, "{v}"),
        }
    }
}

/// The value order of two scalars of the same type; `None` across types.
pub fn cmp_scalar(a: &ScalarImpl, b: &ScalarImpl) -> Option<Ordering> {
    use ScalarImpl::*;
    Some(match (a, b) {
        (Bool(a), Bool(b)) => a.cmp(b),
        (Int16(a), Int16(b)) => a.cmp(b),
        (Int32(a), Int32(b)) => a.cmp(b),
        (Int64(a), Int64(b)) => a.cmp(b),
        (Utf8(a), Utf8(b)) => a.as_bytes().cmp(b.as_bytes()),
        _ => return None,
    })
}

impl From<i16> for ScalarImpl {
    fn from(v: i16) -> Self {
        ScalarImpl::Int16(v)
    }
}
impl From<i32> for ScalarImpl {
    fn from(v: i32) -> Self {
        ScalarImpl::Int32(v)
    }
}
impl From<i64> for ScalarImpl {
    fn from(v: i64) -> Self {
        ScalarImpl::Int64(v)
    }
}
impl From<bool> for ScalarImpl {
    fn from(v: bool) -> Self {
        ScalarImpl::Bool(v)
    }
}
impl From<&str> for ScalarImpl {
    fn from(v: &str) -> Self {
        ScalarImpl::Utf8(v.into())
    }
}
