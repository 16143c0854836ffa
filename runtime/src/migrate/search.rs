//! The indexes behind the substring filters (`_contains`, `_starts_with`, `_ends_with`) of
//! `@search` fields, made with a model's table and kept by every migration after its steps.
//!
//! On PostgreSQL each such field gets a GIN trigram index (`pg_trgm`) over the column's text,
//! `(("f")::text) gin_trgm_ops`: the expression the filters compare (`"t0"."f"::text ILIKE …`,
//! `query/filter/render.rs`), so the planner can use it for any pattern of three characters or
//! more, wherever it costs less than reading the table. The extension is created by the first
//! migration that makes such an index.
//!
//! On SQLite each gets a B-tree index over the column, which is `TEXT COLLATE NOCASE`, so the
//! index is in the order `LIKE` compares in (docs/decisions.md, "Substring indexes"): a
//! `_starts_with` is a range of it (SQLite's LIKE optimization), a count of `_contains` or
//! `_ends_with` reads it instead of the table's rows, and an order by the field walks it. No
//! SQLite index finds a substring in the middle of a text: an FTS5 trigram table was tried and
//! did not beat the scan. SQLite renames no index, so a rename makes the index again under its
//! new name, and a table that a migration rebuilds gets its indexes again after the steps
//! ([`after`] makes every one that is missing). A database that lacks one (made before SQLite
//! had them, or dropped by hand) gets it at the next start (`upgrade`).

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, DatabaseTransaction};

use super::schema::{Model, Schema};
use super::{MigrationError, held_indexes};
use crate::storage::Backend;
use crate::storage::layout::{identifier, quote};

/// Creates `pg_trgm` unless it is installed (in whichever schema).
const PG_TRGM: &str = "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') \
     THEN CREATE EXTENSION pg_trgm; END IF; END $$";

/// The name of the index of the `@search` field `field` of the model table `table`.
pub fn index_name(table: &str, field: &str) -> String {
    identifier(format!("_svc_search_{table}_{field}"))
}

/// The statements that make the indexes of `model`, whose table was just created.
pub fn create(model: &Model, backend: Backend) -> Vec<String> {
    let searched = model.searched();
    if searched.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if backend == Backend::Postgres {
        out.push(PG_TRGM.to_owned());
    }
    out.extend(searched.iter().map(|f| index(&model.name, f, backend)));
    out
}

/// In a rename step: the index under its new name (PostgreSQL renames it; SQLite, which cannot,
/// drops it and makes it again on the renamed table and column).
pub fn rename(
    backend: Backend,
    (model_from, field_from): (&str, &str),
    (model_to, field_to): (&str, &str),
) -> Vec<String> {
    let from = quote(&index_name(model_from, field_from));
    match backend {
        Backend::Postgres => vec![format!(
            "ALTER INDEX IF EXISTS {from} RENAME TO {}",
            quote(&index_name(model_to, field_to))
        )],
        Backend::Sqlite => vec![
            format!("DROP INDEX IF EXISTS {from}"),
            index(model_to, field_to, backend),
        ],
    }
}

/// What a plan's steps leave to do, run after them: the indexes of the fields that gained
/// `@search` are made, those of the fields that lost it dropped. `old` is the stored schema with
/// the plan's renames made (the rename steps rename the indexes); dropped columns and tables took
/// their indexes along. On SQLite every index of `new` is made where it is missing, since a
/// table the steps rebuilt lost its indexes.
pub fn after(old: &Schema, new: &Schema, backend: Backend) -> Vec<String> {
    let had = searched_fields(old);
    let want = searched_fields(new);
    let mut out: Vec<String> = had
        .difference(&want)
        .map(|(m, f)| format!("DROP INDEX IF EXISTS {}", quote(&index_name(m, f))))
        .collect();
    match backend {
        Backend::Postgres => {
            let added: Vec<String> = want
                .difference(&had)
                .map(|(m, f)| index(m, f, backend))
                .collect();
            if !added.is_empty() {
                out.push(PG_TRGM.to_owned());
                out.extend(added);
            }
        }
        Backend::Sqlite => out.extend(want.iter().map(|(m, f)| index(m, f, backend))),
    }
    out
}

/// Makes the indexes of `schema`'s `@search` fields that the database lacks (on SQLite, one made
/// before SQLite had them; on either, one dropped by hand); whether it made any.
pub(super) async fn upgrade(
    tx: &DatabaseTransaction,
    schema: &Schema,
    backend: Backend,
) -> Result<bool, MigrationError> {
    let want = searched_fields(schema);
    if want.is_empty() {
        return Ok(false);
    }
    let held = held_indexes(tx, backend).await?;
    let missing: Vec<String> = want
        .iter()
        .filter(|(m, f)| !held.contains(&index_name(m, f)))
        .map(|(m, f)| index(m, f, backend))
        .collect();
    if missing.is_empty() {
        return Ok(false);
    }
    let extension = (backend == Backend::Postgres).then(|| PG_TRGM.to_owned());
    for statement in extension.into_iter().chain(missing) {
        tx.execute_unprepared(&statement)
            .await
            .map_err(|e| MigrationError::failed(&statement, e))?;
    }
    Ok(true)
}

fn searched_fields(schema: &Schema) -> BTreeSet<(&str, &str)> {
    schema
        .models
        .iter()
        .flat_map(|m| m.searched().into_iter().map(|f| (m.name.as_str(), f)))
        .collect()
}

fn index(model: &str, field: &str, backend: Backend) -> String {
    let (name, table, column) = (quote(&index_name(model, field)), quote(model), quote(field));
    match backend {
        Backend::Postgres => format!(
            "CREATE INDEX IF NOT EXISTS {name} ON {table} USING gin (({column}::text) gin_trgm_ops)"
        ),
        Backend::Sqlite => format!("CREATE INDEX IF NOT EXISTS {name} ON {table} ({column})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema(search: bool) -> Schema {
        serde_json::from_value(serde_json::json!({
            "format": 1,
            "models": [{ "name": "Post", "relation_fields": [], "fields": [
                { "name": "id", "kind": "Id", "list": false, "required": true, "unique": true,
                  "system": true, "default": null, "enum_values": [] },
                { "name": "title", "kind": "String", "list": false, "required": true,
                  "unique": false, "search": search, "system": false, "default": null,
                  "enum_values": [] },
            ] }],
            "relations": [],
        }))
        .expect("a schema")
    }

    #[test]
    fn indexes_follow_the_search_fields() {
        let (plain, searched) = (schema(false), schema(true));
        let made = after(&plain, &searched, Backend::Postgres);
        assert_eq!(made.len(), 2, "{made:?}");
        assert_eq!(made[0], PG_TRGM);
        assert_eq!(
            made[1],
            r#"CREATE INDEX IF NOT EXISTS "_svc_search_Post_title" ON "Post" USING gin (("title"::text) gin_trgm_ops)"#
        );
        assert_eq!(
            after(&searched, &plain, Backend::Postgres),
            [r#"DROP INDEX IF EXISTS "_svc_search_Post_title""#]
        );
        assert!(after(&searched, &searched, Backend::Postgres).is_empty());
        assert_eq!(create(&searched.models[0], Backend::Postgres)[1], made[1]);

        let sqlite = r#"CREATE INDEX IF NOT EXISTS "_svc_search_Post_title" ON "Post" ("title")"#;
        assert_eq!(after(&plain, &searched, Backend::Sqlite), [sqlite]);
        // A table the steps rebuilt lost its indexes: they are made again where missing.
        assert_eq!(after(&searched, &searched, Backend::Sqlite), [sqlite]);
        assert_eq!(
            after(&searched, &plain, Backend::Sqlite),
            [r#"DROP INDEX IF EXISTS "_svc_search_Post_title""#]
        );
        assert!(after(&plain, &plain, Backend::Sqlite).is_empty());
        assert_eq!(create(&searched.models[0], Backend::Sqlite), [sqlite]);
        assert!(create(&plain.models[0], Backend::Sqlite).is_empty());
        assert_eq!(
            rename(Backend::Sqlite, ("Post", "title"), ("Article", "heading")),
            [
                r#"DROP INDEX IF EXISTS "_svc_search_Post_title""#,
                r#"CREATE INDEX IF NOT EXISTS "_svc_search_Article_heading" ON "Article" ("heading")"#
            ]
        );
    }

    #[test]
    fn a_stored_schema_without_search_reads_as_none_and_writes_none() {
        let plain = schema(false);
        let text = serde_json::to_string(&plain).expect("json");
        assert!(!text.contains("search"), "{text}");
        let mut value = serde_json::to_value(&plain).expect("json");
        value["models"][0]["fields"][1]
            .as_object_mut()
            .expect("a field")
            .remove("search");
        assert_eq!(
            serde_json::from_value::<Schema>(value).expect("read"),
            plain
        );
    }
}
