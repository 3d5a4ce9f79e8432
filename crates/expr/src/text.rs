//! Text in: values read from strings for casts from varchar, with RisingWave's "Parse error: ..." wording.
//! The reading itself is the types' ([`ScalarImpl::from_text`]); this only words the error.

use epochlab_common::types::ParseError;
use epochlab_common::{DataType, ScalarImpl};

use crate::error::{ExprError, Result};

/// `s` read as a value of `to`.
pub fn from_text(s: &str, to: &DataType) -> Result<ScalarImpl> {
    ScalarImpl::from_text(s, to).map_err(|e| match e {
        // Numbers name their type already; booleans are worded alone.
        ParseError::Number { .. } | ParseError::Bool => ExprError::parse(e.to_string()),
        other => ExprError::parse(format!("{to} {other}")),
    })
}
