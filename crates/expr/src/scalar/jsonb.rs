//! jsonb access: `->` (JsonbAccess), `->>` (JsonbAccessStr) by object key or array index (negative counts
//! from the end), `jsonb_typeof`, `jsonb_array_length`. A missing key or index is NULL.

use epochlab_common::expr_node::ExprType;
use epochlab_common::types::JsonbVal;
use epochlab_common::{Datum, ScalarImpl};
use serde_json::Value;

use crate::error::{ExprError, Result};

fn element<'a>(v: &'a Value, path: &ScalarImpl) -> Option<&'a Value> {
    match (v, path) {
        (Value::Object(m), ScalarImpl::Utf8(k)) => m.get(k.as_ref()),
        (Value::Array(a), ScalarImpl::Int32(i)) => {
            let len = a.len() as i64;
            let i = i64::from(*i);
            let idx = if i < 0 { len + i } else { i };
            usize::try_from(idx).ok().and_then(|i| a.get(i))
        }
        _ => None,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The text `->>` gives: a string without its quotes, null as NULL, anything else as jsonb text.
fn as_text(v: &Value) -> Datum {
    match v {
        Value::Null => None,
        Value::String(s) => Some(ScalarImpl::Utf8(s.as_str().into())),
        other => Some(ScalarImpl::Utf8(
            JsonbVal::new(other.clone()).to_text().into(),
        )),
    }
}

pub fn call(func: ExprType, args: &[&ScalarImpl]) -> Result<Datum> {
    let ScalarImpl::Jsonb(j) = args[0] else {
        return Err(ExprError::InvalidState(format!(
            "expected jsonb, got {:?}",
            args[0]
        )));
    };
    let v = j.value();
    Ok(match (func, args) {
        (ExprType::JsonbAccess, [_, path]) => {
            element(v, path).map(|e| ScalarImpl::Jsonb(JsonbVal::new(e.clone())))
        }
        (ExprType::JsonbAccessStr, [_, path]) => element(v, path).and_then(as_text),
        (ExprType::JsonbTypeof, [_]) => Some(ScalarImpl::Utf8(type_name(v).into())),
        (ExprType::JsonbArrayLength, [_]) => match v {
            Value::Array(a) => Some(ScalarImpl::Int32(a.len() as i32)),
            other => {
                return Err(ExprError::invalid_param(
                    "jsonb",
                    format!("cannot get array length of a {}", type_name(other)),
                ));
            }
        },
        _ => return Err(ExprError::UnsupportedFunction(crate::sig::func_name(func))),
    })
}
