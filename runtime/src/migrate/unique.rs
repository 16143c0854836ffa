//! The form of the unique indexes on PostgreSQL: those of `String` fields are over
//! `lower(col::text)` ([`ddl::lowers`]), and each holds only the rows that have a value
//! (`WHERE col IS NOT NULL`, [`ddl::unique_index_statement`]). Databases made while they were
//! over the `citext` column itself, or held every row, get them made again by the next
//! migration, in its transaction; so does a unique field whose type changed to or from `String`
//! (the type's change rebuilds its index in the old form). SQLite's indexes never change form.

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, DatabaseTransaction};

use super::schema::Schema;
use super::{MigrationError, ddl, held_indexes, texts};
use crate::storage::Backend;
use crate::storage::layout::quote;

/// Makes again each unique index of `schema` whose form is not the one
/// [`ddl::unique_index_statement`] makes; whether there was one.
pub(super) async fn upgrade(
    tx: &DatabaseTransaction,
    schema: &Schema,
    backend: Backend,
) -> Result<bool, MigrationError> {
    if backend != Backend::Postgres {
        return Ok(false);
    }
    let held = held_indexes(tx, backend).await?;
    // Those over an expression (of the unique indexes, the lowered ones), and the partial ones.
    let lowered = indexes_where(tx, "i.indexprs IS NOT NULL").await?;
    let partial = indexes_where(tx, "i.indpred IS NOT NULL").await?;
    let mut upgraded = false;
    for model in &schema.models {
        let id = model.id();
        for f in model.fields.iter().filter(|f| f.unique && f.name != id) {
            let name = ddl::unique_index(&model.name, &f.name);
            let wanted = ddl::lowers(f.kind, f.list, backend);
            if !held.contains(&name)
                || (lowered.contains(&name) == wanted && partial.contains(&name))
            {
                continue;
            }
            for statement in [
                format!("DROP INDEX {}", quote(&name)),
                ddl::unique_index_of(&model.name, f, backend),
            ] {
                tx.execute_unprepared(&statement)
                    .await
                    .map_err(|e| MigrationError::failed(&statement, e))?;
            }
            upgraded = true;
        }
    }
    Ok(upgraded)
}

/// The names of the current schema's indexes whose `pg_index` row meets `condition` (on `i`).
/// Read from the catalogue's columns: `pg_indexes.indexdef` would be computed for indexes of
/// other schemas too, which fails on one that another transaction is dropping.
async fn indexes_where(
    tx: &DatabaseTransaction,
    condition: &str,
) -> Result<BTreeSet<String>, MigrationError> {
    let sql = format!(
        "SELECT c.relname::text FROM pg_index AS i \
         JOIN pg_class AS c ON c.oid = i.indexrelid \
         JOIN pg_namespace AS n ON n.oid = c.relnamespace \
         WHERE n.nspname = current_schema() AND {condition}"
    );
    Ok(texts(tx, &sql).await?.into_iter().collect())
}
