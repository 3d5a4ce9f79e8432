//! `struct<...>` and arrays: the type of a struct, and the values of structs and lists (their datums in
//! order). Values compare element-wise, a NULL element after every value (PostgreSQL's record order).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use super::{DataType, Datum, cmp_datum};

/// The fields of a struct type, in order.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct StructType {
    fields: Vec<(String, DataType)>,
}

impl StructType {
    pub fn new(fields: Vec<(String, DataType)>) -> Self {
        Self { fields }
    }

    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub fn fields(&self) -> &[(String, DataType)] {
        &self.fields
    }

    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.fields.iter().map(|(n, _)| n.as_str())
    }

    pub fn types(&self) -> impl ExactSizeIterator<Item = &DataType> {
        self.fields.iter().map(|(_, t)| t)
    }

    /// The index and type of the field called `name`.
    pub fn field(&self, name: &str) -> Option<(usize, &DataType)> {
        self.fields
            .iter()
            .enumerate()
            .find_map(|(i, (n, t))| (n == name).then_some((i, t)))
    }
}

/// The value of a struct: one datum per field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructValue {
    fields: Box<[Datum]>,
}

/// The value of an array: its elements (the element type is the column's).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ListValue {
    values: Box<[Datum]>,
}

impl StructValue {
    pub fn new(fields: Vec<Datum>) -> Self {
        Self {
            fields: fields.into(),
        }
    }

    pub fn fields(&self) -> &[Datum] {
        &self.fields
    }
}

impl ListValue {
    pub fn new(values: Vec<Datum>) -> Self {
        Self {
            values: values.into(),
        }
    }

    pub fn values(&self) -> &[Datum] {
        &self.values
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

/// Element-wise, then the shorter first.
fn cmp_datums(a: &[Datum], b: &[Datum]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(x, y)| cmp_datum(x, y))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| a.len().cmp(&b.len()))
}

impl PartialOrd for StructValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for StructValue {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_datums(&self.fields, &other.fields)
    }
}

impl PartialOrd for ListValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ListValue {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_datums(&self.values, &other.values)
    }
}
