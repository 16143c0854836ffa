//! A small SQL text builder that knows the two dialects: identifier quoting, placeholders
//! (`?` for SQLite, `$n` for PostgreSQL) and the values bound to them.

use sea_orm::{DbBackend, Statement, Value};

use super::Backend;

/// SQL text plus its parameters, built left to right.
#[derive(Debug)]
pub struct Sql {
    backend: Backend,
    text: String,
    values: Vec<Value>,
}

impl Sql {
    pub fn new(backend: Backend) -> Self {
        Self {
            backend,
            text: String::with_capacity(256),
            values: Vec::new(),
        }
    }

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

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The values bound so far, in placeholder order.
    pub fn values(&self) -> &[Value] {
        &self.values
    }

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
