//! A small SQL text builder that knows the two dialects: identifier quoting, placeholders
//! (`?` for SQLite, `$n` for PostgreSQL), the values bound to them, and the few expressions whose
//! spelling differs between the two (a column's select expression, a comparison's parameter, a
//! list of ids bound as one parameter).

use sea_orm::{DbBackend, Statement, Value};

use super::db::Backend;
use super::params::{id_array, to_db, value_array};
use crate::model::{FieldMeta, Kind, Val};

/// The longest `IN` list written with a placeholder per value; a longer one is bound as one
/// JSON array (SQLite allows 32 766 placeholders per statement, PostgreSQL 65 535).
const MAX_LISTED: usize = 32;

/// SQL text plus its parameters, built left to right.
#[derive(Debug)]
pub struct Sql {
    backend: Backend,
    text: String,
    values: Vec<Value>,
}

impl Sql {
    /// An empty statement in `backend`'s dialect.
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            text: String::with_capacity(256),
            values: Vec::new(),
        }
    }

    /// The dialect the statement is written in.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Appends raw SQL text (never user input).
    pub fn push(&mut self, s: &str) -> &mut Self {
        self.text.push_str(s);
        self
    }

    /// Appends a double-quoted identifier.
    pub fn ident(&mut self, name: &str) -> &mut Self {
        self.text.push('"');
        for c in name.chars() {
            if c == '"' {
                self.text.push('"');
            }
            self.text.push(c);
        }
        self.text.push('"');
        self
    }

    /// Appends `alias."column"`.
    pub fn col(&mut self, alias: &str, name: &str) -> &mut Self {
        self.text.push_str(alias);
        self.text.push('.');
        self.ident(name)
    }

    /// Appends a placeholder bound to `value`.
    pub fn bind(&mut self, value: Value) -> &mut Self {
        self.values.push(value);
        match self.backend {
            Backend::Sqlite => self.text.push('?'),
            Backend::Postgres => {
                self.text.push('$');
                self.text.push_str(&self.values.len().to_string());
            }
        }
        self
    }

    /// Appends `sep`-separated items produced by `f`.
    pub fn join<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        sep: &str,
        mut f: impl FnMut(&mut Self, T),
    ) -> &mut Self {
        for (i, it) in items.into_iter().enumerate() {
            if i > 0 {
                self.text.push_str(sep);
            }
            f(self, it);
        }
        self
    }

    /// Appends the select expression of a column: PostgreSQL `citext` columns are cast to
    /// `text` so the driver decodes them as plain strings (and so `ILIKE` patterns on them are
    /// estimated from the column's statistics).
    pub fn select_col(&mut self, alias: &str, field: &FieldMeta) -> &mut Self {
        self.col(alias, field.name).as_text(field)
    }

    /// [`Sql::select_col`] without a table alias (in a `RETURNING` list, where the bare quoted
    /// column names are unambiguous).
    pub fn select_field(&mut self, field: &FieldMeta) -> &mut Self {
        self.ident(field.name).as_text(field)
    }

    /// The cast of a `citext` column's value to `text`, on PostgreSQL.
    fn as_text(&mut self, field: &FieldMeta) -> &mut Self {
        if self.backend == Backend::Postgres && field.kind.is_text() && !field.list {
            self.push("::text");
        }
        self
    }

    /// Appends a placeholder for a comparison with a column of `field`, cast so that
    /// comparisons with PostgreSQL `citext` columns stay case-insensitive.
    pub fn param(&mut self, val: &Val, field: &FieldMeta) -> &mut Self {
        self.bind(to_db(val, field, self.backend));
        if self.backend == Backend::Postgres && field.kind.is_text() && !field.list {
            self.push("::citext");
        }
        self
    }

    /// Whether equality with `field`'s column is written over lowered text, as its unique
    /// index reads it ([`super::layout::lowers`]): a unique `String` on PostgreSQL.
    pub fn lowered(&self, field: &FieldMeta) -> bool {
        field.unique && super::layout::lowers(field.kind, field.list, self.backend)
    }

    /// Appends `alias."column"` of `field` as an equality with [`Sql::eq_param`] compares it:
    /// `lower(alias."column"::text)` where the field's unique index is over that, so the
    /// look-up goes through the index; the column itself otherwise.
    pub fn eq_col(&mut self, alias: &str, field: &FieldMeta) -> &mut Self {
        if self.lowered(field) {
            return self.push("lower(").col(alias, field.name).push("::text)");
        }
        self.col(alias, field.name)
    }

    /// Appends a placeholder for `val` to compare for equality with [`Sql::eq_col`]:
    /// `lower($n::text)` where that lowers the column, [`Sql::param`]'s otherwise.
    pub fn eq_param(&mut self, val: &Val, field: &FieldMeta) -> &mut Self {
        if self.lowered(field) {
            let value = to_db(val, field, self.backend);
            return self.push("lower(").bind(value).push("::text)");
        }
        self.param(val, field)
    }

    /// Appends ` IN (…)` (` NOT IN (…)` when `negate`) of the preceding [`Sql::eq_col`] of
    /// `field` with `vals`: a placeholder per value for a short list; for a long one, one
    /// parameter holding them as a JSON array, so that a list of any length is one statement.
    pub fn value_in(&mut self, vals: &[Val], field: &FieldMeta, negate: bool) -> &mut Self {
        self.push(if negate { " NOT IN (" } else { " IN (" });
        if vals.len() <= MAX_LISTED {
            self.join(vals, ", ", |s, v| {
                s.eq_param(v, field);
            });
            return self.push(")");
        }
        let param = Value::String(Some(value_array(vals, field, self.backend)));
        match self.backend {
            Backend::Sqlite => self
                .push("SELECT value FROM json_each(")
                .bind(param)
                .push("))"),
            Backend::Postgres if self.lowered(field) => self
                .push("SELECT lower(v) FROM json_array_elements_text(")
                .bind(param)
                .push("::json) AS l(v))"),
            Backend::Postgres => {
                let ty = match field.kind {
                    Kind::String => "citext",
                    Kind::Int => "bigint",
                    Kind::Float => "double precision",
                    Kind::Boolean => "boolean",
                    Kind::DateTime => "timestamptz",
                    Kind::Id | Kind::Json | Kind::Enum | Kind::Relation => "text",
                };
                self.push("SELECT CAST(v AS ")
                    .push(ty)
                    .push(") FROM json_array_elements_text(")
                    .bind(param)
                    .push("::json) AS l(v))")
            }
        }
    }

    /// Appends ` IN (<ids>)` with the ids bound as one JSON array parameter, so a batch of any
    /// size is one placeholder.
    pub fn id_in<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> &mut Self {
        let param = Value::String(Some(id_array(ids)));
        match self.backend {
            Backend::Sqlite => self
                .push(" IN (SELECT value FROM json_each(")
                .bind(param)
                .push("))"),
            Backend::Postgres => self
                .push(" IN (SELECT json_array_elements_text(")
                .bind(param)
                .push("::json))"),
        }
    }

    /// Appends a membership test of the preceding column in `ids`, in the form PostgreSQL plans
    /// best for a few ids in a large table: `= ANY(ARRAY(SELECT …))` is evaluated once and
    /// matched through an index on the column, where `IN (SELECT json_array_elements_text(…))`
    /// is planned as a hash join over the whole table. Only for a positive test (`NOT` needs
    /// [`Sql::id_in`]).
    pub fn id_any<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) -> &mut Self {
        match self.backend {
            Backend::Sqlite => self.id_in(ids),
            Backend::Postgres => self
                .push(" = ANY(ARRAY(SELECT json_array_elements_text(")
                .bind(Value::String(Some(id_array(ids))))
                .push("::json)))"),
        }
    }

    /// The statement text built so far, with its placeholders.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The values bound so far, in placeholder order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// The same statement text with `values` bound to its placeholders instead (a statement
    /// run once per row of a bulk write).
    pub fn with_values(&self, values: Vec<Value>) -> Sql {
        Sql {
            backend: self.backend,
            text: self.text.clone(),
            values,
        }
    }

    /// The statement as sea-orm runs it: the text and its values, for the backend's dialect.
    pub fn into_statement(self) -> Statement {
        let backend = match self.backend {
            Backend::Sqlite => DbBackend::Sqlite,
            Backend::Postgres => DbBackend::Postgres,
        };
        Statement::from_sql_and_values(backend, self.text, self.values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_per_dialect() {
        let mut s = Sql::new(Backend::Postgres);
        s.push("SELECT ")
            .col("t", "a\"b")
            .push(" WHERE x = ")
            .bind(Value::Int(Some(1)));
        s.push(" AND y = ").bind(Value::Int(Some(2)));
        assert_eq!(s.text(), r#"SELECT t."a""b" WHERE x = $1 AND y = $2"#);
        let mut s = Sql::new(Backend::Sqlite);
        s.push("x = ").bind(Value::Int(Some(1)));
        assert_eq!(s.text(), "x = ?");
    }
}
