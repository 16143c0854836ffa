//! Sort orders: the keys of an order (always ending with the id), their SQL, and the values of
//! `<Type>OrderBy` that name them.

use crate::model::{Kind, ModelMeta};
use crate::storage::Sql;

/// A sort order: `(field index, descending)` keys, always ending with `id`.
#[derive(Debug, Clone, PartialEq)]
pub struct Order(pub(crate) Vec<(usize, bool)>);

impl Order {
    /// How many keys the order has (the id included).
    pub fn key_count(&self) -> usize {
        self.0.len()
    }

    /// Whether the order is by the id alone (the id is always the last key).
    pub fn by_id_only(&self) -> bool {
        self.0.len() == 1
    }

    /// Whether the first key sorts descending.
    pub fn starts_descending(&self) -> bool {
        self.0.first().is_some_and(|&(_, desc)| desc)
    }

    /// Keys in the order given (a repeated field counts once), then `id` as the tie-break in the
    /// direction of the first key; without keys, `id` ascending.
    pub fn new(meta: &ModelMeta, given: impl IntoIterator<Item = (usize, bool)>) -> Order {
        let mut keys: Vec<(usize, bool)> = Vec::new();
        for (field, desc) in given {
            if keys.iter().any(|(f, _)| *f == field) {
                continue;
            }
            keys.push((field, desc));
            if field == meta.id {
                break;
            }
        }
        if !keys.iter().any(|(f, _)| *f == meta.id) {
            let desc = keys.first().is_some_and(|k| k.1);
            keys.push((meta.id, desc));
        }
        Order(keys)
    }

    /// The same keys in the opposite directions.
    pub fn inverted(&self) -> Order {
        Order(self.0.iter().map(|&(f, d)| (f, !d)).collect())
    }
}

/// Appends ` ORDER BY …` with nulls first in ascending order (as the reference's MySQL does).
pub fn push_order(sql: &mut Sql, meta: &ModelMeta, alias: &str, order: &Order) {
    push_order_with_id(sql, meta, alias, order, (alias, meta.fields[meta.id].name));
}

/// [`push_order`] with the id read from the column `id` (`(alias, name)`), which holds the same
/// values: a relation page orders by the join table's column, so that the join table's
/// `(own, other)` index yields its rows in order and the page stops at its last row.
pub fn push_order_with_id(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    order: &Order,
    id: (&str, &str),
) {
    push_order_by(sql, meta, order, |s, _, field| {
        push_key(s, meta, alias, id, field);
    });
}

/// Appends `, <key> AS "__k<i>"` for each key of `order`, as [`push_order_with_id`] reads them:
/// the columns a statement that sorts its rows again, outside the subquery that read them, sorts
/// by (with [`push_order_by`] and [`key_column`]).
pub fn push_order_keys(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    order: &Order,
    id: (&str, &str),
) {
    for (i, &(field, _)) in order.0.iter().enumerate() {
        sql.push(", ");
        push_key(sql, meta, alias, id, field);
        sql.push(" AS ");
        key_column(sql, i);
    }
}

/// The name of the `i`th order key selected by [`push_order_keys`].
pub fn key_column(sql: &mut Sql, i: usize) {
    sql.push("\"__k").push(&i.to_string()).push("\"");
}

/// The column of an order key: `id` for the id, else the field's column of `alias`.
fn push_key(sql: &mut Sql, meta: &ModelMeta, alias: &str, id: (&str, &str), field: usize) {
    if field == meta.id {
        sql.col(id.0, id.1);
    } else {
        sql.col(alias, meta.fields[field].name);
    }
}

/// Appends ` ORDER BY …` over the order's keys, each written by `key(sql, i, field)`; nulls come
/// first in ascending order (as the reference's MySQL does).
pub fn push_order_by(
    sql: &mut Sql,
    meta: &ModelMeta,
    order: &Order,
    key: impl Fn(&mut Sql, usize, usize),
) {
    sql.push(" ORDER BY ");
    sql.join(
        order.0.iter().enumerate(),
        ", ",
        |s, (i, &(field, desc))| {
            key(s, i, field);
            s.push(match (desc, field == meta.id) {
                (false, true) => " ASC",
                (true, true) => " DESC",
                (false, false) => " ASC NULLS FIRST",
                (true, false) => " DESC NULLS LAST",
            });
        },
    );
}

/// The fields of `meta` that `<Type>OrderBy` orders by: every exposed single-valued column, in
/// field order.
pub fn order_fields(meta: &ModelMeta) -> impl Iterator<Item = (usize, &'static str)> + '_ {
    meta.fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.exposed && !f.list && f.kind != Kind::Relation)
        .map(|(i, f)| (i, f.name))
}

/// The key `(field index, descending)` a value of `meta`'s `<Type>OrderBy` names.
pub fn order_key(meta: &ModelMeta, value: &str) -> Option<(usize, bool)> {
    let (name, descending) = svc_names::parse_order_value(value)?;
    order_fields(meta)
        .find(|(_, field)| *field == name)
        .map(|(i, _)| (i, descending))
}
