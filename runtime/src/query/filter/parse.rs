//! Parsing a `<Type>Filter` value into a [`Cond`].

use async_graphql::Value;

use super::{CmpOp, Cond, LikeKind, Quant, outer_column, suffixes};
use crate::model::{FieldMeta, InputError, ModelMeta, Val};

/// Parses one filter object into a condition.
pub fn parse_filter(meta: &ModelMeta, value: &Value) -> Result<Cond, InputError> {
    let Value::Object(entries) = value else {
        return Err(InputError::NotAFilter(meta.filter_name));
    };
    let mut all = Vec::with_capacity(entries.len());
    for (key, v) in entries {
        let key = key.as_str();
        if key == "AND" || key == "OR" {
            let subs = match v {
                Value::List(items) => items
                    .iter()
                    .map(|it| parse_filter(meta, it))
                    .collect::<Result<Vec<_>, _>>()?,
                Value::Null => Vec::new(),
                single => vec![parse_filter(meta, single)?],
            };
            all.push(if key == "AND" {
                Cond::All(subs)
            } else if subs.is_empty() {
                // An empty `OR` contributes no condition.
                Cond::Const(true)
            } else {
                Cond::Any(subs)
            });
            continue;
        }
        let (name, suffix) = match key.find('_') {
            Some(i) => (&key[..i], &key[i..]),
            None => (key, ""),
        };
        if let Some(rel) = meta.relation_index(name) {
            all.push(parse_relation(meta, rel, suffix, v, key)?);
            continue;
        }
        let idx = meta
            .field_index(name)
            .filter(|&i| suffixes(&meta.fields[i]).contains(&suffix))
            .ok_or_else(|| InputError::UnknownFilterField(key.to_owned()))?;
        all.push(parse_key(&meta.fields[idx], idx, suffix, v)?);
    }
    Ok(match all.len() {
        1 => all.pop().unwrap_or(Cond::Const(true)),
        _ => Cond::All(all),
    })
}

/// `f: {…}` / `f: null` on a to-one field, `f_every/f_some/f_none` on a to-many field.
fn parse_relation(
    meta: &ModelMeta,
    rel: usize,
    suffix: &str,
    v: &Value,
    key: &str,
) -> Result<Cond, InputError> {
    let field = &meta.relations[rel];
    let quant = match (field.list, suffix) {
        (false, "") => Quant::Some,
        (true, "_some") => Quant::Some,
        (true, "_every") => Quant::Every,
        (true, "_none") => Quant::None,
        _ => return Err(InputError::UnknownFilterField(key.to_owned())),
    };
    if matches!(v, Value::Null) {
        return Ok(if field.list {
            Cond::NullToMany(field.name)
        } else {
            // No related node at all.
            Cond::Rel {
                rel,
                quant: Quant::None,
                cond: Box::new(Cond::Const(true)),
            }
        });
    }
    Ok(Cond::Rel {
        rel,
        quant,
        cond: Box::new(parse_filter(field.target, v)?),
    })
}

fn parse_key(field: &FieldMeta, idx: usize, suffix: &str, v: &Value) -> Result<Cond, InputError> {
    if let Some((column, nullable)) = outer_column(v) {
        return parse_outer_key(idx, suffix, column, nullable);
    }
    if let (Value::List(items), "_in" | "_not_in") = (v, suffix)
        && items.iter().any(|it| outer_column(it).is_some())
    {
        // `f_in: [$node_x, "a"]`: the constants as `IN`, each outer column as `=` (or, for
        // `_not_in`, all of them as `<>`).
        let negate = suffix == "_not_in";
        let (outer, consts): (Vec<&Value>, Vec<&Value>) =
            items.iter().partition(|it| outer_column(it).is_some());
        let consts = Value::List(consts.into_iter().cloned().collect());
        let mut parts = vec![parse_key(field, idx, suffix, &consts)?];
        for (column, nullable) in outer.into_iter().filter_map(outer_column) {
            let suffix = if negate { "_not" } else { "" };
            parts.push(parse_outer_key(idx, suffix, column, nullable)?);
        }
        return Ok(if negate {
            Cond::All(parts)
        } else {
            Cond::Any(parts)
        });
    }
    let val = || Val::from_graphql(v, field.kind);
    let like = |kind, negate| -> Result<Cond, InputError> {
        Ok(match val()? {
            Val::String(text) => Cond::Like {
                field: idx,
                kind,
                text,
                negate,
            },
            _ => Cond::Const(false),
        })
    };
    let cmp = |op| -> Result<Cond, InputError> {
        Ok(match val()? {
            Val::Null => Cond::Const(false),
            val => Cond::Cmp {
                field: idx,
                op,
                val,
            },
        })
    };
    Ok(match suffix {
        "" => match val()? {
            Val::Null => Cond::IsNull {
                field: idx,
                negate: false,
            },
            val => Cond::Cmp {
                field: idx,
                op: CmpOp::Eq,
                val,
            },
        },
        "_not" => match val()? {
            Val::Null => Cond::IsNull {
                field: idx,
                negate: true,
            },
            val => Cond::Cmp {
                field: idx,
                op: CmpOp::Ne,
                val,
            },
        },
        "_in" | "_not_in" => {
            let negate = suffix == "_not_in";
            match val()? {
                Val::List(vals) if vals.is_empty() => Cond::Const(negate),
                Val::List(vals) => Cond::In {
                    field: idx,
                    vals,
                    negate,
                },
                // `f_in: null` and `f_not_in: null` both match nothing.
                _ => Cond::Const(false),
            }
        }
        "_lt" => cmp(CmpOp::Lt)?,
        "_lte" => cmp(CmpOp::Le)?,
        "_gt" => cmp(CmpOp::Gt)?,
        "_gte" => cmp(CmpOp::Ge)?,
        "_contains" => like(LikeKind::Contains, false)?,
        "_not_contains" => like(LikeKind::Contains, true)?,
        "_starts_with" => like(LikeKind::StartsWith, false)?,
        "_not_starts_with" => like(LikeKind::StartsWith, true)?,
        "_ends_with" => like(LikeKind::EndsWith, false)?,
        "_not_ends_with" => like(LikeKind::EndsWith, true)?,
        other => return Err(InputError::UnknownFilterSuffix(other.to_owned())),
    })
}

/// A filter key whose value is a column of the outer row.
fn parse_outer_key(
    idx: usize,
    suffix: &str,
    column: &str,
    nullable: bool,
) -> Result<Cond, InputError> {
    let column = column.to_owned();
    let cmp = |op| Cond::CmpOuter {
        field: idx,
        op,
        column: column.clone(),
        nullable,
    };
    let like = |kind, negate| Cond::LikeOuter {
        field: idx,
        kind,
        column: column.clone(),
        negate,
    };
    Ok(match suffix {
        "" | "_in" => cmp(CmpOp::Eq),
        "_not" | "_not_in" => cmp(CmpOp::Ne),
        "_lt" => cmp(CmpOp::Lt),
        "_lte" => cmp(CmpOp::Le),
        "_gt" => cmp(CmpOp::Gt),
        "_gte" => cmp(CmpOp::Ge),
        "_contains" => like(LikeKind::Contains, false),
        "_not_contains" => like(LikeKind::Contains, true),
        "_starts_with" => like(LikeKind::StartsWith, false),
        "_not_starts_with" => like(LikeKind::StartsWith, true),
        "_ends_with" => like(LikeKind::EndsWith, false),
        "_not_ends_with" => like(LikeKind::EndsWith, true),
        other => return Err(InputError::UnknownFilterSuffix(other.to_owned())),
    })
}
