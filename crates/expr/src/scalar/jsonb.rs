//! jsonb access: `->` (JsonbAccess), `->>` (JsonbAccessStr) by object key or array index (negative counts
//! from the end), `jsonb_typeof`, `jsonb_array_length`. A missing key or index is NULL.

use epochlab_common::expr_node::ExprType;
use epochlab_common::types::JsonbVal;
use epochlab_common::{DataType, Datum, ScalarImpl};
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

/// A datum of type `ty` as a JSON value, as RisingWave's `to_jsonb` (`ToJsonb`) builds it: numbers as
/// numbers (a decimal through a double; a float's infinities and NaN as strings), a struct as an object
/// keyed by its field names, an array as an array, a timestamp as `date` `T` `time`, a timestamptz in
/// RFC 3339 at UTC, a jsonb as itself, every other value as its text.
pub fn to_jsonb(d: &Datum, ty: &DataType) -> Result<Value> {
    let Some(v) = d else { return Ok(Value::Null) };
    Ok(match (v, ty) {
        (ScalarImpl::Bool(b), _) => Value::Bool(*b),
        (ScalarImpl::Int16(i), _) => Value::from(i64::from(*i)),
        (ScalarImpl::Int32(i), _) => Value::from(i64::from(*i)),
        (ScalarImpl::Int64(i), _) => Value::from(*i),
        (ScalarImpl::Float32(f), _) => float(f64::from(f.0)),
        (ScalarImpl::Float64(f), _) => float(f.0),
        (ScalarImpl::Decimal(_), _) => match crate::cast::cast_value(v, &DataType::Float64)? {
            ScalarImpl::Float64(f) => float(f.0),
            _ => return Err(ExprError::CastOutOfRange("IEEE 754 double")),
        },
        (ScalarImpl::Utf8(s), _) => Value::String(s.to_string()),
        (ScalarImpl::Jsonb(j), _) => j.value().clone(),
        (ScalarImpl::Timestamp(_), _) => Value::String(v.to_string().replacen(' ', "T", 1)),
        (ScalarImpl::Timestamptz(t), _) => Value::String(match t.to_utc() {
            Some(utc) => format!("{}T{}+00:00", utc.date(), utc.time()),
            None => v.to_string(),
        }),
        (ScalarImpl::Struct(s), DataType::Struct(st)) => {
            let mut obj = serde_json::Map::new();
            for ((name, field_ty), field) in st.fields().iter().zip(s.fields()) {
                obj.insert(name.clone(), to_jsonb(field, field_ty)?);
            }
            Value::Object(obj)
        }
        (ScalarImpl::List(l), DataType::List(elem)) => Value::Array(
            l.values()
                .iter()
                .map(|e| to_jsonb(e, elem))
                .collect::<Result<_>>()?,
        ),
        _ => Value::String(v.to_string()),
    })
}

/// A double as RisingWave's jsonb builder adds it: its infinities and NaN as strings.
fn float(f: f64) -> Value {
    if f.is_nan() {
        Value::String("NaN".into())
    } else if f.is_infinite() {
        Value::String(if f > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        // An integral double is written as an integer, as its text is.
        let text = ScalarImpl::Float64(f.into()).to_string();
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    }
}
