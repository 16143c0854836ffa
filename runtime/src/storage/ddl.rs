//! Tables, indexes and join tables for a model, created at first start.
//!
//! Layout (the one the reference describes): one table per model named like the model, with `id`
//! as primary key, `createdAt`, `updatedAt` and one column per scalar or enum field; one join
//! table per relation (`id`, `A`, `B`, unique `(A, B)`, cascading foreign keys, and a unique
//! column on each side whose field is to-one, so the database enforces the cardinality).

use crate::meta::{FieldMeta, Kind, ModelMeta, RelationMeta, ServiceMeta};

use super::{Backend, Sql};

/// The PostgreSQL advisory lock key that serialises schema set-up across services.
const DDL_LOCK: i64 = 7_317_001;

/// Name of the table holding the service's own bookkeeping (id, secret, stored model).
pub const META_TABLE: &str = "_svc_meta";

/// Name of the table holding the service's root tokens (reference §6.4). Prefixed like
/// [`META_TABLE`], so it can clash neither with a model table nor with a relation's `_<Name>`.
pub const ROOT_TOKEN_TABLE: &str = "_svc_root_token";

/// The statement that makes the current PostgreSQL transaction wait for (and hold, until it
/// ends) the lock serialising schema set-up and root-token sync across instances.
pub fn lock_statement() -> String {
    format!("SELECT pg_advisory_xact_lock({DDL_LOCK})")
}

/// The statements that create everything the model needs; each is idempotent.
pub fn create_statements(service: &ServiceMeta, backend: Backend) -> Vec<String> {
    let mut out = Vec::new();
    if backend == Backend::Postgres {
        // Services starting at the same moment in one database take turns (the lock is held
        // until the set-up transaction ends), and an installed extension is never re-created.
        out.push(lock_statement());
        out.push(
            "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citext') \
             THEN CREATE EXTENSION citext; END IF; END $$"
                .to_owned(),
        );
    }
    out.push(format!(
        "CREATE TABLE IF NOT EXISTS {} (\"key\" TEXT NOT NULL PRIMARY KEY, \"value\" TEXT NOT NULL)",
        quote(META_TABLE)
    ));
    // `createdAt` is text in the API's format on both databases (only the server reads it).
    let id = match backend {
        Backend::Sqlite => "TEXT",
        Backend::Postgres => "TEXT COLLATE \"C\"",
    };
    out.push(format!(
        "CREATE TABLE IF NOT EXISTS {} (\"id\" {id} NOT NULL PRIMARY KEY, \
         \"name\" TEXT NOT NULL UNIQUE, \"token\" TEXT NOT NULL, \"createdAt\" TEXT NOT NULL)",
        quote(ROOT_TOKEN_TABLE)
    ));
    for model in service.models {
        out.extend(model_statements(model, backend));
    }
    for rel in service.relations {
        out.extend(relation_statements(rel, backend));
    }
    out
}

fn model_statements(model: &ModelMeta, backend: Backend) -> Vec<String> {
    let mut sql = Sql::new(backend);
    sql.push("CREATE TABLE IF NOT EXISTS ")
        .ident(model.table)
        .push(" (");
    sql.join(model.fields.iter().enumerate(), ", ", |s, (i, f)| {
        s.ident(f.name).push(" ").push(column_type(f, backend));
        if i == model.id {
            s.push(" NOT NULL PRIMARY KEY");
        } else if i == model.created_at || i == model.updated_at {
            s.push(" NOT NULL");
        }
    });
    sql.push(")");
    let mut out = vec![sql.text().to_owned()];
    for (i, f) in model.fields.iter().enumerate() {
        if f.unique && i != model.id {
            let mut s = Sql::new(backend);
            s.push("CREATE UNIQUE INDEX IF NOT EXISTS ")
                .ident(&format!("{}_{}_key", model.table, f.name))
                .push(" ON ")
                .ident(model.table)
                .push(" (")
                .ident(f.name)
                .push(")");
            out.push(s.text().to_owned());
        }
    }
    out
}

fn relation_statements(rel: &RelationMeta, backend: Backend) -> Vec<String> {
    let id = match backend {
        Backend::Sqlite => "TEXT",
        Backend::Postgres => "TEXT COLLATE \"C\"",
    };
    let mut out = vec![format!(
        "CREATE TABLE IF NOT EXISTS {t} (\"id\" {id} NOT NULL PRIMARY KEY, \
         \"A\" {id} NOT NULL REFERENCES {a} (\"id\") ON DELETE CASCADE, \
         \"B\" {id} NOT NULL REFERENCES {b} (\"id\") ON DELETE CASCADE, \
         UNIQUE (\"A\", \"B\"))",
        t = quote(rel.table),
        a = quote(rel.a),
        b = quote(rel.b),
    )];
    // A to-one field on side A means each A node has at most one partner, and vice versa.
    for (column, to_one) in [("A", !rel.a_list), ("B", !rel.b_list)] {
        let unique = if to_one { "UNIQUE " } else { "" };
        out.push(format!(
            "CREATE {unique}INDEX IF NOT EXISTS {} ON {} (\"{column}\")",
            quote(&format!("{}_{column}", rel.table)),
            quote(rel.table),
        ));
    }
    out
}

/// The column type of a field in each dialect. Strings compare case-insensitively, as in the
/// reference (`COLLATE NOCASE` on SQLite, `citext` on PostgreSQL); lists and Json are JSON text.
pub fn column_type(field: &FieldMeta, backend: Backend) -> &'static str {
    if field.list {
        return "TEXT";
    }
    match (field.kind, backend) {
        (Kind::String, Backend::Sqlite) => "TEXT COLLATE NOCASE",
        (Kind::String, Backend::Postgres) => "CITEXT",
        (Kind::Int, _) => "INTEGER",
        (Kind::Float, Backend::Sqlite) => "REAL",
        (Kind::Float, Backend::Postgres) => "DOUBLE PRECISION",
        (Kind::Boolean, Backend::Sqlite) => "INTEGER",
        (Kind::Boolean, Backend::Postgres) => "BOOLEAN",
        (Kind::DateTime, Backend::Sqlite) => "TEXT",
        (Kind::DateTime, Backend::Postgres) => "TIMESTAMPTZ(3)",
        // Ids compare byte-wise on both databases, so id order (the default order and the
        // pagination tie-break) is the same everywhere.
        (Kind::Id, Backend::Postgres) => "TEXT COLLATE \"C\"",
        (Kind::Id | Kind::Json | Kind::Enum | Kind::Relation, _) => "TEXT",
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The value stored under `key` in the meta table; `candidate` is stored first when the key has
/// none, so every instance on one database reads the value the first one stored.
pub async fn meta_value(
    db: &super::Db,
    key: &str,
    candidate: String,
) -> Result<String, sea_orm::DbErr> {
    use sea_orm::ConnectionTrait;
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
    let mut select = db.sql();
    select
        .push("SELECT \"value\" FROM ")
        .ident(META_TABLE)
        .push(" WHERE \"key\" = ")
        .bind(key.into());
    let row = tx.query_one_raw(select.into_statement()).await?;
    tx.commit().await?;
    match row {
        Some(row) => row.try_get_by_index(0),
        None => Err(sea_orm::DbErr::RecordNotFound(format!(
            "`{key}` in {META_TABLE}"
        ))),
    }
}
