//! Schema migrations (reference §1.9, migration part): the model a database was last migrated
//! to is stored in the meta table ([`schema::Schema`], key `schema`); at every start, and through
//! the binary's `migrate` subcommand, it is compared with the compiled model and the difference
//! ([`plan::Plan`]) is applied in one transaction, or nothing is.
//!
//! Steps that lose data (removing a type, a relation or a field) need `--force`. Steps the
//! stored nodes would violate fail with the reference's errors: a required field without a
//! value (2007), a required relation some node lacks (2052), a to-many relation that some node
//! uses more than once becoming to-one (2031).
//!
//! The indexes of `@search` fields ([`search`]: trigram indexes on PostgreSQL, B-trees on
//! SQLite) are made with their model's table, renamed by the rename steps, and made or dropped
//! after the other steps.

mod apply;
pub mod ddl;
mod joins;
mod partners;
pub mod plan;
pub mod schema;
pub mod search;
mod unique;

use std::fmt;

use sea_orm::{ConnectionTrait, DatabaseTransaction};

use crate::storage::bookkeeping::{META_TABLE, select_meta};
use crate::storage::{Backend, Db, NOTIFY_SCHEMA_CHANGED};
pub use plan::Plan;
pub use schema::{Hints, Schema};

/// The meta-table key of the stored schema.
const SCHEMA_KEY: &str = "schema";

/// The reference's refusal of destructive steps without `--force`.
pub const DESTRUCTIVE: &str = "Your migration includes potentially destructive changes. Review using `svc deploy --dry-run` and continue using `svc deploy --force`.";

/// How to migrate.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Compute and report the plan, change nothing.
    pub dry_run: bool,
    /// Apply destructive steps too.
    pub force: bool,
}

/// What a migration found and did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The database had no stored schema: every table was created (existing ones kept).
    Created,
    /// The stored schema is the target already.
    UpToDate,
    /// `dry_run`: what would be applied.
    Planned(Plan),
    /// The plan was applied.
    Applied(Plan),
}

/// Why a migration did not run or failed; the database is as it was.
#[derive(Debug, Clone, PartialEq)]
pub struct MigrationError {
    /// The reference's error code, where it has one.
    pub code: Option<u32>,
    /// What went wrong, in plain words ([`DESTRUCTIVE`] when destructive steps were refused).
    pub message: String,
    /// The plan, when one was computed.
    pub plan: Option<Plan>,
}

impl MigrationError {
    fn new(code: Option<u32>, message: String) -> MigrationError {
        MigrationError {
            code,
            message,
            plan: None,
        }
    }

    fn needs_value(field: &str) -> MigrationError {
        MigrationError::new(
            Some(2007),
            format!(
                "The field `{field}` must specify the `@migrationValue` directive, because its type was changed or it became required: `@migrationValue(value: \"42\")`"
            ),
        )
    }

    fn failed(statement: &str, err: sea_orm::DbErr) -> MigrationError {
        MigrationError::new(
            None,
            format!("the migration failed at `{statement}`: {err}"),
        )
    }

    fn db(err: sea_orm::DbErr) -> MigrationError {
        MigrationError::new(None, format!("the migration failed: {err}"))
    }

    /// Whether the migration was refused for destructive steps (run again with `force`).
    pub fn is_destructive(&self) -> bool {
        self.message == DESTRUCTIVE
    }
}

impl fmt::Display for MigrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Some(code) => write!(f, "{code}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for MigrationError {}

/// Brings the database to `target`, following `hints` (renames, migration values).
pub async fn migrate(
    db: &Db,
    target: &Schema,
    hints: &Hints,
    options: Options,
) -> Result<Outcome, MigrationError> {
    let backend = db.backend();
    // SQLite rebuilds tables that join tables refer to: foreign keys are off meanwhile (it
    // cannot change inside a transaction) and checked before the commit.
    if backend == Backend::Sqlite {
        db.set_foreign_keys(false)
            .await
            .map_err(MigrationError::db)?;
    }
    let result = run(db, target, hints, options).await;
    if backend == Backend::Sqlite {
        db.set_foreign_keys(true)
            .await
            .map_err(MigrationError::db)?;
    }
    result
}

/// Runs the migration in one transaction, ended explicitly either way: a transaction merely
/// dropped would keep its locks until its connection is used again.
async fn run(
    db: &Db,
    target: &Schema,
    hints: &Hints,
    options: Options,
) -> Result<Outcome, MigrationError> {
    let tx = db.begin().await.map_err(MigrationError::db)?;
    match within(&tx, db, target, hints, options).await {
        Ok((outcome, true)) => {
            tx.commit().await.map_err(MigrationError::db)?;
            Ok(outcome)
        }
        Ok((outcome, false)) => {
            tx.rollback().await.map_err(MigrationError::db)?;
            Ok(outcome)
        }
        Err(e) => {
            let _ = tx.rollback().await;
            Err(e)
        }
    }
}

/// The migration's work; `true` when it is to be committed.
async fn within(
    tx: &DatabaseTransaction,
    db: &Db,
    target: &Schema,
    hints: &Hints,
    options: Options,
) -> Result<(Outcome, bool), MigrationError> {
    let backend = db.backend();
    for statement in ddl::base_statements(backend) {
        tx.execute_unprepared(&statement)
            .await
            .map_err(|e| MigrationError::failed(&statement, e))?;
    }
    let outcome = match stored(tx, db).await? {
        None if options.dry_run => {
            let empty = Schema {
                format: schema::FORMAT,
                models: Vec::new(),
                relations: Vec::new(),
            };
            return Ok((Outcome::Planned(Plan::between(&empty, target)), false));
        }
        None => {
            for statement in ddl::create_statements(target, backend) {
                tx.execute_unprepared(&statement)
                    .await
                    .map_err(|e| MigrationError::failed(&statement, e))?;
            }
            // Tables that existed are kept, so may be of an earlier layout.
            joins::upgrade(tx, &target.relations, backend).await?;
            unique::upgrade(tx, target, backend).await?;
            Outcome::Created
        }
        Some(old) if old == *target => {
            // A database made before the copies existed gets them here, once; one made while
            // each join column had an index loses those the layout no longer wants; one made
            // while each edge had an id loses them; one whose unique texts were indexed as
            // `citext` gets them indexed lowered; one made while SQLite's `@search` fields had
            // no index gets them.
            let rekeyed = joins::upgrade(tx, &target.relations, backend).await?;
            let dropped = drop_redundant_indexes(tx, target, backend).await?;
            let reindexed = unique::upgrade(tx, target, backend).await?;
            let searched = search::upgrade(tx, target, backend).await?;
            let changed = backend == Backend::Postgres && sync_partners(tx, target, false).await?;
            return Ok((
                Outcome::UpToDate,
                rekeyed || dropped || reindexed || searched || changed,
            ));
        }
        Some(old) => {
            let (plan, renamed) = Plan::prepare(&old, target, hints);
            // A dry run shows and checks destructive steps too; only applying needs `force`.
            if plan.is_destructive() && !options.force && !options.dry_run {
                return Err(MigrationError {
                    code: None,
                    message: DESTRUCTIVE.to_owned(),
                    plan: Some(plan),
                });
            }
            if backend == Backend::Sqlite && foreign_keys_on(tx).await? {
                // Rebuilding a table with enforcement on would cascade-delete its edges.
                return Err(MigrationError::new(
                    None,
                    "the migration needs SQLite's foreign keys off, and they are on".to_owned(),
                ));
            }
            // The steps then see every join table in today's layout.
            joins::upgrade(tx, &old.relations, backend).await?;
            if let Err(mut e) = apply::apply(tx, backend, &renamed, target, &plan).await {
                e.plan = Some(plan);
                return Err(e);
            }
            if options.dry_run {
                // Checked and tried, not kept.
                return Ok((Outcome::Planned(plan), false));
            }
            Outcome::Applied(plan)
        }
    };
    if matches!(outcome, Outcome::Applied(_)) {
        // A new database never had them.
        drop_redundant_indexes(tx, target, backend).await?;
        unique::upgrade(tx, target, backend).await?;
    }
    if backend == Backend::Sqlite {
        let broken = tx
            .query_all_raw(sea_orm::Statement::from_string(
                tx.get_database_backend(),
                "PRAGMA foreign_key_check".to_owned(),
            ))
            .await
            .map_err(MigrationError::db)?;
        if !broken.is_empty() {
            return Err(MigrationError::new(
                None,
                "the migration would leave edges pointing at missing nodes".to_owned(),
            ));
        }
    }
    if backend == Backend::Postgres {
        sync_partners(tx, target, true).await?;
        if matches!(outcome, Outcome::Applied(_)) {
            // The running servers on this database end their subscriptions with `Schema
            // changed` (delivered at the commit).
            tx.execute_unprepared(NOTIFY_SCHEMA_CHANGED)
                .await
                .map_err(|e| MigrationError::failed(NOTIFY_SCHEMA_CHANGED, e))?;
        }
    }
    store(tx, db, target).await?;
    Ok((outcome, true))
}

/// Whether the model stored in `db` (by the last migration) differs from `target`: a deploy
/// changed it since this server started. `false` when it cannot be read.
pub async fn schema_differs(db: &Db, target: &Schema) -> bool {
    let Ok(tx) = db.begin().await else {
        return false;
    };
    let stored = stored(&tx, db).await;
    let _ = tx.rollback().await;
    matches!(stored, Ok(Some(old)) if old != *target)
}

/// Drops the indexes [`ddl::redundant_indexes`] names that the database holds; whether it held
/// any.
async fn drop_redundant_indexes(
    tx: &DatabaseTransaction,
    target: &Schema,
    backend: Backend,
) -> Result<bool, MigrationError> {
    let redundant = ddl::redundant_indexes(target);
    if redundant.is_empty() {
        return Ok(false);
    }
    let held = held_indexes(tx, backend).await?;
    let mut dropped = false;
    for index in redundant.iter().filter(|i| held.contains(*i)) {
        let statement = format!("DROP INDEX {}", crate::storage::layout::quote(index));
        tx.execute_unprepared(&statement)
            .await
            .map_err(|e| MigrationError::failed(&statement, e))?;
        dropped = true;
    }
    Ok(dropped)
}

/// The names of the indexes the database holds (on PostgreSQL, in the service's schema).
async fn held_indexes(
    tx: &DatabaseTransaction,
    backend: Backend,
) -> Result<std::collections::BTreeSet<String>, MigrationError> {
    let sql = match backend {
        Backend::Sqlite => "SELECT name FROM sqlite_master WHERE type = 'index'",
        Backend::Postgres => {
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema()"
        }
    };
    Ok(texts(tx, sql).await?.into_iter().collect())
}

/// The first column of each row `sql` selects, as text.
async fn texts(tx: &DatabaseTransaction, sql: &str) -> Result<Vec<String>, MigrationError> {
    let rows = tx
        .query_all_raw(sea_orm::Statement::from_string(
            tx.get_database_backend(),
            sql.to_owned(),
        ))
        .await
        .map_err(|e| MigrationError::failed(sql, e))?;
    rows.iter()
        .map(|row| row.try_get_by_index::<String>(0))
        .collect::<Result<_, _>>()
        .map_err(MigrationError::db)
}

/// PostgreSQL: the to-one partners copied into the nodes' rows ([`partner`]).
async fn sync_partners(
    tx: &DatabaseTransaction,
    target: &Schema,
    always: bool,
) -> Result<bool, MigrationError> {
    partners::sync(tx, target, always)
        .await
        .map_err(|(statement, e)| MigrationError::failed(&statement, e))
}

/// Whether SQLite enforces foreign keys on the transaction's connection.
async fn foreign_keys_on(tx: &DatabaseTransaction) -> Result<bool, MigrationError> {
    let row = tx
        .query_one_raw(sea_orm::Statement::from_string(
            tx.get_database_backend(),
            "PRAGMA foreign_keys".to_owned(),
        ))
        .await
        .map_err(MigrationError::db)?;
    Ok(match row {
        Some(row) => row.try_get_by_index::<i64>(0).map_err(MigrationError::db)? != 0,
        None => false,
    })
}

/// The stored schema; `None` when there is none (or of another format).
async fn stored(tx: &DatabaseTransaction, db: &Db) -> Result<Option<Schema>, MigrationError> {
    let row = tx
        .query_one_raw(select_meta(db, SCHEMA_KEY))
        .await
        .map_err(MigrationError::db)?;
    let Some(row) = row else {
        return Ok(None);
    };
    let text: String = row.try_get_by_index(0).map_err(MigrationError::db)?;
    Ok(serde_json::from_str::<Schema>(&text)
        .ok()
        .filter(|s| s.format == schema::FORMAT))
}

async fn store(tx: &DatabaseTransaction, db: &Db, schema: &Schema) -> Result<(), MigrationError> {
    let text = serde_json::to_string(schema)
        .map_err(|e| MigrationError::new(None, format!("cannot store the schema: {e}")))?;
    let mut upsert = db.sql();
    upsert
        .push("INSERT INTO ")
        .ident(META_TABLE)
        .push(" (\"key\", \"value\") VALUES (")
        .bind(SCHEMA_KEY.into())
        .push(", ")
        .bind(text.into())
        .push(") ON CONFLICT (\"key\") DO UPDATE SET \"value\" = excluded.\"value\"");
    tx.execute_raw(upsert.into_statement())
        .await
        .map_err(MigrationError::db)?;
    Ok(())
}
