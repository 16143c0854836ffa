//! The storage layout's names that more than one layer needs: identifiers as SQL spells them,
//! the start of an edge's insert, the columns PostgreSQL keeps each node's to-one partner in (made and kept by
//! `migrate/partners.rs`, read by relation pages and written by creates), and which unique
//! indexes are over lowered text.

use super::Sql;
use super::db::Backend;
use crate::model::{Kind, RelFieldMeta};

/// `name` as a double-quoted SQL identifier.
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whether the unique index of a field of this kind is over its lowered text: a `String` on
/// PostgreSQL (`citext`). `citext` compares two values by lowering both, each time, so an index
/// on the column itself lowers both sides of every comparison in each insert's descent (the
/// unique `citext` index took a quarter to a third of a post's insert, docs/benchmarks.md); an index on
/// `lower(col::text)` lowers the new value once and compares texts. Its equality is `citext`'s,
/// and so is its order, under the same collation. A look-up that is to use it compares
/// `lower(col::text)` with `lower(…)` ([`Sql::eq_col`], [`Sql::eq_param`]).
pub fn lowers(kind: Kind, list: bool, backend: Backend) -> bool {
    backend == Backend::Postgres && kind == Kind::String && !list
}

/// Appends `INSERT INTO "<join>" (<own>, <other>)`: the start of every edge's insert.
pub fn push_edge_insert(sql: &mut Sql, field: &RelFieldMeta) {
    sql.push("INSERT INTO ")
        .ident(field.table)
        .push(" (")
        .ident(field.own)
        .push(", ")
        .ident(field.other)
        .push(")");
}

/// The column on the related table holding the partner of a to-many field's page, reading from
/// the join table `table` whose column `own` holds the parent's ids.
pub fn partner_column(table: &str, own: &str) -> String {
    identifier(format!("_{table}_{own}"))
}

/// The column of a node's table that holds its partner through its relation field `field`:
/// on PostgreSQL there is one when the field is to-one (and not a self relation declared on one
/// field, which stores each edge both ways); SQLite keeps no copies. What migrations make
/// (`migrate/partners.rs`), seen from the model's fields.
pub fn held_through(field: &RelFieldMeta, backend: Backend) -> Option<String> {
    (backend == Backend::Postgres && !field.list && !field.symmetric)
        .then(|| partner_column(field.table, field.other))
}

/// `name` as PostgreSQL stores it: at most 63 bytes (longer names are cut wherever they are
/// used), so that the names read back from the catalog compare equal to the ones made here.
pub fn identifier(mut name: String) -> String {
    const MAX: usize = 63;
    if name.len() > MAX {
        let mut end = MAX;
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name.truncate(end);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_as_postgresql_cuts_them() {
        assert_eq!(partner_column("_UserPosts", "A"), "__UserPosts_A");
        let long = format!("_{}", "R".repeat(70));
        assert_eq!(partner_column(&long, "A").len(), 63);
        assert!(partner_column(&long, "A").starts_with("__RRR"));
        assert_eq!(identifier("é".repeat(40)).len(), 62);
    }
}
