//! A source's connector as its executor runs it: the datagen connector (RisingWave's
//! `connector/src/source/datagen` and `common/src/field_generator`), read from a `CREATE SOURCE`'s `WITH`
//! options once, in the front end, and kept in the source's job.
//!
//! A datagen source has `datagen.split.num` splits (default 1). Split `i` of `n` makes rows at offsets
//! 0, 1, 2, ..; the row at offset `k` is a function of `(i, n, k)` only, so a split resumed at an offset
//! makes the rows it would have made. A sequence column is `start + i + n * k`, and the split ends at the
//! first row where it passes `end`; a random column is drawn from a generator seeded by `k ^ seed` (the
//! seed defaults to the split's index). Each split makes at most its share of `datagen.rows.per.second`
//! (default 10) a second.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::types::{F32, F64};
use crate::{DataType, Datum, ScalarImpl};

/// Why a datagen source's options were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatagenError {
    #[error("datagen: option {key} = '{value}' is not {want}")]
    BadOption {
        key: String,
        value: String,
        want: &'static str,
    },
    #[error("datagen: column {column}: start {start} is after end {end}")]
    EmptySequence {
        column: String,
        start: String,
        end: String,
    },
    #[error("datagen: column {column}: min {min} is above max {max}")]
    EmptyRange {
        column: String,
        min: String,
        max: String,
    },
    #[error("datagen: column {column} of type {ty}: no generator for this type here")]
    UnsupportedType { column: String, ty: String },
}

/// How one column of a datagen source gets its values.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum FieldGenerator {
    /// `fields.c.kind = 'sequence'`: `start + split + split_num * offset`, the split ending past `end`.
    Sequence { start: i64, end: i64 },
    /// A number drawn uniformly from `[min, max]` (integers of the column's width, or floats), the bounds
    /// kept as `f64::to_bits`.
    Random { min: u64, max: u64, seed: u64 },
    /// A string of `length` random letters and digits.
    Varchar { length: usize, seed: u64 },
    /// Not the connector's: a generated column or the row id, NULL until the job computes it.
    Skip,
}

/// A column the datagen connector fills.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DatagenField {
    pub ty: DataType,
    pub generator: FieldGenerator,
}

/// A datagen source: its columns (the source's stored row) and its splits.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct DatagenSpec {
    pub fields: Vec<DatagenField>,
    pub rows_per_second: u64,
    pub split_num: u32,
}

/// A column as the connector sees it: its name, type, and whether the job computes it instead.
pub struct SourceColumn<'a> {
    pub name: &'a str,
    pub ty: &'a DataType,
    pub skip: bool,
}

fn parse<T: std::str::FromStr>(
    options: &BTreeMap<String, String>,
    key: &str,
    want: &'static str,
) -> Result<Option<T>, DatagenError> {
    match options.get(key) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| DatagenError::BadOption {
                key: key.to_string(),
                value: v.clone(),
                want,
            }),
    }
}

impl DatagenSpec {
    /// The spec of `options` (keys lower-cased, values unquoted) for `columns`, as RisingWave's
    /// `DatagenProperties` and `generator_from_data_type` read them.
    pub fn from_options(
        columns: &[SourceColumn<'_>],
        options: &BTreeMap<String, String>,
    ) -> Result<Self, DatagenError> {
        let rows_per_second = parse(options, "datagen.rows.per.second", "a number")?.unwrap_or(10);
        let split_num: u32 = parse(options, "datagen.split.num", "a number")?.unwrap_or(1);
        if split_num == 0 {
            return Err(DatagenError::BadOption {
                key: "datagen.split.num".into(),
                value: "0".into(),
                want: "a positive number",
            });
        }
        let fields = columns
            .iter()
            .map(|c| {
                let generator = match c.skip {
                    true => FieldGenerator::Skip,
                    false => field_generator(c, options)?,
                };
                Ok(DatagenField {
                    ty: c.ty.clone(),
                    generator,
                })
            })
            .collect::<Result<_, DatagenError>>()?;
        Ok(Self {
            fields,
            rows_per_second,
            split_num,
        })
    }

    /// The rows split `split` makes a second (RisingWave's `partition_rows_per_second`).
    pub fn split_rows_per_second(&self, split: u32) -> u64 {
        let n = u64::from(self.split_num);
        let extra = u64::from(self.rows_per_second % n > u64::from(split));
        self.rows_per_second / n + extra
    }

    /// The row split `split` makes at `offset`; `None` once a sequence column has passed its end (the split
    /// is done).
    pub fn row(&self, split: u32, offset: u64) -> Option<Vec<Datum>> {
        self.fields
            .iter()
            .map(|f| f.datum(split, self.split_num, offset))
            .collect()
    }
}

fn field_generator(
    c: &SourceColumn<'_>,
    options: &BTreeMap<String, String>,
) -> Result<FieldGenerator, DatagenError> {
    let key = |k: &str| format!("fields.{}.{k}", c.name);
    let unsupported = || DatagenError::UnsupportedType {
        column: c.name.to_string(),
        ty: c.ty.to_string(),
    };
    let seed: u64 = parse(options, &key("seed"), "a number")?.unwrap_or(0);
    let numeric = matches!(
        c.ty,
        DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Float32 | DataType::Float64
    );
    if *c.ty == DataType::Varchar {
        let length = parse(options, &key("length"), "a number")?.unwrap_or(10);
        return Ok(FieldGenerator::Varchar { length, seed });
    }
    if !numeric {
        return Err(unsupported());
    }
    let sequence = options
        .get(&key("kind"))
        .is_some_and(|k| k.eq_ignore_ascii_case("sequence"));
    if sequence {
        let start: i64 = parse(options, &key("start"), "an integer")?.unwrap_or(0);
        let end: i64 = parse(options, &key("end"), "an integer")?.unwrap_or(i64::from(i16::MAX));
        if start > end {
            let (start, end) = (start.to_string(), end.to_string());
            let column = c.name.to_string();
            return Err(DatagenError::EmptySequence { column, start, end });
        }
        return Ok(FieldGenerator::Sequence { start, end });
    }
    let min: f64 = parse(options, &key("min"), "a number")?.unwrap_or(0.0);
    let max: f64 = parse(options, &key("max"), "a number")?.unwrap_or(f64::from(i16::MAX));
    if min > max {
        let (min, max) = (min.to_string(), max.to_string());
        return Err(DatagenError::EmptyRange {
            column: c.name.to_string(),
            min,
            max,
        });
    }
    Ok(FieldGenerator::Random {
        min: min.to_bits(),
        max: max.to_bits(),
        seed,
    })
}

/// SplitMix64: a well-mixed 64-bit value of `x`, the same everywhere (the random columns' generator).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl DatagenField {
    /// The field at `offset` of split `split` of `split_num`: `Some(NULL)` for a skipped column, `None` when
    /// a sequence has passed its end.
    fn datum(&self, split: u32, split_num: u32, offset: u64) -> Option<Datum> {
        let seed_of = |seed: u64| mix(offset ^ (seed ^ u64::from(split)));
        match &self.generator {
            FieldGenerator::Skip => Some(None),
            FieldGenerator::Sequence { start, end } => {
                let step = i128::from(split_num) * i128::from(offset);
                let v = i128::from(*start) + i128::from(split) + step;
                (v <= i128::from(*end)).then(|| number(&self.ty, v as f64, v as i64))
            }
            FieldGenerator::Random { min, max, seed } => {
                let (min, max) = (f64::from_bits(*min), f64::from_bits(*max));
                let r = seed_of(*seed);
                let v = match self.ty {
                    DataType::Float32 | DataType::Float64 => {
                        min + (max - min) * ((r >> 11) as f64 / (1u64 << 53) as f64)
                    }
                    _ => {
                        let (lo, hi) = (min.ceil() as i128, max.floor() as i128);
                        (lo + (r as i128).rem_euclid(hi - lo + 1)) as f64
                    }
                };
                Some(number(&self.ty, v, v as i64))
            }
            FieldGenerator::Varchar { length, seed } => {
                const ALPHABET: &[u8] =
                    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
                let mut state = seed_of(*seed);
                let s: String = (0..*length)
                    .map(|_| {
                        state = mix(state);
                        ALPHABET[(state % ALPHABET.len() as u64) as usize] as char
                    })
                    .collect();
                Some(Some(ScalarImpl::Utf8(s.into())))
            }
        }
    }
}

/// `v` (or `i`, exactly) as a value of the numeric type `ty`, saturated to its range.
fn number(ty: &DataType, v: f64, i: i64) -> Datum {
    Some(match ty {
        DataType::Int16 => ScalarImpl::Int16(i.clamp(i16::MIN.into(), i16::MAX.into()) as i16),
        DataType::Int32 => ScalarImpl::Int32(i.clamp(i32::MIN.into(), i32::MAX.into()) as i32),
        DataType::Int64 => ScalarImpl::Int64(i),
        DataType::Float32 => ScalarImpl::Float32(F32::from(v as f32)),
        DataType::Float64 => ScalarImpl::Float64(F64::from(v)),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn col<'a>(name: &'a str, ty: &'a DataType) -> SourceColumn<'a> {
        SourceColumn {
            name,
            ty,
            skip: false,
        }
    }

    #[test]
    fn sequence_splits_interleave_and_end() {
        let int = DataType::Int32;
        let o = opts(&[
            ("fields.v.kind", "sequence"),
            ("fields.v.start", "1"),
            ("fields.v.end", "5"),
            ("datagen.split.num", "2"),
            ("datagen.rows.per.second", "3"),
        ]);
        let spec = DatagenSpec::from_options(&[col("v", &int)], &o).unwrap();
        let v = |split, k| spec.row(split, k).map(|r| r[0].clone());
        let i = |x| Some(Some(ScalarImpl::Int32(x)));
        assert_eq!(
            (v(0, 0), v(0, 1), v(0, 2), v(0, 3)),
            (i(1), i(3), i(5), None)
        );
        assert_eq!((v(1, 0), v(1, 1), v(1, 2)), (i(2), i(4), None));
        assert_eq!(
            (spec.split_rows_per_second(0), spec.split_rows_per_second(1)),
            (2, 1)
        );
    }

    #[test]
    fn random_is_a_function_of_the_offset_and_in_range() {
        let (int, text) = (DataType::Int16, DataType::Varchar);
        let o = opts(&[
            ("fields.a.min", "-3"),
            ("fields.a.max", "3"),
            ("fields.b.length", "4"),
        ]);
        let spec = DatagenSpec::from_options(&[col("a", &int), col("b", &text)], &o).unwrap();
        for k in 0..200 {
            let row = spec.row(0, k).unwrap();
            assert_eq!(row, spec.row(0, k).unwrap());
            let Some(ScalarImpl::Int16(a)) = row[0] else {
                panic!("an int16")
            };
            assert!((-3..=3).contains(&a));
            let Some(ScalarImpl::Utf8(b)) = &row[1] else {
                panic!("a string")
            };
            assert_eq!(b.len(), 4);
        }
    }

    #[test]
    fn bad_options_are_refused() {
        let (int, date) = (DataType::Int32, DataType::Date);
        let bad = opts(&[("datagen.rows.per.second", "fast")]);
        let err = DatagenSpec::from_options(&[col("v", &int)], &bad).unwrap_err();
        assert!(matches!(err, DatagenError::BadOption { .. }));
        let empty = opts(&[
            ("fields.v.kind", "sequence"),
            ("fields.v.start", "9"),
            ("fields.v.end", "1"),
        ]);
        let err = DatagenSpec::from_options(&[col("v", &int)], &empty).unwrap_err();
        assert!(matches!(err, DatagenError::EmptySequence { .. }));
        let err = DatagenSpec::from_options(&[col("d", &date)], &opts(&[])).unwrap_err();
        assert!(matches!(err, DatagenError::UnsupportedType { .. }));
    }
}
