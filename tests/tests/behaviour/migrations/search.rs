//! The indexes of `@search` fields through migrations (PostgreSQL's trigram indexes, SQLite's
//! B-trees over the column): made when a field gains `@search`, from the rows already there, kept
//! through a change that rebuilds SQLite's table and through renames of the type and the field,
//! dropped when the field loses `@search`, made at the start of a database that lacks them; the
//! values stay and the filters' expression finds them. On SQLite, the server's counts of
//! substring filters read the index, and a `_starts_with` is a range of it.

use sea_orm::ConnectionTrait;
use svc_runtime::migrate::schema::{Field, Schema};
use svc_runtime::migrate::{Hints, Options, Outcome};
use svc_runtime::model::Kind;
use svc_runtime::query::Cond;
use svc_runtime::query::filter::LikeKind;
use svc_runtime::query::select::count_sql;
use svc_runtime::storage::{Backend, Db};

use super::{
    field, insert_user, migrate_to, migrate_with, model, open, post, required, schema, texts,
    timestamp,
};

fn searched(mut f: Field) -> Field {
    f.search = true;
    f
}

/// `<type> { name: String!, <text>: String }`, `text` indexed when `search`.
fn people(name: &str, text: &str, search: bool, extra: Vec<Field>) -> Schema {
    let text = if search {
        searched(field(text, Kind::String))
    } else {
        field(text, Kind::String)
    };
    let mut fields = vec![
        required(field("name", Kind::String)),
        field("age", Kind::Int),
        text,
    ];
    fields.extend(extra);
    schema(vec![model(name, fields, vec![])], vec![])
}

/// The ids of the nodes of `table` whose `column` contains `text` (case-insensitively), by the
/// expression the filters compare on each database.
async fn found(db: &Db, table: &str, column: &str, text: &str) -> Vec<String> {
    let sql = match db.backend() {
        Backend::Sqlite => {
            format!(r#"SELECT "id" FROM "{table}" WHERE "{column}" LIKE '%{text}%' ORDER BY "id""#)
        }
        Backend::Postgres => format!(
            r#"SELECT "id" FROM "{table}" WHERE "{column}"::text ILIKE '%{text}%' ORDER BY "id""#
        ),
    };
    texts(db, &sql).await.into_iter().flatten().collect()
}

/// The search indexes the database holds, `<name>: <definition>`.
async fn objects(db: &Db) -> Vec<String> {
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT name || ': ' || sql FROM sqlite_master WHERE name LIKE '%search%' ORDER BY name"
        }
        Backend::Postgres => {
            "SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE schemaname = current_schema() \
             AND indexname LIKE '\\_svc\\_search%' ORDER BY indexname"
        }
    };
    texts(db, sql).await.into_iter().flatten().collect()
}

/// The names of [`objects`].
async fn names(db: &Db) -> Vec<String> {
    objects(db)
        .await
        .iter()
        .map(|o| o.split(':').next().unwrap_or_default().to_owned())
        .collect()
}

/// What the index of `field` of `table` is over, as the database shows its definition.
fn definition(db: &Db, table: &str, field: &str) -> String {
    match db.backend() {
        Backend::Sqlite => format!(r#"ON "{table}" ("{field}")"#),
        Backend::Postgres => format!("USING gin ((({field})::text) gin_trgm_ops)"),
    }
}

async fn set_text(db: &Db, table: &str, column: &str, id: &str, text: &str) {
    db.execute_script(&[format!(
        r#"UPDATE "{table}" SET "{column}" = '{text}' WHERE "id" = '{id}'"#
    )])
    .await
    .unwrap_or_else(|e| panic!("update: {e}"));
}

db_cases! {
    async fn search_indexes_follow_the_model(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let v1 = people("User", "bio", false, vec![]);
        migrate_to(&db, &v1, Options::default()).await.expect("v1");
        assert!(names(&db).await.is_empty());
        insert_user(&db, "u1", "Ada", None).await;
        insert_user(&db, "u2", "Bob", None).await;
        set_text(&db, "User", "bio", "u1", "likes GraphQL").await;
        set_text(&db, "User", "bio", "u2", "likes Rust").await;

        // The field gains `@search`: no column changes, the index is made from the rows.
        let v2 = people("User", "bio", true, vec![]);
        let planned = migrate_to(&db, &v2, Options { dry_run: true, force: false }).await;
        let Ok(Outcome::Planned(plan)) = planned else { panic!("{planned:?}") };
        assert_eq!(plan.lines(), ["Change the field `User.bio`: now indexed for substring filters (`@search`)"]);
        assert!(names(&db).await.is_empty(), "a dry run makes nothing");
        assert!(matches!(migrate_to(&db, &v2, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(migrate_to(&db, &v2, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(names(&db).await, ["_svc_search_User_bio"]);
        let made = objects(&db).await;
        assert!(made[0].contains(&definition(&db, "User", "bio")), "{made:?}");
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u1"]);

        // Rows written by any statement are found, updated and removed.
        insert_user(&db, "u3", "Cy", None).await;
        set_text(&db, "User", "bio", "u3", "GraphQL fan").await;
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u1", "u3"]);
        set_text(&db, "User", "bio", "u1", "nothing").await;
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u3"]);
        let now = timestamp(&db);
        db.execute_script(&[
            r#"DELETE FROM "User" WHERE "id" = 'u3'"#.to_owned(),
            format!(r#"INSERT INTO "User" ("id", "createdAt", "updatedAt", "name", "bio") VALUES ('u4', {now}, {now}, 'Di', 'graphql too')"#),
        ]).await.expect("writes");
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u4"]);

        // A change that rebuilds SQLite's table (and alters PostgreSQL's) keeps the index.
        let mut score = required(field("score", Kind::Int));
        score.default = Some(serde_json::json!(0));
        let v3 = people("User", "bio", true, vec![score.clone()]);
        assert!(matches!(migrate_to(&db, &v3, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u4"]);
        set_text(&db, "User", "bio", "u2", "GraphQL now").await;
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u2", "u4"]);
        assert_eq!(names(&db).await, ["_svc_search_User_bio"]);

        // Renamed type and field: the objects follow the new names, the old ones are gone.
        let v4 = people("Person", "about", true, vec![score.clone()]);
        let hints = Hints {
            models: vec![("Person".into(), "User".into())],
            fields: vec![("Person".into(), "about".into(), "bio".into())],
            ..Hints::default()
        };
        assert!(matches!(migrate_with(&db, &v4, &hints, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(names(&db).await, ["_svc_search_Person_about"]);
        let made = objects(&db).await;
        assert!(made[0].contains(&definition(&db, "Person", "about")), "{made:?}");
        assert_eq!(found(&db, "Person", "about", "graphql").await, ["u2", "u4"]);
        set_text(&db, "Person", "about", "u4", "plain").await;
        assert_eq!(found(&db, "Person", "about", "graphql").await, ["u2"]);

        // The field loses `@search`: everything made for it goes.
        let v5 = people("Person", "about", false, vec![score]);
        let applied = migrate_to(&db, &v5, Options::default()).await;
        let Ok(Outcome::Applied(plan)) = applied else { panic!("{applied:?}") };
        assert_eq!(plan.lines(), ["Change the field `Person.about`: no longer indexed for substring filters"]);
        assert!(names(&db).await.is_empty(), "{:?}", objects(&db).await);
        let rows = texts(&db, r#"SELECT "id" FROM "Person" ORDER BY "id""#).await;
        assert_eq!(rows, [Some("u1".to_owned()), Some("u2".to_owned()), Some("u4".to_owned())]);
    }

    /// A new database gets the indexes of its `@search` fields with its tables.
    async fn a_new_database_gets_its_search_indexes(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let v = people("User", "bio", true, vec![]);
        assert_eq!(migrate_to(&db, &v, Options::default()).await, Ok(Outcome::Created));
        insert_user(&db, "u1", "Ada", None).await;
        set_text(&db, "User", "bio", "u1", "GraphQL").await;
        assert_eq!(found(&db, "User", "bio", "aphq").await, ["u1"]);
        assert_eq!(names(&db).await, ["_svc_search_User_bio"]);
    }

    /// A database whose `@search` field has no index (SQLite's, made before SQLite had them) gets
    /// it at the next start, where the stored model is the compiled one already.
    async fn a_missing_search_index_is_made_at_the_next_start(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let v = people("User", "bio", true, vec![]);
        assert_eq!(migrate_to(&db, &v, Options::default()).await, Ok(Outcome::Created));
        insert_user(&db, "u1", "Ada", None).await;
        set_text(&db, "User", "bio", "u1", "GraphQL").await;
        db.execute_script(&[r#"DROP INDEX "_svc_search_User_bio""#.to_owned()])
            .await
            .expect("drop");
        assert!(names(&db).await.is_empty());
        assert_eq!(migrate_to(&db, &v, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(names(&db).await, ["_svc_search_User_bio"]);
        assert_eq!(found(&db, "User", "bio", "graphql").await, ["u1"]);
    }

    /// On SQLite, the counts of `_contains` and `_ends_with` on an `@search` field read its
    /// index instead of the table's rows, and a `_starts_with` is a range of it, as the
    /// server's own statements are written (`count_sql`), with `%`, `_` and `\` in the text.
    async fn sqlite_substring_counts_read_the_search_index(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        if db.backend() != Backend::Sqlite {
            return;
        }
        let compiled = Schema::of(<example_model::Service as svc_runtime::ServiceDef>::META);
        migrate_to(&db, &compiled, Options::default()).await.expect("the example model");
        let post = post();
        let title = post.fields.iter().position(|f| f.name == "title").expect("title");
        let like = |kind, text: &str| Cond::Like { field: title, kind, text: text.to_owned(), negate: false };
        let index = "USING COVERING INDEX _svc_search_Post_title";
        let range = format!("{index} (title>? AND title<?)");
        for (kind, text, verb, how) in [
            (LikeKind::Contains, "graphql", "SCAN ", index),
            (LikeKind::EndsWith, "50%_\\", "SCAN ", index),
            (LikeKind::StartsWith, "Graph", "SEARCH ", range.as_str()),
            (LikeKind::StartsWith, "50%_\\x", "SEARCH ", range.as_str()),
        ] {
            // `SCAN <table or alias> USING …`: one line, the table read through the index only.
            let plan = query_plan(&db, count_sql(Backend::Sqlite, post, Some(&like(kind, text)))).await;
            assert!(plan.starts_with(verb) && plan.ends_with(how) && !plan.contains('\n'), "{kind:?} {text:?}: {plan}");
        }
    }
}

/// SQLite's `EXPLAIN QUERY PLAN` of `sql`, its lines' details joined.
async fn query_plan(db: &Db, sql: svc_runtime::storage::Sql) -> String {
    let mut statement = sql.into_statement();
    statement.sql = format!("EXPLAIN QUERY PLAN {}", statement.sql);
    let rows = db.reader().query_all_raw(statement).await.expect("explain");
    rows.iter()
        .map(|r| r.try_get::<String>("", "detail").expect("a plan line"))
        .collect::<Vec<_>>()
        .join("\n")
}
