//! A [`Cond`] as SQL over one table alias: comparisons with the parameters each dialect needs,
//! literal `LIKE` matches (`ILIKE` on PostgreSQL), and relation conditions as `EXISTS` over the
//! relation's join table.

use super::{CmpOp, Cond, LikeKind, OUTER, Quant};
use crate::model::ModelMeta;
use crate::storage::{Backend, Sql};

/// Appends the SQL of `cond` over the table aliased `alias`.
pub fn render(cond: &Cond, meta: &ModelMeta, alias: &str, sql: &mut Sql) {
    match cond {
        Cond::Const(true) => {
            sql.push("1=1");
        }
        Cond::Const(false) | Cond::NullToMany(_) => {
            sql.push("1=0");
        }
        Cond::All(items) | Cond::Any(items) if items.is_empty() => {
            sql.push("1=1");
        }
        Cond::All(items) | Cond::Any(items) => {
            let sep = if matches!(cond, Cond::All(_)) {
                " AND "
            } else {
                " OR "
            };
            sql.push("(");
            sql.join(items, sep, |s, it| render(it, meta, alias, s));
            sql.push(")");
        }
        Cond::IsNull { field, negate } => {
            sql.col(alias, meta.fields[*field].name);
            sql.push(if *negate { " IS NOT NULL" } else { " IS NULL" });
        }
        Cond::Cmp {
            field,
            op: CmpOp::Eq,
            val,
        } => {
            let f = &meta.fields[*field];
            sql.eq_col(alias, f).push(" = ").eq_param(val, f);
        }
        Cond::Cmp { field, op, val } => {
            let f = &meta.fields[*field];
            sql.col(alias, f.name).push(cmp_op(*op));
            sql.param(val, f);
        }
        Cond::In {
            field,
            vals,
            negate,
        } => {
            let f = &meta.fields[*field];
            sql.eq_col(alias, f).value_in(vals, f, *negate);
        }
        Cond::Like {
            field,
            kind,
            text,
            negate,
        } => render_like(sql, meta, alias, *field, *kind, text, *negate),
        Cond::CmpOuter {
            field,
            op,
            column,
            nullable,
        } => render_cmp_outer(sql, meta, alias, *field, *op, column, *nullable),
        Cond::LikeOuter {
            field,
            kind,
            column,
            negate,
        } => render_like_outer(sql, meta, alias, *field, *kind, column, *negate),
        Cond::Rel { rel, quant, cond } => render_relation(sql, meta, alias, *rel, *quant, cond),
    }
}

/// The SQL of a comparison operator, spaced.
fn cmp_op(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => " = ",
        CmpOp::Ne => " <> ",
        CmpOp::Lt => " < ",
        CmpOp::Le => " <= ",
        CmpOp::Gt => " > ",
        CmpOp::Ge => " >= ",
    }
}

/// `_contains`-style matches with a constant, matched literally.
fn render_like(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    field: usize,
    kind: LikeKind,
    text: &str,
    negate: bool,
) {
    let escaped = escape_like(text);
    let pattern = match kind {
        LikeKind::Contains => format!("%{escaped}%"),
        LikeKind::StartsWith => format!("{escaped}%"),
        LikeKind::EndsWith => format!("%{escaped}"),
    };
    // On PostgreSQL a `citext` column is matched as `text` (ILIKE ignores case either way): the
    // planner estimates `text` patterns from the column's statistics but `citext` ones with a
    // fixed guess, which made it sort a whole filtered table to take the first 50 rows instead
    // of walking the id index.
    sql.select_col(alias, &meta.fields[field]);
    push_like(sql, negate)
        .bind(sea_orm::Value::String(Some(pattern)))
        .push(" ESCAPE '\\'");
}

/// A comparison with a column of the outer row (a permission query's node). Equality is
/// null-safe when the outer column can be null, as `f: $var` with a null variable means
/// `f IS NULL`.
fn render_cmp_outer(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    field: usize,
    op: CmpOp,
    column: &str,
    nullable: bool,
) {
    let f = &meta.fields[field];
    let plain = |sql: &mut Sql, op: &str| {
        sql.col(alias, f.name).push(op).col(OUTER, column);
    };
    match (op, nullable, sql.backend()) {
        // SQLite's `IS` / `IS NOT` are null-safe and use indexes.
        (CmpOp::Eq, true, Backend::Sqlite) => plain(sql, " IS "),
        (CmpOp::Ne, true, Backend::Sqlite) => plain(sql, " IS NOT "),
        // PostgreSQL cannot use an index for `IS NOT DISTINCT FROM`; spell it out.
        (CmpOp::Eq, true, Backend::Postgres) => {
            sql.push("(");
            plain(sql, " = ");
            sql.push(" OR (")
                .col(alias, f.name)
                .push(" IS NULL AND ")
                .col(OUTER, column)
                .push(" IS NULL))");
        }
        (CmpOp::Ne, true, Backend::Postgres) => plain(sql, " IS DISTINCT FROM "),
        // As for constants, a null column of the checked table matches neither.
        (op, _, _) => plain(sql, cmp_op(op)),
    }
}

/// A `_contains`-style match with a column of the outer row, matched literally: the outer value
/// is escaped in SQL, as [`escape_like`] does for constants.
fn render_like_outer(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    field: usize,
    kind: LikeKind,
    column: &str,
    negate: bool,
) {
    sql.select_col(alias, &meta.fields[field]);
    push_like(sql, negate);
    if kind != LikeKind::StartsWith {
        sql.push("'%' || ");
    }
    sql.push("REPLACE(REPLACE(REPLACE(CAST(");
    sql.col(OUTER, column);
    sql.push(" AS TEXT), '\\', '\\\\'), '%', '\\%'), '_', '\\_')");
    if kind != LikeKind::EndsWith {
        sql.push(" || '%'");
    }
    sql.push(" ESCAPE '\\'");
}

/// A condition on the nodes related through `meta.relations[rel]`, as `EXISTS` over the
/// relation's join table joined to the related table.
fn render_relation(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    rel: usize,
    quant: Quant,
    cond: &Cond,
) {
    let field = &meta.relations[rel];
    let target = field.target;
    // Nested aliases extend the outer one, so every level has its own names.
    let join = format!("{alias}j");
    let inner = format!("{alias}r");
    if quant != Quant::Some {
        sql.push("NOT ");
    }
    sql.push("EXISTS (SELECT 1 FROM ")
        .ident(field.table)
        .push(" AS ")
        .push(&join)
        .push(" JOIN ")
        .ident(target.table)
        .push(" AS ")
        .push(&inner)
        .push(" ON ")
        .col(&inner, target.fields[target.id].name)
        .push(" = ")
        .col(&join, field.other)
        .push(" WHERE ")
        .col(&join, field.own)
        .push(" = ")
        .col(alias, meta.fields[meta.id].name)
        .push(" AND (");
    render(cond, target, &inner, sql);
    // `every` = no related node for which the condition is not true (null counts as not
    // matching).
    sql.push(if quant == Quant::Every {
        ") IS NOT TRUE)"
    } else {
        "))"
    });
}

/// Appends the pattern match of the preceding column: ` LIKE ` on SQLite, whose `TEXT COLLATE
/// NOCASE` columns match case-insensitively already, ` ILIKE ` on PostgreSQL (` NOT …` when
/// `negate`); the pattern follows.
fn push_like(sql: &mut Sql, negate: bool) -> &mut Sql {
    sql.push(match (sql.backend(), negate) {
        (Backend::Sqlite, false) => " LIKE ",
        (Backend::Sqlite, true) => " NOT LIKE ",
        (Backend::Postgres, false) => " ILIKE ",
        (Backend::Postgres, true) => " NOT ILIKE ",
    })
}

/// Escapes `\`, `%` and `_` so they match literally inside a `LIKE` pattern.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_escaping() {
        assert_eq!(escape_like(r"50%_a\b"), r"50\%\_a\\b");
    }
}
