//! Join tables made with an `id` per edge (the reference's layout, and ours until the pair
//! `(A, B)` became the key: [`ddl::join_table`]) are re-keyed by the next migration, in its
//! transaction, keeping every edge: no query ever read the edge's `id`, and writing it cost each
//! edge two more B-trees on SQLite.
//!
//! SQLite cannot drop a primary key, so the table is rebuilt (new table, copy in key order, drop,
//! rename, indexes again; foreign keys are off during migrations). PostgreSQL drops the column
//! (its primary key goes with it) and the unique constraint on `(A, B)`, which the new primary
//! key replaces; the table keeps its triggers ([`super::partners`]).

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, DatabaseTransaction};

use super::schema::Relation;
use super::{MigrationError, ddl, texts};
use crate::storage::Backend;
use crate::storage::layout::quote;

/// Re-keys the join tables of `relations` that still have an `id` column; whether there was one.
pub(super) async fn upgrade(
    tx: &DatabaseTransaction,
    relations: &[Relation],
    backend: Backend,
) -> Result<bool, MigrationError> {
    let sql = match backend {
        Backend::Sqlite => {
            "SELECT m.name FROM sqlite_master AS m JOIN pragma_table_info(m.name) AS c \
             WHERE m.type = 'table' AND c.name = 'id'"
        }
        Backend::Postgres => {
            "SELECT table_name::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND column_name = 'id'"
        }
    };
    let with_id: BTreeSet<String> = texts(tx, sql).await?.into_iter().collect();
    let mut upgraded = false;
    for rel in relations.iter().filter(|rel| with_id.contains(&rel.table)) {
        let statements = match backend {
            Backend::Sqlite => rebuild(rel),
            Backend::Postgres => alter(tx, rel).await?,
        };
        for statement in statements {
            tx.execute_unprepared(&statement)
                .await
                .map_err(|e| MigrationError::failed(&statement, e))?;
        }
        upgraded = true;
    }
    Ok(upgraded)
}

/// SQLite: the edges copied into a table of the new layout, which takes the old one's name.
fn rebuild(rel: &Relation) -> Vec<String> {
    let temp = format!("{}__svc_rekeyed", rel.table);
    let mut out = vec![
        ddl::join_table(rel, &temp, Backend::Sqlite),
        // In key order, so each edge is appended to the new table's B-tree.
        format!(
            "INSERT INTO {} (\"A\", \"B\") SELECT \"A\", \"B\" FROM {} ORDER BY \"A\", \"B\"",
            quote(&temp),
            quote(&rel.table)
        ),
        format!("DROP TABLE {}", quote(&rel.table)),
        format!(
            "ALTER TABLE {} RENAME TO {}",
            quote(&temp),
            quote(&rel.table)
        ),
    ];
    for (column, unique) in ddl::relation_columns(rel) {
        out.extend(ddl::relation_index_statement(rel, column, unique));
    }
    out
}

/// PostgreSQL: the column dropped, and the unique constraint on `(A, B)` replaced by the
/// primary key.
async fn alter(tx: &DatabaseTransaction, rel: &Relation) -> Result<Vec<String>, MigrationError> {
    let table = quote(&rel.table);
    // The table's unique constraints over two columns: the one on `(A, B)` (a to-one column's
    // uniqueness is an index, not a constraint).
    let pairs = texts(
        tx,
        &format!(
            "SELECT conname::text FROM pg_constraint WHERE conrelid = '{}'::regclass \
             AND contype = 'u' AND cardinality(conkey) = 2",
            table.replace('\'', "''")
        ),
    )
    .await?;
    let mut out = vec![format!("ALTER TABLE {table} DROP COLUMN \"id\"")];
    out.extend(
        pairs
            .iter()
            .map(|name| format!("ALTER TABLE {table} DROP CONSTRAINT {}", quote(name))),
    );
    out.push(format!(
        "ALTER TABLE {table} ADD PRIMARY KEY (\"A\", \"B\")"
    ));
    Ok(out)
}
