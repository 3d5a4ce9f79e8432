//! String functions, with PostgreSQL's (and so RisingWave's) edge cases: positions count characters from 1,
//! `LIKE` escapes with a backslash by default.

use epochlab_common::expr_node::ExprType;
use epochlab_common::{Datum, ScalarImpl};

use crate::error::{ExprError, Result};

/// `format(fmt, args...)`: `%s` the value's text (NULL as empty), `%I` an identifier (quoted when it
/// needs), `%L` a literal (NULL unquoted), `%%` a percent sign.
fn format(fmt: &str, args: &[Datum]) -> Result<String> {
    let mut out = String::new();
    let mut next = args.iter();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let spec = chars
            .next()
            .ok_or_else(|| ExprError::invalid_param("format", "unterminated format specifier"))?;
        if spec == '%' {
            out.push('%');
            continue;
        }
        let arg = next.next().ok_or(ExprError::TooFewArguments)?;
        let text = arg
            .as_ref()
            .map(|v| str_of(v).map(str::to_string))
            .transpose()?;
        match (spec, text) {
            ('s', t) => out.push_str(t.as_deref().unwrap_or("")),
            ('I', Some(t)) => out.push_str(&quote_ident(&t)),
            ('I', None) => {
                return Err(ExprError::invalid_param(
                    "format",
                    "null values cannot be formatted as an SQL identifier",
                ));
            }
            ('L', Some(t)) => out.push_str(&format!("'{}'", t.replace('\'', "''"))),
            ('L', None) => out.push_str("NULL"),
            (other, _) => {
                return Err(ExprError::invalid_param(
                    "format",
                    format!("unrecognized format() type specifier \"{other}\""),
                ));
            }
        }
    }
    Ok(out)
}

fn quote_ident(s: &str) -> String {
    let plain = s
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn md5_hex(s: &str) -> String {
    use md5::{Digest, Md5};
    Md5::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A PostgreSQL regular expression as a Rust one; flags `i` (case-insensitive) and `g` (global, used by
/// the caller) are accepted.
fn compile(pattern: &str, flags: Option<&str>) -> Result<regex::Regex> {
    let flags = flags.unwrap_or("");
    if let Some(bad) = flags.chars().find(|c| !matches!(c, 'i' | 'g' | 'c')) {
        return Err(ExprError::invalid_param(
            "flags",
            format!("invalid regular expression option: \"{bad}\""),
        ));
    }
    let insensitive = flags.contains('i');
    let key = (pattern.to_string(), insensitive);
    if let Some(re) = REGEX_CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(re);
    }
    let re = regex::RegexBuilder::new(pattern)
        .case_insensitive(insensitive)
        .build()
        .map_err(|e| {
            ExprError::invalid_param("pattern", format!("invalid regular expression: {e}"))
        })?;
    REGEX_CACHE.with(|c| {
        let mut c = c.borrow_mut();
        // Bounded: patterns are usually literals, so a handful per query; start over when full.
        if c.len() >= REGEX_CACHE_CAPACITY {
            c.clear();
        }
        c.insert(key, re.clone());
    });
    Ok(re)
}

const REGEX_CACHE_CAPACITY: usize = 64;

thread_local! {
    /// Compiled patterns by (pattern, case-insensitive): evaluation is per row, compiling is not cheap.
    static REGEX_CACHE: std::cell::RefCell<std::collections::BTreeMap<(String, bool), regex::Regex>> =
        const { std::cell::RefCell::new(std::collections::BTreeMap::new()) };
}

/// A match's capture groups (the whole match when the pattern has none), as a `varchar[]`.
fn match_groups(caps: &regex::Captures<'_>) -> ScalarImpl {
    let groups: Vec<Datum> = if caps.len() == 1 {
        vec![caps.get(0).map(|m| text(m.as_str()))]
    } else {
        (1..caps.len())
            .map(|i| caps.get(i).map(|m| text(m.as_str())))
            .collect()
    };
    ScalarImpl::List(epochlab_common::types::ListValue::new(groups))
}

/// `regexp_matches` (a table function): the groups of every match with flag `g`, else of the first.
pub(crate) fn regexp_matches(s: &str, pattern: &str, flags: Option<&str>) -> Result<Vec<Datum>> {
    let re = compile(pattern, flags)?;
    let global = flags.is_some_and(|f| f.contains('g'));
    let mut out: Vec<Datum> = Vec::new();
    for caps in re.captures_iter(s) {
        out.push(Some(match_groups(&caps)));
        if !global {
            break;
        }
    }
    Ok(out)
}

/// The capture groups of the first match (the whole match when there are none); NULL without a match.
fn regexp_match(s: &str, pattern: &str, flags: Option<&str>) -> Result<Datum> {
    let re = compile(pattern, flags)?;
    let Some(caps) = re.captures(s) else {
        return Ok(None);
    };
    let groups: Vec<Datum> = if caps.len() == 1 {
        vec![caps.get(0).map(|m| text(m.as_str()))]
    } else {
        (1..caps.len())
            .map(|i| caps.get(i).map(|m| text(m.as_str())))
            .collect()
    };
    Ok(Some(ScalarImpl::List(
        epochlab_common::types::ListValue::new(groups),
    )))
}

/// `regexp_replace`: the first match, or every match with flag `g`; `\1` in the replacement is a group.
fn regexp_replace(s: &str, pattern: &str, rep: &str, flags: Option<&str>) -> Result<String> {
    let re = compile(pattern, flags)?;
    let mut rust_rep = String::with_capacity(rep.len());
    let mut chars = rep.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some(d)) if d.is_ascii_digit() => {
                rust_rep.push_str(&format!("${{{d}}}"));
                chars.next();
            }
            ('\\', Some('&')) => {
                rust_rep.push_str("${0}");
                chars.next();
            }
            ('$', _) => rust_rep.push_str("$$"),
            (c, _) => rust_rep.push(c),
        }
    }
    let global = flags.is_some_and(|f| f.contains('g'));
    let limit = if global { 0 } else { 1 };
    Ok(re.replacen(s, limit, rust_rep.as_str()).into_owned())
}

pub fn call(func: ExprType, values: &[Datum]) -> Result<Datum> {
    match func {
        ExprType::Concat => Ok(Some(text(concat_skipping_nulls("", values)?))),
        ExprType::ConcatWs => match values.split_first() {
            Some((Some(sep), rest)) => Ok(Some(text(concat_skipping_nulls(str_of(sep)?, rest)?))),
            _ => Ok(None),
        },
        ExprType::Format => match values.split_first() {
            Some((Some(f), rest)) => format(str_of(f)?, rest).map(|s| Some(text(s))),
            _ => Ok(None),
        },
        ExprType::RegexpMatch => {
            let strs: Vec<&str> = values.iter().flatten().map(str_of).collect::<Result<_>>()?;
            regexp_match(strs[0], strs[1], strs.get(2).copied())
        }
        ExprType::Length | ExprType::OctetLength
            if matches!(values, [Some(ScalarImpl::Bytea(_))]) =>
        {
            let Some(ScalarImpl::Bytea(b)) = &values[0] else {
                unreachable!("matched a bytea")
            };
            Ok(Some(ScalarImpl::Int32(
                i32::try_from(b.len()).unwrap_or(i32::MAX),
            )))
        }
        _ => {
            let strs = values
                .iter()
                .map(|v| v.as_ref().expect("strict call with a NULL argument"))
                .collect::<Vec<_>>();
            strict_call(func, &strs).map(Some)
        }
    }
}

fn text(s: impl Into<Box<str>>) -> ScalarImpl {
    ScalarImpl::Utf8(s.into())
}

pub(crate) fn str_of(v: &ScalarImpl) -> Result<&str> {
    match v {
        ScalarImpl::Utf8(s) => Ok(s),
        other => Err(ExprError::InvalidState(format!(
            "expected a string, got {other:?}"
        ))),
    }
}

fn int_of(v: &ScalarImpl) -> Result<i64> {
    match v {
        ScalarImpl::Int16(i) => Ok(i64::from(*i)),
        ScalarImpl::Int32(i) => Ok(i64::from(*i)),
        ScalarImpl::Int64(i) => Ok(*i),
        other => Err(ExprError::InvalidState(format!(
            "expected an integer, got {other:?}"
        ))),
    }
}

fn concat_skipping_nulls(sep: &str, values: &[Datum]) -> Result<String> {
    let parts = values
        .iter()
        .flatten()
        .map(str_of)
        .collect::<Result<Vec<_>>>()?;
    Ok(parts.join(sep))
}

fn strict_call(func: ExprType, a: &[&ScalarImpl]) -> Result<ScalarImpl> {
    use ExprType::*;
    let s = |i: usize| str_of(a[i]);
    let n = |i: usize| int_of(a[i]);
    let count = |x: usize| ScalarImpl::Int32(i32::try_from(x).unwrap_or(i32::MAX));
    Ok(match (func, a.len()) {
        (ConcatOp, 2) => text(format!("{}{}", s(0)?, s(1)?)),
        (Lower, 1) => text(s(0)?.to_lowercase()),
        (Upper, 1) => text(s(0)?.to_uppercase()),
        (Length | CharLength, 1) => count(s(0)?.chars().count()),
        (OctetLength, 1) => count(s(0)?.len()),
        (Substr, 2) => text(substr(s(0)?, n(1)?, None)?),
        (Substr, 3) => text(substr(s(0)?, n(1)?, Some(n(2)?))?),
        (Trim, 1) => text(s(0)?.trim_matches(' ')),
        (Ltrim, 1) => text(s(0)?.trim_start_matches(' ')),
        (Rtrim, 1) => text(s(0)?.trim_end_matches(' ')),
        (Trim | Ltrim | Rtrim, 2) => text(trim_chars(func, s(0)?, s(1)?)),
        (Replace, 3) => text(replace(s(0)?, s(1)?, s(2)?)),
        (Position, 2) => count(position(s(0)?, s(1)?)),
        (SplitPart, 3) => text(split_part(s(0)?, s(1)?, n(2)?)?),
        (Left, 2) => text(left(s(0)?, n(1)?)),
        (Right, 2) => text(right(s(0)?, n(1)?)),
        (Repeat, 2) => text(s(0)?.repeat(usize::try_from(n(1)?).unwrap_or(0))),
        (Reverse, 1) => text(s(0)?.chars().rev().collect::<String>()),
        (Lpad | Rpad, 2) => text(pad(func, s(0)?, n(1)?, " ")),
        (Lpad | Rpad, 3) => text(pad(func, s(0)?, n(1)?, s(2)?)),
        (Initcap, 1) => text(initcap(s(0)?)),
        (Ascii, 1) => ScalarImpl::Int32(s(0)?.chars().next().map_or(0, |c| c as i32)),
        (Chr, 1) => text(chr(n(0)?)?),
        (StartsWith, 2) => ScalarImpl::Bool(s(0)?.starts_with(s(1)?)),
        (Translate, 3) => text(translate(s(0)?, s(1)?, s(2)?)),
        (Md5, 1) => text(md5_hex(s(0)?)),
        (RegexpReplace, 3 | 4) => text(regexp_replace(
            s(0)?,
            s(1)?,
            s(2)?,
            a.get(3).map(|f| str_of(f)).transpose()?,
        )?),
        (RegexpCount, 2) => count(compile(s(1)?, None)?.find_iter(s(0)?).count()),
        (Like | ILike, 2) => ScalarImpl::Bool(like(func, s(0)?, s(1)?, Some('\\'))),
        (Like | ILike, 3) => ScalarImpl::Bool(like(func, s(0)?, s(1)?, s(2)?.chars().next())),
        _ => return Err(super::no_overload(func, a)),
    })
}

/// `substr(s, start [, count])`: characters from 1-based `start`; positions before 1 eat into `count`.
fn substr(s: &str, start: i64, count: Option<i64>) -> Result<String> {
    let end = match count {
        Some(c) if c < 0 => {
            return Err(ExprError::invalid_param(
                "length",
                "negative substring length not allowed",
            ));
        }
        Some(c) => start.saturating_add(c),
        None => i64::MAX,
    };
    let from = start.max(1);
    if end <= from {
        return Ok(String::new());
    }
    let skip = usize::try_from(from - 1).unwrap_or(usize::MAX);
    let take = usize::try_from(end - from).unwrap_or(usize::MAX);
    Ok(s.chars().skip(skip).take(take).collect())
}

fn trim_chars(func: ExprType, s: &str, chars: &str) -> String {
    let set = |c: char| chars.contains(c);
    match func {
        ExprType::Ltrim => s.trim_start_matches(set),
        ExprType::Rtrim => s.trim_end_matches(set),
        _ => s.trim_matches(set),
    }
    .to_string()
}

fn replace(s: &str, from: &str, to: &str) -> String {
    if from.is_empty() {
        s.to_string()
    } else {
        s.replace(from, to)
    }
}

/// 1-based character position of `sub` in `s`, 0 when absent.
fn position(s: &str, sub: &str) -> usize {
    s.find(sub).map_or(0, |byte| s[..byte].chars().count() + 1)
}

fn split_part(s: &str, delim: &str, n: i64) -> Result<String> {
    if n == 0 {
        return Err(ExprError::invalid_param(
            "n",
            "field position must not be zero",
        ));
    }
    let parts: Vec<&str> = if delim.is_empty() {
        vec![s]
    } else {
        s.split(delim).collect()
    };
    let idx = if n > 0 {
        usize::try_from(n - 1).ok()
    } else {
        usize::try_from(-n)
            .ok()
            .and_then(|k| parts.len().checked_sub(k))
    };
    Ok(idx
        .and_then(|i| parts.get(i))
        .copied()
        .unwrap_or("")
        .to_string())
}

fn left(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) };
    s.chars().take(keep as usize).collect()
}

fn right(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) };
    s.chars().skip((len - keep) as usize).collect()
}

/// `lpad`/`rpad` to `len` characters; a longer string is cut to `len`.
fn pad(func: ExprType, s: &str, len: i64, fill: &str) -> String {
    let len = usize::try_from(len).unwrap_or(0);
    let chars: Vec<char> = s.chars().collect();
    if chars.len() >= len || fill.is_empty() {
        return chars.into_iter().take(len).collect();
    }
    let padding: String = fill.chars().cycle().take(len - chars.len()).collect();
    match func {
        ExprType::Lpad => padding + s,
        _ => s.to_string() + &padding,
    }
}

fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for c in s.chars() {
        if in_word {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        in_word = c.is_alphanumeric();
    }
    out
}

fn chr(code: i64) -> Result<String> {
    let c = u32::try_from(code)
        .ok()
        .filter(|&c| c != 0)
        .and_then(char::from_u32);
    c.map(String::from).ok_or_else(|| {
        ExprError::invalid_param("value", format!("{code} is not a valid character code"))
    })
}

fn translate(s: &str, from: &str, to: &str) -> String {
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.chars().position(|f| f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

/// `s LIKE pattern`: `%` any run, `_` one byte, `escape` makes the next byte literal. Like RisingWave's,
/// matching is by bytes and ILIKE folds ASCII letters only.
pub fn like(func: ExprType, s: &str, pattern: &str, escape: Option<char>) -> bool {
    let fold = |x: &str| -> Vec<u8> {
        if func == ExprType::ILike {
            x.to_ascii_lowercase().into_bytes()
        } else {
            x.as_bytes().to_vec()
        }
    };
    let escape = escape.filter(char::is_ascii).map(|c| {
        let b = c as u8;
        if func == ExprType::ILike {
            b.to_ascii_lowercase()
        } else {
            b
        }
    });
    let tokens = like_tokens(&fold(pattern), escape);
    like_match(&fold(s), &tokens)
}

#[derive(Clone, Copy, PartialEq)]
enum LikeToken {
    Lit(u8),
    One,
    Any,
}

/// An escape at the very end of the pattern is a literal.
fn like_tokens(pattern: &[u8], escape: Option<u8>) -> Vec<LikeToken> {
    let mut out = Vec::with_capacity(pattern.len());
    let mut i = 0;
    while i < pattern.len() {
        let c = pattern[i];
        out.push(match c {
            c if Some(c) == escape && i + 1 < pattern.len() => {
                i += 1;
                LikeToken::Lit(pattern[i])
            }
            b'%' => LikeToken::Any,
            b'_' => LikeToken::One,
            c => LikeToken::Lit(c),
        });
        i += 1;
    }
    out
}

/// Greedy matching with backtracking to the last `%`.
fn like_match(s: &[u8], p: &[LikeToken]) -> bool {
    let (mut si, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(LikeToken::Any) => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(LikeToken::One) => (si, pi) = (si + 1, pi + 1),
            Some(LikeToken::Lit(c)) if *c == s[si] => (si, pi) = (si + 1, pi + 1),
            _ => match star {
                Some((sp, ss)) => {
                    (si, pi) = (ss + 1, sp + 1);
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|t| *t == LikeToken::Any)
}
