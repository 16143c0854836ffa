//! Tables, indexes and join tables for a model (created at first start, changed by
//! the migrations).
//!
//! Layout (the one the reference describes): one table per model named like the model, with `id`
//! as primary key, `createdAt`, `updatedAt` and one column per scalar or enum field; one join
//! table per relation (`A`, `B`, primary key `(A, B)`, cascading foreign keys, and a unique
//! column on each side whose field is to-one, so the database enforces the cardinality). The
//! reference's join tables also have an `id` per edge, which nothing reads; ours have none
//! (databases made with one lose it: `migrate/joins.rs`).

use super::schema::{Field, Model, Relation, Schema};
use crate::model::Kind;
use crate::storage::bookkeeping::{EVENT_TABLE, META_TABLE, ROOT_TOKEN_TABLE, setup_lock};
pub use crate::storage::layout::lowers;
use crate::storage::layout::quote;
use crate::storage::{Backend, Sql};

/// The statements that create the service's own tables (and, on PostgreSQL, take the set-up
/// lock and install `citext`); each is idempotent.
pub fn base_statements(backend: Backend) -> Vec<String> {
    // Services starting at the same moment in one database take turns (the lock is held until
    // the set-up transaction ends).
    let mut out: Vec<String> = setup_lock(backend).into_iter().collect();
    if backend == Backend::Postgres {
        // An installed extension is never re-created.
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
    if backend == Backend::Postgres {
        // Events too large for a notification (`events/postgres.rs`).
        out.push(format!(
            "CREATE TABLE IF NOT EXISTS {} (\"id\" TEXT NOT NULL PRIMARY KEY, \
             \"payload\" TEXT NOT NULL, \"createdAt\" TIMESTAMPTZ NOT NULL DEFAULT now())",
            quote(EVENT_TABLE)
        ));
    }
    // `createdAt` is text in the API's format on both databases (only the server reads it).
    out.push(format!(
        "CREATE TABLE IF NOT EXISTS {} (\"id\" {} NOT NULL PRIMARY KEY, \
         \"name\" TEXT NOT NULL UNIQUE, \"token\" TEXT NOT NULL, \"createdAt\" TEXT NOT NULL)",
        quote(ROOT_TOKEN_TABLE),
        id_type(backend)
    ));
    out.extend(crate::storage::outbox::create_statements(backend));
    out
}

/// The statements that create everything `schema` needs; each is idempotent.
pub fn create_statements(schema: &Schema, backend: Backend) -> Vec<String> {
    let mut out = Vec::new();
    for model in &schema.models {
        out.push(create_table(model, &model.name, backend));
        out.extend(index_statements(model, backend));
        out.extend(super::search::create(model, backend));
    }
    for rel in &schema.relations {
        out.extend(relation_statements(rel, backend));
    }
    out
}

fn id_type(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "TEXT",
        Backend::Postgres => "TEXT COLLATE \"C\"",
    }
}

/// `CREATE TABLE IF NOT EXISTS "<table>" (…)` with the columns of `model`.
pub fn create_table(model: &Model, table: &str, backend: Backend) -> String {
    let mut sql = Sql::new(backend);
    sql.push("CREATE TABLE IF NOT EXISTS ")
        .ident(table)
        .push(" (");
    let id = model.id().to_owned();
    sql.join(model.fields.iter(), ", ", |s, f| {
        s.ident(&f.name)
            .push(" ")
            .push(column_type(f.kind, f.list, backend));
        if f.name == id {
            s.push(" NOT NULL PRIMARY KEY");
        } else if f.system {
            s.push(" NOT NULL");
        }
    });
    sql.push(")");
    sql.text().to_owned()
}

/// The name of the unique index of a field.
pub fn unique_index(model: &str, field: &str) -> String {
    format!("{model}_{field}_key")
}

/// The unique indexes of `model`'s unique fields (the id is the primary key).
pub fn index_statements(model: &Model, backend: Backend) -> Vec<String> {
    let id = model.id();
    model
        .fields
        .iter()
        .filter(|f| f.unique && f.name != id)
        .map(|f| unique_index_of(&model.name, f, backend))
        .collect()
}

/// [`unique_index_statement`] of the unique field `field` of `model`, in the form its kind
/// wants on `backend` ([`lowers`]).
pub fn unique_index_of(model: &str, field: &Field, backend: Backend) -> String {
    let lowered = lowers(field.kind, field.list, backend);
    unique_index_statement(model, &field.name, lowered, backend)
}

/// `CREATE UNIQUE INDEX IF NOT EXISTS` over one column, or over its lowered text ([`lowers`]).
/// On PostgreSQL the index holds only the rows that have a value (`WHERE "f" IS NOT NULL`):
/// nulls never conflict, so uniqueness is the same, and a row written without one (every
/// version of it: an update that is not HOT adds an entry to every index) costs the index
/// nothing. Every query that searches it compares the field with `=` or `IN`, which the planner
/// knows holds only for values that are not null. SQLite keeps whole indexes: it walks one for
/// an `ORDER BY` of the field, which a partial index cannot serve (PostgreSQL orders nulls
/// first, against its B-trees' order, so never does).
pub fn unique_index_statement(model: &str, field: &str, lowered: bool, backend: Backend) -> String {
    let column = match lowered {
        true => format!("lower({}::text)", quote(field)),
        false => quote(field),
    };
    let only_values = match backend {
        Backend::Postgres => format!(" WHERE {} IS NOT NULL", quote(field)),
        Backend::Sqlite => String::new(),
    };
    format!(
        "CREATE UNIQUE INDEX IF NOT EXISTS {} ON {} ({column}){only_values}",
        quote(&unique_index(model, field)),
        quote(model)
    )
}

/// `ALTER INDEX … RENAME TO …` on PostgreSQL, which keeps an index through renames of its table
/// and column; SQLite has no such statement, so its index is dropped and made again.
pub fn rename_unique_index(
    backend: Backend,
    (model, field): (&str, &str),
    (to_model, to_field): (&str, &str),
) -> Vec<String> {
    let from = quote(&unique_index(model, field));
    match backend {
        Backend::Postgres => vec![format!(
            "ALTER INDEX IF EXISTS {from} RENAME TO {}",
            quote(&unique_index(to_model, to_field))
        )],
        Backend::Sqlite => vec![
            format!("DROP INDEX IF EXISTS {from}"),
            unique_index_statement(to_model, to_field, false, Backend::Sqlite),
        ],
    }
}

/// The join table of a relation and the indexes of its two columns.
pub fn relation_statements(rel: &Relation, backend: Backend) -> Vec<String> {
    let mut out = vec![join_table(rel, &rel.table, backend)];
    for (column, to_one) in relation_columns(rel) {
        out.extend(relation_index_statement(rel, column, to_one));
    }
    out
}

/// `CREATE TABLE IF NOT EXISTS "<table>"` for the edges of `rel`: the pair `(A, B)` is the
/// primary key, and on SQLite the table itself (`WITHOUT ROWID`), so an edge is written to two
/// B-trees (the table and the index of `B`) instead of four (docs/benchmarks.md).
pub fn join_table(rel: &Relation, table: &str, backend: Backend) -> String {
    let id = id_type(backend);
    format!(
        "CREATE TABLE IF NOT EXISTS {t} (\
         \"A\" {id} NOT NULL REFERENCES {a} (\"id\") ON DELETE CASCADE, \
         \"B\" {id} NOT NULL REFERENCES {b} (\"id\") ON DELETE CASCADE, \
         PRIMARY KEY (\"A\", \"B\")){rowid}",
        t = quote(table),
        a = quote(&rel.a),
        b = quote(&rel.b),
        rowid = match backend {
            Backend::Sqlite => " WITHOUT ROWID",
            Backend::Postgres => "",
        },
    )
}

/// Each join column and whether it is unique: a to-one field on side A means each A node has at
/// most one partner, and vice versa.
pub fn relation_columns(rel: &Relation) -> [(&'static str, bool); 2] {
    [("A", !rel.a_list), ("B", !rel.b_list)]
}

/// The index of one join column, unique when that side is to-one. Column `A` gets none when it
/// is not unique: the primary key (`A`, `B`) serves look-ups by `A`, its leading column, and
/// a second index on it only made every edge written update one more B-tree (an NDF import's
/// edges on SQLite: 179 000 → 253 000 per second without it; docs/benchmarks.md).
pub fn relation_index_statement(rel: &Relation, column: &str, unique: bool) -> Option<String> {
    (unique || column != "A").then(|| {
        format!(
            "CREATE {}INDEX IF NOT EXISTS {} ON {} (\"{column}\")",
            if unique { "UNIQUE " } else { "" },
            quote(&relation_index(rel, column)),
            quote(&rel.table),
        )
    })
}

/// The indexes that databases made before [`relation_index_statement`] left one out hold and
/// `schema` does not want: the index of each join column `A` that is not unique.
pub fn redundant_indexes(schema: &Schema) -> Vec<String> {
    schema
        .relations
        .iter()
        .flat_map(|rel| {
            relation_columns(rel)
                .into_iter()
                .filter(|&(column, unique)| relation_index_statement(rel, column, unique).is_none())
                .map(move |(column, _)| relation_index(rel, column))
        })
        .collect()
}

/// The name of a join column's index.
pub fn relation_index(rel: &Relation, column: &str) -> String {
    format!("{}_{column}", rel.table)
}

/// The column type of a field in each dialect. Strings compare case-insensitively, as in the
/// reference (`COLLATE NOCASE` on SQLite, `citext` on PostgreSQL); lists and Json are JSON text.
pub fn column_type(kind: Kind, list: bool, backend: Backend) -> &'static str {
    if list {
        return "TEXT";
    }
    match (kind, backend) {
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
