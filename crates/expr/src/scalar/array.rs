//! Arrays and structs: the `ARRAY[...]` and `ROW(...)` constructors, subscripts, `array_length`,
//! `cardinality`, `array_to_string`, concatenation, `@>`, and struct field access.

use epochlab_common::expr_node::{ExprNode, ExprType};
use epochlab_common::types::{ListValue, StructType, StructValue};
use epochlab_common::{DataType, Datum, ScalarImpl};

use crate::cast::{self, CastContext, build_cast, is_untyped};
use crate::error::{ExprError, Result};

/// Whether `func`'s builder gives each argument after the array its own type (a delimiter is text, an
/// appended element the array's element type, a subscript an integer), as PostgreSQL's `anyarray, text` and
/// `anyarray, anyelement` signatures do: an unknown-typed literal there must not take the array's type. The
/// jsonb access operators `->` and `->>` likewise take a text key or an integer index, never a jsonb.
pub fn types_its_own_arguments(func: ExprType) -> bool {
    use ExprType::*;
    matches!(
        func,
        ArrayToString | ArrayAppend | ArrayPrepend | ArrayAccess | JsonbAccess | JsonbAccessStr
    )
}

fn elem_type(e: &ExprNode) -> Option<DataType> {
    match e.return_type() {
        DataType::List(t) if !is_untyped(e) => Some(*t),
        _ => None,
    }
}

fn no_overload(func: ExprType, args: &[ExprNode]) -> ExprError {
    ExprError::NoSuchOverload {
        func: crate::sig::func_name(func),
        args: args
            .iter()
            .map(|a| crate::sig::type_name(&a.return_type()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn call(func: ExprType, args: Vec<ExprNode>, ret: DataType) -> ExprNode {
    ExprNode::Call { func, args, ret }
}

/// Typing of the array and struct functions.
pub fn build(func: ExprType, mut args: Vec<ExprNode>) -> Result<ExprNode> {
    use ExprType::*;
    let list = |t: DataType| DataType::List(Box::new(t));
    match (func, args.len()) {
        (Array, _) => {
            let t = cast::align_types(&mut args)?;
            Ok(call(func, args, list(t)))
        }
        (Row, _) => {
            let fields = args
                .iter()
                .enumerate()
                .map(|(i, a)| (format!("f{}", i + 1), a.return_type()))
                .collect();
            Ok(call(func, args, DataType::Struct(StructType::new(fields))))
        }
        (ArrayAccess, 2) => {
            let t = elem_type(&args[0]).ok_or_else(|| no_overload(func, &args))?;
            let idx = build_cast(
                args.pop().expect("index"),
                DataType::Int32,
                CastContext::Implicit,
            )?;
            args.push(idx);
            Ok(call(func, args, t))
        }
        (ArrayLength | Cardinality, 1) => {
            elem_type(&args[0]).ok_or_else(|| no_overload(func, &args))?;
            Ok(call(func, args, DataType::Int32))
        }
        (ArrayToString, 2 | 3) => {
            elem_type(&args[0]).ok_or_else(|| no_overload(func, &args))?;
            let rest: Vec<ExprNode> = args.drain(1..).collect();
            for a in rest {
                args.push(build_cast(a, DataType::Varchar, CastContext::Implicit)?);
            }
            Ok(call(func, args, DataType::Varchar))
        }
        (ArrayCat, 2) => array_cat(args),
        (ArrayAppend, 2) => {
            let t = elem_type(&args[0]).ok_or_else(|| no_overload(func, &args))?;
            let e = build_cast(
                args.pop().expect("element"),
                t.clone(),
                CastContext::Implicit,
            )?;
            args.push(e);
            Ok(call(func, args, list(t)))
        }
        (ArrayPrepend, 2) => {
            let t = elem_type(&args[1]).ok_or_else(|| no_overload(func, &args))?;
            let e = build_cast(args.remove(0), t.clone(), CastContext::Implicit)?;
            args.insert(0, e);
            Ok(call(func, args, list(t)))
        }
        (ArrayContains, 2) => {
            cast::align_types(&mut args)?;
            Ok(call(func, args, DataType::Boolean))
        }
        (Field, 2) => field(args),
        _ => Err(no_overload(func, &args)),
    }
}

/// `a || b` with arrays: two arrays concatenate, an array and an element append or prepend.
fn array_cat(args: Vec<ExprNode>) -> Result<ExprNode> {
    let (l, r) = (elem_type(&args[0]), elem_type(&args[1]));
    match (l, r) {
        (Some(_), Some(_)) => {
            let mut args = args;
            let t = cast::align_types(&mut args)?;
            Ok(call(ExprType::ArrayCat, args, t))
        }
        (Some(_), None) => build(ExprType::ArrayAppend, args),
        (None, Some(_)) => build(ExprType::ArrayPrepend, args),
        (None, None) => Err(no_overload(ExprType::ArrayCat, &args)),
    }
}

/// `(s).name` is bound to `Field(s, index)` with a literal int32 index.
fn field(args: Vec<ExprNode>) -> Result<ExprNode> {
    let DataType::Struct(st) = args[0].return_type() else {
        return Err(no_overload(ExprType::Field, &args));
    };
    let Some(Some(ScalarImpl::Int32(i))) = args[1].as_literal() else {
        return Err(no_overload(ExprType::Field, &args));
    };
    let t = usize::try_from(*i)
        .ok()
        .and_then(|i| st.fields().get(i))
        .map(|(_, t)| t.clone());
    let t = t.ok_or_else(|| no_overload(ExprType::Field, &args))?;
    Ok(call(ExprType::Field, args, t))
}

fn list_of(v: &Datum) -> Option<&ListValue> {
    match v {
        Some(ScalarImpl::List(l)) => Some(l),
        _ => None,
    }
}

/// Evaluate an array or struct function on evaluated arguments.
pub fn call_values(func: ExprType, values: &[Datum]) -> Result<Datum> {
    use ExprType::*;
    let int = |v: &Datum| match v {
        Some(ScalarImpl::Int32(i)) => Some(*i),
        _ => None,
    };
    Ok(match (func, values) {
        (Array, _) => Some(ScalarImpl::List(ListValue::new(values.to_vec()))),
        (Row, _) => Some(ScalarImpl::Struct(StructValue::new(values.to_vec()))),
        (ArrayAccess, [l, i]) => match (list_of(l), int(i)) {
            (Some(l), Some(i)) if i >= 1 => l.values().get(i as usize - 1).cloned().flatten(),
            _ => None,
        },
        (ArrayLength, [l]) => list_of(l)
            .filter(|l| !l.is_empty())
            .map(|l| ScalarImpl::Int32(l.len() as i32)),
        (Cardinality, [l]) => list_of(l).map(|l| ScalarImpl::Int32(l.len() as i32)),
        (ArrayToString, [l, sep, rest @ ..]) => array_to_string(list_of(l), sep, rest.first())?,
        (ArrayCat, [a, b]) => match (list_of(a), list_of(b)) {
            (None, None) => None,
            (a, b) => {
                let mut v: Vec<Datum> = a.map(|l| l.values().to_vec()).unwrap_or_default();
                v.extend(b.map(|l| l.values().to_vec()).unwrap_or_default());
                Some(ScalarImpl::List(ListValue::new(v)))
            }
        },
        (ArrayAppend, [a, e]) => {
            let mut v: Vec<Datum> = list_of(a).map(|l| l.values().to_vec()).unwrap_or_default();
            v.push(e.clone());
            Some(ScalarImpl::List(ListValue::new(v)))
        }
        (ArrayPrepend, [e, a]) => {
            let mut v = vec![e.clone()];
            v.extend(list_of(a).map(|l| l.values().to_vec()).unwrap_or_default());
            Some(ScalarImpl::List(ListValue::new(v)))
        }
        (ArrayContains, [a, b]) => match (list_of(a), list_of(b)) {
            (Some(a), Some(b)) => Some(ScalarImpl::Bool(
                b.values()
                    .iter()
                    .all(|x| x.is_some() && a.values().contains(x)),
            )),
            _ => None,
        },
        (Field, [Some(ScalarImpl::Struct(s)), i]) => int(i)
            .and_then(|i| s.fields().get(i as usize).cloned())
            .flatten(),
        (Field, [None, _]) => None,
        _ => return Err(ExprError::UnsupportedFunction(crate::sig::func_name(func))),
    })
}

fn array_to_string(l: Option<&ListValue>, sep: &Datum, null_as: Option<&Datum>) -> Result<Datum> {
    let (Some(l), Some(ScalarImpl::Utf8(sep))) = (l, sep) else {
        return Ok(None);
    };
    let null_as = match null_as {
        Some(Some(ScalarImpl::Utf8(s))) => Some(s.as_ref()),
        _ => None,
    };
    let parts: Vec<String> = l
        .values()
        .iter()
        .filter_map(|v| match v {
            Some(v) => Some(v.to_string()),
            None => null_as.map(str::to_string),
        })
        .collect();
    Ok(Some(ScalarImpl::Utf8(parts.join(sep).into())))
}
