//! Text in: values read from strings for casts from varchar, with RisingWave's "Parse error: ..." wording.
//! The reading itself is the types' (`ScalarImpl::from_text`); this only words the error.

use epochlab_common::{DataType, ScalarImpl};

use crate::error::{ExprError, Result};

/// `s` read as a value of `to`.
pub fn from_text(s: &str, to: &DataType) -> Result<ScalarImpl> {
    let t = s.trim();
    let bad = |reason: String| ExprError::parse(format!("{} {reason}", crate::sig::type_name(to)));
    Ok(match to {
        DataType::Varchar => ScalarImpl::Utf8(s.into()),
        DataType::Boolean => {
            ScalarImpl::Bool(str_to_bool(t).ok_or_else(|| ExprError::parse("Invalid bool"))?)
        }
        DataType::Int16 => ScalarImpl::Int16(t.parse().map_err(|e| bad(format!("{e}")))?),
        DataType::Int32 => ScalarImpl::Int32(t.parse().map_err(|e| bad(format!("{e}")))?),
        DataType::Int64 => ScalarImpl::Int64(t.parse().map_err(|e| bad(format!("{e}")))?),
        DataType::Float64 => {
            ScalarImpl::Float64(t.parse::<f64>().map_err(|e| bad(format!("{e}")))?.into())
        }
        DataType::Float32 => {
            ScalarImpl::Float32(t.parse::<f32>().map_err(|e| bad(format!("{e}")))?.into())
        }
        DataType::Decimal => ScalarImpl::Decimal(
            t.parse::<rust_decimal::Decimal>()
                .map_err(|e| bad(format!("{e}")))?
                .into(),
        ),
        other => return Err(ExprError::UnsupportedCast(DataType::Varchar, other.clone())),
    })
}

/// PostgreSQL's boolean spellings: any prefix of true/false/yes/no, on/off, 1/0, case-insensitively.
fn str_to_bool(s: &str) -> Option<bool> {
    let l = s.to_ascii_lowercase();
    let prefix_of = |word: &str| !l.is_empty() && word.starts_with(l.as_str());
    if prefix_of("true") || prefix_of("yes") || l == "on" || l == "1" {
        Some(true)
    } else if prefix_of("false") || prefix_of("no") || l == "off" || l == "of" || l == "0" {
        Some(false)
    } else {
        None
    }
}
