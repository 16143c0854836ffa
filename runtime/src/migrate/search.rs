//! The indexes behind the substring filters (`_contains`, `_starts_with`, `_ends_with`) of
//! `@search` fields, made with a model's table and kept by every migration after its steps.
//!
//! On PostgreSQL each such field gets a GIN trigram index (`pg_trgm`) over the column's text,
//! `(("f")::text) gin_trgm_ops`: the expression the filters compare (`"t0"."f"::text ILIKE …`,
//! `query/filter/render.rs`), so the planner can use it for any pattern of three characters or
//! more, wherever it costs less than reading the table. The extension is created by the first
//! migration that makes such an index.
//!
//! SQLite gets no index (docs/decisions.md, "Substring indexes"): its scan with `LIKE` costs a
//! tenth of PostgreSQL's `ILIKE` per row, and an FTS5 trigram table did not beat it.

use std::collections::BTreeSet;

use super::schema::{Model, Schema};
use crate::storage::Backend;
use crate::storage::layout::{identifier, quote};

/// Creates `pg_trgm` unless it is installed (in whichever schema).
const PG_TRGM: &str = "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') \
     THEN CREATE EXTENSION pg_trgm; END IF; END $$";

/// The name of the trigram index of the field `field` of the model table `table`.
pub fn index_name(table: &str, field: &str) -> String {
    identifier(format!("_svc_search_{table}_{field}"))
}

/// The statements that make the indexes of `model`, whose table was just created.
pub fn create(model: &Model, backend: Backend) -> Vec<String> {
    let searched = model.searched();
    if backend != Backend::Postgres || searched.is_empty() {
        return Vec::new();
    }
    let mut out = vec![PG_TRGM.to_owned()];
    out.extend(searched.iter().map(|f| index(&model.name, f)));
    out
}

/// In a rename step: the index's new name (`None` on SQLite).
pub fn rename(
    backend: Backend,
    (model_from, field_from): (&str, &str),
    (model_to, field_to): (&str, &str),
) -> Option<String> {
    (backend == Backend::Postgres).then(|| {
        format!(
            "ALTER INDEX IF EXISTS {} RENAME TO {}",
            quote(&index_name(model_from, field_from)),
            quote(&index_name(model_to, field_to))
        )
    })
}

/// What a plan's steps leave to do, run after them: the indexes of the fields that gained
/// `@search` are made, those of the fields that lost it dropped. `old` is the stored schema with
/// the plan's renames made (the rename steps rename the indexes); dropped columns and tables took
/// their indexes along.
pub fn after(old: &Schema, new: &Schema, backend: Backend) -> Vec<String> {
    if backend != Backend::Postgres {
        return Vec::new();
    }
    let had = searched_fields(old);
    let want = searched_fields(new);
    let mut out: Vec<String> = had
        .difference(&want)
        .map(|(m, f)| format!("DROP INDEX IF EXISTS {}", quote(&index_name(m, f))))
        .collect();
    let added: Vec<String> = want.difference(&had).map(|(m, f)| index(m, f)).collect();
    if !added.is_empty() {
        out.push(PG_TRGM.to_owned());
        out.extend(added);
    }
    out
}

fn searched_fields(schema: &Schema) -> BTreeSet<(&str, &str)> {
    schema
        .models
        .iter()
        .flat_map(|m| m.searched().into_iter().map(|f| (m.name.as_str(), f)))
        .collect()
}

fn index(model: &str, field: &str) -> String {
    format!(
        "CREATE INDEX IF NOT EXISTS {} ON {} USING gin (({}::text) gin_trgm_ops)",
        quote(&index_name(model, field)),
        quote(model),
        quote(field)
    )
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
    fn indexes_follow_the_search_fields_on_postgresql_only() {
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
        assert!(after(&plain, &searched, Backend::Sqlite).is_empty());
        assert!(create(&searched.models[0], Backend::Sqlite).is_empty());
        assert_eq!(create(&searched.models[0], Backend::Postgres)[1], made[1]);
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
