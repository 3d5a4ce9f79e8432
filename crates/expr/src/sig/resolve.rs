//! Choosing an overload as PostgreSQL (and RisingWave's binder) does, given the argument types, with
//! `None` for an untyped argument (a string literal or NULL):
//!
//! 1. a binary operator with one untyped side first tries the overload taking the other side's type twice;
//! 2. keep the overloads every typed argument casts to implicitly, with the most exact matches, then the
//!    most parameters of a preferred type (double precision, boolean, varchar, timestamptz, interval);
//! 3. for untyped arguments, prefer varchar if some overload takes it there, else the category all
//!    overloads agree on, preferring its preferred type;
//! 4. if the typed arguments share one type, prefer overloads the untyped ones can take as that type.

use epochlab_common::DataType;

use super::table::Sig;
use crate::cast::{CastContext, cast_ok};

static VARCHAR: DataType = DataType::Varchar;

fn is_preferred(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Float64
            | DataType::Boolean
            | DataType::Varchar
            | DataType::Timestamptz
            | DataType::Interval
    )
}

/// An implicit cast that changes the type (equal types do not count unless `eq_ok`).
fn implicit_ok(from: &DataType, to: &DataType, eq_ok: bool) -> bool {
    (eq_ok && from == to) || (from != to && cast_ok(from, to, CastContext::Implicit))
}

/// The one overload for `inputs`, or `Err(true)` when several tie, `Err(false)` when none fits.
pub fn resolve<'a>(sigs: &'a [Sig], inputs: &[Option<DataType>]) -> Result<&'a Sig, bool> {
    let sigs: Vec<&Sig> = sigs
        .iter()
        .filter(|s| s.params.len() == inputs.len())
        .collect();
    if let [Some(t), None] | [None, Some(t)] = inputs
        && let Some(s) = sigs.iter().find(|s| s.params.iter().all(|p| p == t))
    {
        return Ok(s);
    }
    let mut cands = top_matches(&sigs, inputs);
    if cands.is_empty() {
        return Err(false);
    }
    cands = narrow_category(cands, inputs);
    cands = narrow_same_type(cands, inputs);
    match cands[..] {
        [one] => Ok(one),
        _ => Err(true),
    }
}

fn top_matches<'a>(sigs: &[&'a Sig], inputs: &[Option<DataType>]) -> Vec<&'a Sig> {
    let mut best = (0, 0);
    let mut out = Vec::new();
    'sigs: for s in sigs {
        let (mut exact, mut preferred) = (0, 0);
        for (formal, actual) in s.params.iter().zip(inputs) {
            let Some(actual) = actual else { continue };
            if formal == actual {
                exact += 1;
            } else if !implicit_ok(actual, formal, false) {
                continue 'sigs;
            }
            if is_preferred(formal) {
                preferred += 1;
            }
        }
        if (exact, preferred) > best {
            best = (exact, preferred);
            out.clear();
        }
        if (exact, preferred) == best {
            out.push(*s);
        }
    }
    out
}

/// The type category an untyped position takes: `Ok(None)` for a typed position, `Err` when the
/// overloads disagree.
fn category_at<'a>(cands: &[&'a Sig], i: usize) -> Result<&'a DataType, ()> {
    let mut category: Result<&DataType, ()> = Ok(&cands[0].params[i]);
    for s in &cands[1..] {
        let formal = &s.params[i];
        if *formal == DataType::Varchar || category == Ok(&DataType::Varchar) {
            return Ok(&VARCHAR);
        }
        let Ok(selected) = category else { continue };
        if implicit_ok(formal, selected, true) {
            // keep the wider selection
        } else if implicit_ok(selected, formal, false) {
            category = Ok(formal);
        } else {
            category = Err(());
        }
    }
    category
}

fn narrow_category<'a>(cands: Vec<&'a Sig>, inputs: &[Option<DataType>]) -> Vec<&'a Sig> {
    let mut categories = Vec::with_capacity(inputs.len());
    for (i, actual) in inputs.iter().enumerate() {
        if actual.is_some() {
            categories.push(None);
            continue;
        }
        match category_at(&cands, i) {
            Ok(t) => categories.push(Some(t.clone())),
            Err(()) => return cands,
        }
    }
    let kept: Vec<&Sig> = cands
        .iter()
        .filter(|s| {
            s.params
                .iter()
                .zip(&categories)
                .all(|(formal, cat)| match cat {
                    None => true,
                    Some(sel) => {
                        formal == sel || (!is_preferred(sel) && implicit_ok(formal, sel, false))
                    }
                })
        })
        .copied()
        .collect();
    if kept.is_empty() { cands } else { kept }
}

fn narrow_same_type<'a>(cands: Vec<&'a Sig>, inputs: &[Option<DataType>]) -> Vec<&'a Sig> {
    let mut typed = inputs.iter().flatten();
    let Some(first) = typed.next() else {
        return cands;
    };
    if typed.any(|t| t != first) {
        return cands;
    }
    let kept: Vec<&Sig> = cands
        .iter()
        .filter(|s| {
            s.params
                .iter()
                .zip(inputs)
                .all(|(formal, actual)| actual.is_some() || implicit_ok(first, formal, true))
        })
        .copied()
        .collect();
    if kept.is_empty() { cands } else { kept }
}

#[cfg(test)]
mod tests {
    use DataType as T;

    use super::*;

    fn pick(cands: &[&[DataType]], inputs: &[Option<DataType>]) -> Result<Vec<DataType>, bool> {
        let sigs: Vec<Sig> = cands
            .iter()
            .map(|p| Sig {
                params: p.to_vec(),
                ret: T::Boolean,
            })
            .collect();
        resolve(&sigs, inputs).map(|s| s.params.clone())
    }

    /// The cases of RisingWave's `test_match_implicit` (type_inference/func.rs).
    #[test]
    fn resolution_rules_as_risingwave() {
        let (i, v, f, r, tz) = (T::Int32, T::Varchar, T::Float64, T::Float32, T::Timestamptz);
        // The binary rule prefers arguments of the same type.
        let c: &[&[T]] = &[
            &[i.clone(), i.clone()],
            &[i.clone(), v.clone()],
            &[i.clone(), f.clone()],
        ];
        assert_eq!(
            pick(c, &[Some(i.clone()), None]),
            Ok(vec![i.clone(), i.clone()])
        );
        // Without it, rule 4e selects varchar, else the preferred type.
        let c: &[&[T]] = &[
            &[i.clone(), i.clone(), i.clone()],
            &[i.clone(), i.clone(), v.clone()],
            &[i.clone(), i.clone(), f.clone()],
        ];
        assert_eq!(
            pick(c, &[Some(i.clone()), Some(i.clone()), None]),
            Ok(vec![i.clone(), i.clone(), v.clone()])
        );
        let c: &[&[T]] = &[
            &[i.clone(), i.clone(), i.clone()],
            &[i.clone(), i.clone(), f.clone()],
        ];
        assert_eq!(
            pick(c, &[Some(i.clone()), Some(i.clone()), None]),
            Ok(vec![i.clone(), i.clone(), f.clone()])
        );
        // Rule 4f treats exact and cast matches alike.
        let c: &[&[T]] = &[
            &[i.clone(), i.clone(), i.clone()],
            &[i.clone(), i.clone(), r.clone()],
        ];
        assert_eq!(
            pick(c, &[Some(i.clone()), Some(i.clone()), None]),
            Err(true)
        );
        // top_matches ranks by exact count, then preferred count.
        let c: &[&[T]] = &[
            &[f.clone(), f.clone(), f.clone(), tz.clone()],
            &[f.clone(), i.clone(), r.clone(), T::Timestamp],
            &[r.clone(), r.clone(), i.clone(), tz.clone()],
            &[i.clone(), f.clone(), r.clone(), tz.clone()],
            &[i.clone(), T::Int16, i.clone(), tz.clone()],
            &[i.clone(), f.clone(), r.clone(), T::Date],
        ];
        let inputs = [Some(i.clone()), Some(i.clone()), Some(i.clone()), None];
        assert_eq!(
            pick(c, &inputs),
            Ok(vec![i.clone(), f.clone(), r.clone(), tz.clone()])
        );
        // Rule 4e fails (or is empty) and rule 4f is unique.
        let c: &[&[T]] = &[
            &[i.clone(), i.clone(), T::Time],
            &[i.clone(), i.clone(), i.clone()],
        ];
        assert_eq!(
            pick(c, &[None, Some(i.clone()), None]),
            Ok(vec![i.clone(), i.clone(), i.clone()])
        );
        let c: &[&[T]] = &[
            &[i.clone(), i.clone(), v.clone()],
            &[i.clone(), i.clone(), i.clone()],
            &[v.clone(), i.clone(), i.clone()],
        ];
        assert_eq!(
            pick(c, &[None, Some(i.clone()), None]),
            Ok(vec![i.clone(), i.clone(), i.clone()])
        );
        // Rule 4e: varchar resolves an earlier category conflict.
        let c: &[&[T]] = &[
            &[i.clone(), i.clone(), r.clone()],
            &[T::Time, i.clone(), i.clone()],
            &[v.clone(), i.clone(), i.clone()],
        ];
        assert_eq!(
            pick(c, &[None, Some(i.clone()), None]),
            Ok(vec![v.clone(), i.clone(), i.clone()])
        );
        // Rule 4f fails.
        let c: &[&[T]] = &[
            &[r.clone(), r.clone(), r.clone(), r.clone()],
            &[T::Decimal, T::Decimal, T::Int64, T::Decimal],
        ];
        assert_eq!(
            pick(c, &[Some(T::Int16), Some(i.clone()), None, Some(T::Int64)]),
            Err(true)
        );
        assert_eq!(pick(c, &[None, None, None, None]), Err(true));
    }
}
