//! The service's own bookkeeping tables: the key/value table holding the service id, the
//! signing secret and the stored model, and the table of root tokens.

use sea_orm::{ConnectionTrait, DbErr};

use super::db::{Backend, Db};

/// The PostgreSQL advisory lock key that serialises schema set-up across services.
const DDL_LOCK: i64 = 7_317_001;

/// Name of the table holding the service's own bookkeeping (id, secret, stored model).
pub const META_TABLE: &str = "_svc_meta";

/// Name of the table holding the service's root tokens (reference §6.4). Prefixed like
/// [`META_TABLE`], so it can clash neither with a model table nor with a relation's `_<Name>`.
pub const ROOT_TOKEN_TABLE: &str = "_svc_root_token";

/// Name of the table (PostgreSQL) holding the events of a mutation too large for one
/// notification: the notification carries the row's id, and the other instances read it.
pub const EVENT_TABLE: &str = "_svc_event";

/// Name of the table holding the events server-side subscription functions are still to be
/// invoked for (`storage/outbox.rs`).
pub const OUTBOX_TABLE: &str = "_svc_outbox";

/// The statement that makes the current transaction wait for (and hold, until it ends) the lock
/// serialising schema set-up and root-token sync across instances: on PostgreSQL, an advisory
/// lock; SQLite's write transactions take turns already.
pub fn setup_lock(backend: Backend) -> Option<String> {
    (backend == Backend::Postgres).then(|| format!("SELECT pg_advisory_xact_lock({DDL_LOCK})"))
}

/// The value stored under `key` in the meta table, if the meta table and the key exist; stores
/// nothing.
pub async fn stored_meta_value(db: &Db, key: &str) -> Result<Option<String>, DbErr> {
    match db.reader().query_one_raw(select_meta(db, key)).await {
        Ok(Some(row)) => row.try_get_by_index(0).map(Some),
        Ok(None) => Ok(None),
        // A database the service never started on has no meta table.
        Err(_) if !has_meta_table(db).await? => Ok(None),
        Err(e) => Err(e),
    }
}

/// `SELECT "value"` of `key` in the meta table.
pub fn select_meta(db: &Db, key: &str) -> sea_orm::Statement {
    let mut select = db.sql();
    select
        .push("SELECT \"value\" FROM ")
        .ident(META_TABLE)
        .push(" WHERE \"key\" = ")
        .bind(key.into());
    select.into_statement()
}

/// Whether the meta table exists.
async fn has_meta_table(db: &Db) -> Result<bool, DbErr> {
    let mut select = db.sql();
    match db.backend() {
        Backend::Sqlite => select
            .push("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ")
            .bind(META_TABLE.into()),
        Backend::Postgres => select
            .push("SELECT 1 WHERE to_regclass(")
            .bind(format!("\"{META_TABLE}\"").into())
            .push("::text) IS NOT NULL"),
    };
    Ok(db
        .reader()
        .query_one_raw(select.into_statement())
        .await?
        .is_some())
}

/// The value stored under `key` in the meta table; `candidate` is stored first when the key has
/// none, so every instance on one database reads the value the first one stored.
pub async fn meta_value(db: &Db, key: &str, candidate: String) -> Result<String, DbErr> {
    let tx = db.begin().await?;
    let mut insert = db.sql();
    insert
        .push("INSERT INTO ")
        .ident(META_TABLE)
        .push(" (\"key\", \"value\") VALUES (")
        .bind(key.into())
        .push(", ")
        .bind(candidate.into())
        .push(") ON CONFLICT DO NOTHING");
    tx.execute_raw(insert.into_statement()).await?;
    let row = tx.query_one_raw(select_meta(db, key)).await?;
    tx.commit().await?;
    match row {
        Some(row) => row.try_get_by_index(0),
        None => Err(DbErr::RecordNotFound(format!("`{key}` in {META_TABLE}"))),
    }
}
