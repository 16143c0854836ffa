//! Schema migrations (reference §1.9, migration part) on real SQLite files and PostgreSQL
//! schemas: the stored schema is compared with a target and the difference applied in one
//! transaction. Every refused or failed migration is checked to have changed nothing: neither
//! the tables, nor the data, nor the stored schema.

use sea_orm::ConnectionTrait;
use serde_json::json;
use svc_runtime::migrate::schema::{Field, Model, RelField, Relation};
use svc_runtime::migrate::{self, DESTRUCTIVE, Hints, MigrationError, Options, Outcome, Schema};
use svc_runtime::model::{Kind, ModelMeta};
use svc_runtime::storage::Db;

use crate::support::TestDatabase;

mod search;
mod unique;

pub(crate) fn field(name: &str, kind: Kind) -> Field {
    Field {
        name: name.to_owned(),
        kind,
        list: false,
        required: false,
        unique: false,
        search: false,
        system: false,
        default: None,
        enum_values: Vec::new(),
    }
}

pub(crate) fn required(mut f: Field) -> Field {
    f.required = true;
    f
}

fn system(name: &str, kind: Kind) -> Field {
    Field {
        system: true,
        ..required(field(name, kind))
    }
}

/// A model with `id`, `createdAt`, `updatedAt` and `fields`.
pub(crate) fn model(name: &str, fields: Vec<Field>, relation_fields: Vec<RelField>) -> Model {
    let mut all = vec![
        system("id", Kind::Id),
        system("createdAt", Kind::DateTime),
        system("updatedAt", Kind::DateTime),
    ];
    all.extend(fields);
    Model {
        name: name.to_owned(),
        fields: all,
        relation_fields,
    }
}

pub(crate) fn rel_field(name: &str, relation: &str, list: bool, required: bool) -> RelField {
    RelField {
        name: name.to_owned(),
        relation: relation.to_owned(),
        list,
        required,
    }
}

pub(crate) fn relation(name: &str, a: &str, b: &str, a_list: bool, b_list: bool) -> Relation {
    Relation {
        name: name.to_owned(),
        table: format!("_{name}"),
        a: a.to_owned(),
        b: b.to_owned(),
        a_list,
        b_list,
    }
}

pub(crate) fn schema(models: Vec<Model>, relations: Vec<Relation>) -> Schema {
    Schema {
        format: 1,
        models,
        relations,
    }
}

/// `User { name: String!, age: Int }`.
fn users_v1() -> Schema {
    schema(
        vec![model(
            "User",
            vec![
                required(field("name", Kind::String)),
                field("age", Kind::Int),
            ],
            vec![],
        )],
        vec![],
    )
}

pub(crate) async fn migrate_to(
    db: &Db,
    target: &Schema,
    options: Options,
) -> Result<Outcome, MigrationError> {
    migrate::migrate(db, target, &Hints::default(), options).await
}

pub(crate) async fn migrate_with(
    db: &Db,
    target: &Schema,
    hints: &Hints,
    options: Options,
) -> Result<Outcome, MigrationError> {
    migrate::migrate(db, target, hints, options).await
}

/// The first column of every row of `sql`, as text.
pub(crate) async fn texts(db: &Db, sql: &str) -> Vec<Option<String>> {
    let rows = db
        .reader()
        .query_all_raw(sea_orm::Statement::from_string(
            db.reader().get_database_backend(),
            sql.to_owned(),
        ))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows.iter()
        .map(|r| {
            r.try_get_by_index::<Option<String>>(0)
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        })
        .collect()
}

/// The column names of a table, sorted.
async fn columns(db: &Db, table: &str) -> Vec<String> {
    let sql = match db.backend() {
        svc_runtime::storage::Backend::Sqlite => {
            format!("SELECT name FROM pragma_table_info('{table}') ORDER BY name")
        }
        svc_runtime::storage::Backend::Postgres => format!(
            "SELECT column_name::text FROM information_schema.columns WHERE table_name = '{table}' AND table_schema = current_schema() ORDER BY column_name"
        ),
    };
    texts(db, &sql).await.into_iter().flatten().collect()
}

/// A `createdAt`/`updatedAt` literal for raw inserts.
pub(crate) fn timestamp(db: &Db) -> &'static str {
    match db.backend() {
        svc_runtime::storage::Backend::Sqlite => "'2026-01-01T00:00:00.000Z'",
        svc_runtime::storage::Backend::Postgres => "'2026-01-01T00:00:00.000Z'::timestamptz",
    }
}

pub(crate) async fn insert_user(db: &Db, id: &str, name: &str, age: Option<i32>) {
    let age = age.map_or("NULL".to_owned(), |a| a.to_string());
    let now = timestamp(db);
    db.execute_script(&[format!(
        "INSERT INTO \"User\" (\"id\", \"createdAt\", \"updatedAt\", \"name\", \"age\") VALUES ('{id}', {now}, {now}, '{name}', {age})"
    )])
    .await
    .unwrap_or_else(|e| panic!("insert: {e}"));
}

pub(crate) async fn open(kind: crate::support::Db) -> Option<(TestDatabase, Db)> {
    let test_db = TestDatabase::create(kind).await?;
    let db = Db::connect(&test_db.url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect: {e}"));
    Some((test_db, db))
}

db_cases! {
    /// A new database gets every table; the same schema again is up to date.
    async fn first_migration_creates_the_tables(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        assert_eq!(migrate_to(&db, &users_v1(), Options::default()).await, Ok(Outcome::Created));
        assert_eq!(migrate_to(&db, &users_v1(), Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(columns(&db, "User").await, ["age", "createdAt", "id", "name", "updatedAt"]);
    }

    /// Adding fields (optional, and required with a default) and changing `Int` to `String` keep
    /// every node and its values; the plan says so in plain words.
    async fn non_destructive_changes_keep_the_data(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        migrate_to(&db, &users_v1(), Options::default()).await.expect("v1");
        insert_user(&db, "u1", "Ada", Some(36)).await;
        insert_user(&db, "u2", "Bob", None).await;
        let mut verified = required(field("verified", Kind::Boolean));
        verified.default = Some(json!(false));
        let v2 = schema(
            vec![model(
                "User",
                vec![
                    required(field("name", Kind::String)),
                    field("age", Kind::String),
                    field("email", Kind::String),
                    verified,
                ],
                vec![],
            )],
            vec![],
        );
        let planned = migrate_to(&db, &v2, Options { dry_run: true, force: false }).await;
        let Ok(Outcome::Planned(plan)) = planned else { panic!("{planned:?}") };
        assert_eq!(plan.lines(), [
            "Change the field `User.age`: Int → String (values converted to text)",
            "Add the field `User.email` (String)",
            "Add the field `User.verified` (Boolean!), set to its default false in existing nodes",
        ]);
        assert_eq!(columns(&db, "User").await, ["age", "createdAt", "id", "name", "updatedAt"], "a dry run changes nothing");
        let applied = migrate_to(&db, &v2, Options::default()).await;
        assert!(matches!(applied, Ok(Outcome::Applied(_))), "{applied:?}");
        let rows = texts(&db, r#"SELECT "id" || ':' || "name" || ':' || COALESCE("age", '-') || ':' || COALESCE("email", '-') || ':' || CAST("verified" AS TEXT) FROM "User" ORDER BY "id""#).await;
        let expected_false = match db.backend() {
            svc_runtime::storage::Backend::Sqlite => "0",
            svc_runtime::storage::Backend::Postgres => "false",
        };
        assert_eq!(rows, [
            Some(format!("u1:Ada:36:-:{expected_false}")),
            Some(format!("u2:Bob:-:-:{expected_false}")),
        ]);
        assert_eq!(migrate_to(&db, &v2, Options::default()).await, Ok(Outcome::UpToDate));
    }

    /// Removing a field is destructive: refused without `force` (the reference's message, with
    /// the plan), shown by a dry run, applied with `force`; the other values stay.
    async fn destructive_changes_need_force(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        migrate_to(&db, &users_v1(), Options::default()).await.expect("v1");
        insert_user(&db, "u1", "Ada", Some(36)).await;
        let v2 = schema(vec![model("User", vec![field("age", Kind::Int)], vec![])], vec![]);
        let refused = migrate_to(&db, &v2, Options::default()).await.expect_err("destructive");
        assert_eq!(refused.message, DESTRUCTIVE);
        assert_eq!(refused.plan.map(|p| p.lines()), Some(vec!["Remove the field `User.name`, with its values (destructive)".to_owned()]));
        // A dry run shows a destructive plan with or without `force`.
        for force in [false, true] {
            let planned = migrate_to(&db, &v2, Options { dry_run: true, force }).await;
            assert!(matches!(&planned, Ok(Outcome::Planned(p)) if p.is_destructive()), "{planned:?}");
        }
        assert_eq!(texts(&db, r#"SELECT "name" FROM "User""#).await, [Some("Ada".to_owned())], "nothing changed");
        let applied = migrate_to(&db, &v2, Options { dry_run: false, force: true }).await;
        assert!(matches!(applied, Ok(Outcome::Applied(_))), "{applied:?}");
        assert_eq!(columns(&db, "User").await, ["age", "createdAt", "id", "updatedAt"]);
        assert_eq!(texts(&db, r#"SELECT CAST("age" AS TEXT) FROM "User""#).await, [Some("36".to_owned())]);
        // Removing the type is destructive too.
        let empty = schema(vec![], vec![]);
        assert_eq!(migrate_to(&db, &empty, Options::default()).await.map_err(|e| e.message), Err(DESTRUCTIVE.to_owned()));
        assert!(matches!(migrate_to(&db, &empty, Options { dry_run: false, force: true }).await, Ok(Outcome::Applied(_))));
        assert_eq!(columns(&db, "User").await, Vec::<String>::new());
    }

    /// A required field without a default, a change to required while nodes lack a value, and a
    /// type change other than to `String` while values exist all fail with 2007 and change
    /// nothing; on an empty table they pass.
    async fn required_fields_need_values(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        migrate_to(&db, &users_v1(), Options::default()).await.expect("v1");
        insert_user(&db, "u1", "Ada", None).await;
        let with = |extra: Field, age: Field| schema(vec![model("User", vec![required(field("name", Kind::String)), age, extra].into_iter().filter(|f| !f.name.is_empty()).collect(), vec![])], vec![]);
        let none = field("", Kind::Int);
        let cases = [
            (with(required(field("email", Kind::String)), field("age", Kind::Int)), "email"),
            (with(none.clone(), required(field("age", Kind::Int))), "age"),
        ];
        for (target, name) in cases {
            let err = migrate_to(&db, &target, Options::default()).await.expect_err("needs a value");
            assert_eq!(err.code, Some(2007), "{err}");
            assert!(err.message.starts_with(&format!("The field `{name}` must specify the `@migrationValue` directive")), "{err}");
            assert_eq!(columns(&db, "User").await, ["age", "createdAt", "id", "name", "updatedAt"]);
        }
        insert_user(&db, "u2", "Bob", Some(3)).await;
        let err = migrate_to(&db, &with(none.clone(), field("age", Kind::Float)), Options::default()).await.expect_err("typed");
        assert_eq!(err.code, Some(2007), "{err}");
        assert_eq!(texts(&db, r#"SELECT CAST("age" AS TEXT) FROM "User" WHERE "id" = 'u2'"#).await, [Some("3".to_owned())]);
        // Once no node holds a value, the type may change.
        db.execute_script(&[r#"UPDATE "User" SET "age" = NULL"#.to_owned()]).await.expect("clear");
        assert!(matches!(migrate_to(&db, &with(none, field("age", Kind::Float)), Options::default()).await, Ok(Outcome::Applied(_))));
    }

    /// A list that becomes a single `String` is a change of type like any other: the plan does
    /// not promise to convert its values, and while a node holds one it needs a migration value
    /// (2007), which every node then gets.
    async fn a_list_changed_to_a_string_needs_a_migration_value(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let with = |tags: Field| schema(vec![model("User", vec![required(field("name", Kind::String)), tags], vec![])], vec![]);
        let mut list = field("tags", Kind::String);
        list.list = true;
        migrate_to(&db, &with(list), Options::default()).await.expect("v1");
        let now = timestamp(&db);
        db.execute_script(&[format!(
            r#"INSERT INTO "User" ("id", "createdAt", "updatedAt", "name", "tags") VALUES ('u1', {now}, {now}, 'Ada', '["a","b"]')"#
        )]).await.expect("a user with tags");
        let text = with(field("tags", Kind::String));
        // A dry run shows the plan with the error a real run would meet.
        for dry_run in [true, false] {
            let err = migrate_to(&db, &text, Options { dry_run, force: false }).await.expect_err("a node holds tags");
            assert_eq!(err.code, Some(2007), "{err}");
            assert_eq!(
                err.plan.map(|p| p.lines()),
                Some(vec!["Change the field `User.tags`: [String!] → String (only possible while no node has a value)".to_owned()])
            );
        }
        let hints = Hints { values: vec![("User".into(), "tags".into(), json!("none"))], ..Hints::default() };
        let planned = migrate_with(&db, &text, &hints, Options { dry_run: true, force: false }).await;
        let Ok(Outcome::Planned(plan)) = planned else { panic!("{planned:?}") };
        assert_eq!(plan.lines(), [r#"Change the field `User.tags`: [String!] → String (every node set to its migration value "none")"#]);
        assert!(matches!(migrate_with(&db, &text, &hints, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(texts(&db, r#"SELECT "tags" FROM "User""#).await, [Some("none".to_owned())]);
    }

    /// Relations: new types and relations are created; a rebuilt table keeps its edges; a
    /// to-many side becomes to-one only when no node has two partners (2031); a required
    /// relation field needs every node to have a partner (2052).
    async fn relation_changes(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let users = |extra: Vec<Field>, posts: RelField| model("User", [vec![required(field("name", Kind::String)), field("age", Kind::Int)], extra].concat(), vec![posts]);
        let posts = |author: RelField| model("Post", vec![required(field("title", Kind::String))], vec![author]);
        let v1 = schema(
            vec![users(vec![], rel_field("posts", "UserPosts", true, false)), posts(rel_field("author", "UserPosts", false, false))],
            vec![relation("UserPosts", "User", "Post", true, false)],
        );
        migrate_to(&db, &v1, Options::default()).await.expect("v1");
        insert_user(&db, "u1", "Ada", None).await;
        let now = timestamp(&db);
        db.execute_script(&[
            format!(r#"INSERT INTO "Post" ("id", "createdAt", "updatedAt", "title") VALUES ('p1', {now}, {now}, 'one'), ('p2', {now}, {now}, 'two'), ('p3', {now}, {now}, 'three')"#),
            r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p1'), ('u1', 'p2')"#.to_owned(),
        ]).await.expect("edges");
        // A field added to User (a table rebuild on SQLite) keeps the edges.
        let v2 = schema(
            vec![users(vec![field("bio", Kind::String)], rel_field("posts", "UserPosts", true, false)), posts(rel_field("author", "UserPosts", false, false))],
            vec![relation("UserPosts", "User", "Post", true, false)],
        );
        assert!(matches!(migrate_to(&db, &v2, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(texts(&db, r#"SELECT "B" FROM "_UserPosts" ORDER BY "B""#).await, [Some("p1".to_owned()), Some("p2".to_owned())]);
        // One post per user: u1 has two.
        let one_to_one = schema(
            vec![users(vec![field("bio", Kind::String)], rel_field("post", "UserPosts", false, false)), posts(rel_field("author", "UserPosts", false, false))],
            vec![relation("UserPosts", "User", "Post", false, false)],
        );
        let err = migrate_to(&db, &one_to_one, Options::default()).await.expect_err("u1 has two posts");
        assert_eq!(err.code, Some(2031), "{err}");
        db.execute_script(&[r#"DELETE FROM "_UserPosts" WHERE "B" = 'p2'"#.to_owned()]).await.expect("unlink");
        assert!(matches!(migrate_to(&db, &one_to_one, Options::default()).await, Ok(Outcome::Applied(_))));
        let second = db.execute_script(&[r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p3')"#.to_owned()]).await;
        assert!(second.is_err(), "the database now holds one post per user");
        // Every post needs an author: p2 and p3 have none.
        let required_author = schema(
            vec![users(vec![field("bio", Kind::String)], rel_field("post", "UserPosts", false, false)), posts(rel_field("author", "UserPosts", false, true))],
            vec![relation("UserPosts", "User", "Post", false, false)],
        );
        let err = migrate_to(&db, &required_author, Options::default()).await.expect_err("authorless posts");
        assert_eq!(err.code, Some(2052), "{err}");
        assert_eq!(err.message, "The relation field `author` cannot be made required, because there are already instances of the enclosing type that violate this constraint.");
        // A new type with a new relation.
        let mut v3 = one_to_one.clone();
        v3.models.push(model("Tag", vec![required(field("label", Kind::String))], vec![rel_field("users", "UserTags", true, false)]));
        v3.models[0].relation_fields.push(rel_field("tags", "UserTags", true, false));
        v3.relations.push(relation("UserTags", "User", "Tag", true, true));
        let applied = migrate_to(&db, &v3, Options::default()).await;
        let Ok(Outcome::Applied(plan)) = applied else { panic!("{applied:?}") };
        assert_eq!(plan.lines(), ["Create the type `Tag`", "Create the relation `UserTags` between `User` and `Tag`"]);
        assert_eq!(columns(&db, "_UserTags").await, ["A", "B"]);
    }

    /// `@rename` of a type and a field, `@relation(oldName:)`, and `@migrationValue` for a field
    /// made required and for a required field added: nothing is lost, edges and unique indexes
    /// follow the renames. Without the hints the same target would remove `User` (destructive).
    async fn renames_and_migration_values(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let mut unique_name = required(field("name", Kind::String));
        unique_name.unique = true;
        let v1 = schema(
            vec![
                model("User", vec![unique_name, field("age", Kind::Int)], vec![rel_field("posts", "UserPosts", true, false)]),
                model("Post", vec![required(field("title", Kind::String))], vec![rel_field("author", "UserPosts", false, false)]),
            ],
            vec![relation("UserPosts", "User", "Post", true, false)],
        );
        migrate_to(&db, &v1, Options::default()).await.expect("v1");
        insert_user(&db, "u1", "Ada", None).await;
        insert_user(&db, "u2", "Bob", Some(3)).await;
        let now = timestamp(&db);
        db.execute_script(&[
            format!(r#"INSERT INTO "Post" ("id", "createdAt", "updatedAt", "title") VALUES ('p1', {now}, {now}, 'one')"#),
            r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p1')"#.to_owned(),
        ]).await.expect("edge");
        let mut full_name = required(field("fullName", Kind::String));
        full_name.unique = true;
        let v2 = schema(
            vec![
                model(
                    "Person",
                    vec![full_name, required(field("age", Kind::Int)), required(field("score", Kind::Int))],
                    vec![rel_field("posts", "Authorship", true, false)],
                ),
                model("Post", vec![required(field("title", Kind::String))], vec![rel_field("author", "Authorship", false, false)]),
            ],
            vec![relation("Authorship", "Person", "Post", true, false)],
        );
        let refused = migrate_to(&db, &v2, Options::default()).await.expect_err("by names alone");
        assert!(refused.is_destructive(), "{refused}");
        let hints = Hints {
            models: vec![("Person".into(), "User".into())],
            fields: vec![("Person".into(), "fullName".into(), "name".into())],
            relations: vec![("Authorship".into(), "UserPosts".into())],
            values: vec![("Person".into(), "age".into(), json!(18)), ("Person".into(), "score".into(), json!(5))],
        };
        let applied = migrate_with(&db, &v2, &hints, Options::default()).await;
        let Ok(Outcome::Applied(plan)) = applied else { panic!("{applied:?}") };
        assert_eq!(plan.lines(), [
            "Rename the type `User` to `Person`",
            "Rename the relation `UserPosts` to `Authorship`",
            "Rename the field `Person.name` to `fullName`",
            "Change the field `Person.age`: now required (nodes without a value set to its migration value 18)",
            "Add the field `Person.score` (Int!), set to its migration value 5 in existing nodes",
        ]);
        let rows = texts(&db, r#"SELECT "id" || ':' || "fullName" || ':' || CAST("age" AS TEXT) || ':' || CAST("score" AS TEXT) FROM "Person" ORDER BY "id""#).await;
        assert_eq!(rows, [Some("u1:Ada:18:5".to_owned()), Some("u2:Bob:3:5".to_owned())]);
        assert_eq!(texts(&db, r#"SELECT "A" || '-' || "B" FROM "_Authorship""#).await, [Some("u1-p1".to_owned())]);
        assert_eq!(columns(&db, "User").await, Vec::<String>::new());
        let duplicate = db.execute_script(&[format!(
            r#"INSERT INTO "Person" ("id", "createdAt", "updatedAt", "fullName", "age", "score") VALUES ('u3', {now}, {now}, 'Ada', 1, 1)"#
        )]).await;
        assert!(duplicate.is_err(), "`fullName` is still unique");
        // The directives stay in the model after the deploy; they change nothing any more.
        assert_eq!(migrate_with(&db, &v2, &hints, Options::default()).await, Ok(Outcome::UpToDate));
        // A type change other than to `String` takes the migration value.
        let mut v3 = v2.clone();
        v3.models[0].fields[4] = required(field("age", Kind::Float));
        let err = migrate_to(&db, &v3, Options::default()).await.expect_err("ages exist");
        assert_eq!(err.code, Some(2007));
        let hints = Hints { values: vec![("Person".into(), "age".into(), json!(1.5))], ..Hints::default() };
        assert!(matches!(migrate_with(&db, &v3, &hints, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(texts(&db, r#"SELECT CAST("age" AS TEXT) FROM "Person" ORDER BY "id""#).await, [Some("1.5".to_owned()), Some("1.5".to_owned())]);
    }

    /// `serve` brings the database to the compiled model as it starts: a plan without
    /// destructive steps is applied, one with a destructive step stops the start with the
    /// reference's message and changes nothing.
    async fn serve_migrates_at_start(kind) {
        let Some((guard, db)) = open(kind).await else { return };
        let compiled = Schema::of(<example_model::Service as svc_runtime::ServiceDef>::META);
        let store = crate::support::ScratchDir::new("svc-files-migrating");
        let spawn = |url: String| {
            let file_store = store.location();
            async move {
                let options = svc_runtime::Options {
                    port: 0,
                    database_url: Some(url),
                    service_id: Some("migrating".into()),
                    alias: Some("migrating".into()),
                    secret: Some("svc-test-secret-0123456789abcdef".into()),
                    file_store: Some(file_store),
                    ..Default::default()
                };
                tokio::task::spawn_blocking(move || svc_runtime::spawn::<example_model::Service>(options))
                    .await
                    .expect("the spawning thread panicked")
            }
        };
        // The database was last migrated to an older model, without `Post.rating`.
        let mut older = compiled.clone();
        let post = older.models.iter_mut().find(|m| m.name == "Post").expect("Post");
        post.fields.retain(|f| f.name != "rating");
        migrate_to(&db, &older, Options::default()).await.expect("older");
        assert!(!columns(&db, "Post").await.contains(&"rating".to_owned()));
        let running = spawn(guard.url.clone()).await.expect("a safe plan is applied at start");
        running.stop();
        assert!(columns(&db, "Post").await.contains(&"rating".to_owned()));
        assert_eq!(migrate_to(&db, &compiled, Options::default()).await, Ok(Outcome::UpToDate));
        // Now the database has a field this build does not: removing it needs `migrate --force`.
        let mut newer = compiled.clone();
        let post = newer.models.iter_mut().find(|m| m.name == "Post").expect("Post");
        post.fields.push(field("legacy", Kind::String));
        migrate_to(&db, &newer, Options::default()).await.expect("newer");
        let refused = spawn(guard.url.clone()).await.err().expect("a destructive plan stops the start").to_string();
        assert!(refused.contains(DESTRUCTIVE), "{refused}");
        assert!(refused.contains("Remove the field `Post.legacy`"), "{refused}");
        assert!(columns(&db, "Post").await.contains(&"legacy".to_owned()), "nothing changed");
        assert_eq!(migrate_to(&db, &newer, Options::default()).await, Ok(Outcome::UpToDate));
    }

    /// A join column `A` that is not unique (side A's field is a list) has no index of its own:
    /// the unique index on (`A`, `B`) serves look-ups by `A`. A unique `A` keeps its unique
    /// index. A database made while every join column had an index loses the redundant one at
    /// the next start, its edges kept, and is up to date after that.
    async fn a_join_column_a_has_an_index_only_when_unique(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let target = schema(
            vec![
                model(
                    "User",
                    vec![required(field("name", Kind::String))],
                    vec![rel_field("posts", "UserPosts", true, false), rel_field("pinned", "Pinned", false, false)],
                ),
                model(
                    "Post",
                    vec![required(field("title", Kind::String))],
                    vec![rel_field("author", "UserPosts", false, false), rel_field("pinnedBy", "Pinned", false, false)],
                ),
            ],
            vec![relation("UserPosts", "User", "Post", true, false), relation("Pinned", "User", "Post", false, false)],
        );
        assert_eq!(migrate_to(&db, &target, Options::default()).await, Ok(Outcome::Created));
        assert_eq!(indexes(&db, "_UserPosts").await, ["_UserPosts_B"]);
        assert_eq!(indexes(&db, "_Pinned").await, ["_Pinned_A", "_Pinned_B"]);

        let now = timestamp(&db);
        db.execute_script(&[format!(r#"INSERT INTO "User" ("id", "createdAt", "updatedAt", "name") VALUES ('u1', {now}, {now}, 'Ada')"#)])
            .await
            .unwrap_or_else(|e| panic!("user: {e}"));
        db.execute_script(&[
            format!(r#"INSERT INTO "Post" ("id", "createdAt", "updatedAt", "title") VALUES ('p1', {now}, {now}, 'Hello')"#),
            r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p1')"#.to_owned(),
            // As a database made before: every join column with an index.
            r#"CREATE INDEX "_UserPosts_A" ON "_UserPosts" ("A")"#.to_owned(),
        ])
        .await
        .unwrap_or_else(|e| panic!("setup: {e}"));
        assert_eq!(indexes(&db, "_UserPosts").await, ["_UserPosts_A", "_UserPosts_B"]);
        assert_eq!(migrate_to(&db, &target, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(indexes(&db, "_UserPosts").await, ["_UserPosts_B"]);
        assert_eq!(indexes(&db, "_Pinned").await, ["_Pinned_A", "_Pinned_B"]);
        assert_eq!(
            texts(&db, r#"SELECT "A" || '-' || "B" FROM "_UserPosts""#).await,
            [Some("u1-p1".to_owned())]
        );
        assert_eq!(migrate_to(&db, &target, Options::default()).await, Ok(Outcome::UpToDate));
    }

    /// A join table of the layout with an `id` per edge (the reference's, and ours before) is
    /// re-keyed by `(A, B)` at the next migration, whether the model changed or not: every edge
    /// kept, the pair the key (`WITHOUT ROWID` on SQLite), each to-one column still unique, and
    /// on PostgreSQL the partner copies still kept by the table's triggers.
    async fn a_join_table_with_edge_ids_is_rekeyed(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let users = |extra: Vec<Field>| model(
            "User",
            [vec![required(field("name", Kind::String)), field("age", Kind::Int)], extra].concat(),
            vec![rel_field("posts", "UserPosts", true, false), rel_field("pinned", "Pinned", false, false)],
        );
        let posts = model(
            "Post",
            vec![required(field("title", Kind::String))],
            vec![rel_field("author", "UserPosts", false, false), rel_field("pinnedBy", "Pinned", false, false)],
        );
        let relations = vec![relation("UserPosts", "User", "Post", true, false), relation("Pinned", "User", "Post", false, false)];
        let target = schema(vec![users(vec![]), posts.clone()], relations.clone());
        assert_eq!(migrate_to(&db, &target, Options::default()).await, Ok(Outcome::Created));
        assert_eq!(columns(&db, "_UserPosts").await, ["A", "B"]);
        assert_rekeyed(&db, "_UserPosts").await;
        insert_user(&db, "u1", "Ada", None).await;
        insert_user(&db, "u2", "Bob", None).await;
        let now = timestamp(&db);
        db.execute_script(&[format!(
            r#"INSERT INTO "Post" ("id", "createdAt", "updatedAt", "title") VALUES ('p1', {now}, {now}, 'one'), ('p2', {now}, {now}, 'two'), ('p3', {now}, {now}, 'three')"#
        )])
        .await
        .unwrap_or_else(|e| panic!("nodes: {e}"));

        // The model unchanged: the next start re-keys the table.
        with_edge_ids(&db, "_UserPosts", [false, true], &[("u1", "p1"), ("u1", "p2")]).await;
        assert_eq!(migrate_to(&db, &target, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(columns(&db, "_UserPosts").await, ["A", "B"]);
        assert_rekeyed(&db, "_UserPosts").await;
        assert_eq!(edges(&db, "_UserPosts").await, ["u1-p1", "u1-p2"]);
        assert_eq!(indexes(&db, "_UserPosts").await, ["_UserPosts_B"]);
        // Post.author is to-one: p1 has its author.
        let second = db.execute_script(&[r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u2', 'p1')"#.to_owned()]).await;
        assert!(second.is_err(), "a post has one author");
        db.execute_script(&[r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u2', 'p3')"#.to_owned()])
            .await
            .unwrap_or_else(|e| panic!("new edge: {e}"));
        if db.backend() == svc_runtime::storage::Backend::Postgres {
            // The triggers on the table kept working: p3's copy of its author.
            assert_eq!(texts(&db, r#"SELECT "__UserPosts_A" FROM "Post" WHERE "id" = 'p3'"#).await, [Some("u2".to_owned())]);
        }
        assert_eq!(migrate_to(&db, &target, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(edges(&db, "_UserPosts").await, ["u1-p1", "u1-p2", "u2-p3"]);

        // A model change (on SQLite, `User` rebuilt) re-keys the table first.
        with_edge_ids(&db, "_Pinned", [true, true], &[("u1", "p2")]).await;
        let changed = schema(vec![users(vec![field("bio", Kind::String)]), posts], relations);
        assert!(matches!(migrate_to(&db, &changed, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(columns(&db, "_Pinned").await, ["A", "B"]);
        assert_rekeyed(&db, "_Pinned").await;
        assert_eq!(edges(&db, "_Pinned").await, ["u1-p2"]);
        assert_eq!(indexes(&db, "_Pinned").await, ["_Pinned_A", "_Pinned_B"]);
        assert_eq!(edges(&db, "_UserPosts").await, ["u1-p1", "u1-p2", "u2-p3"]);
        if db.backend() == svc_runtime::storage::Backend::Postgres {
            assert_eq!(texts(&db, r#"SELECT "__Pinned_A" FROM "Post" WHERE "id" = 'p2'"#).await, [Some("u1".to_owned())]);
        }
        // A database with no stored schema (made before migrations, or of another format):
        // the tables that existed are kept, and re-keyed.
        with_edge_ids(&db, "_UserPosts", [false, true], &[("u1", "p1"), ("u2", "p3")]).await;
        db.execute_script(&[r#"DELETE FROM "_svc_meta" WHERE "key" = 'schema'"#.to_owned()])
            .await
            .unwrap_or_else(|e| panic!("forget the schema: {e}"));
        assert_eq!(migrate_to(&db, &changed, Options::default()).await, Ok(Outcome::Created));
        assert_eq!(columns(&db, "_UserPosts").await, ["A", "B"]);
        assert_rekeyed(&db, "_UserPosts").await;
        assert_eq!(edges(&db, "_UserPosts").await, ["u1-p1", "u2-p3"]);
        // Deleting a user still deletes its edges.
        db.execute_script(&[r#"DELETE FROM "User" WHERE "id" = 'u1'"#.to_owned()])
            .await
            .unwrap_or_else(|e| panic!("delete: {e}"));
        assert_eq!(edges(&db, "_UserPosts").await, ["u2-p3"]);
        assert_eq!(edges(&db, "_Pinned").await, Vec::<String>::new());
    }
}

/// Turns the join table `table` between `User` and `Post` into the layout with an `id` per edge,
/// as databases made before the pair became the key hold it (the id the primary key, a unique
/// constraint on `(A, B)`, a unique index on each column of `unique`), holding the edges
/// `edges` (`A`, `B`) and no others.
async fn with_edge_ids(db: &Db, table: &str, unique: [bool; 2], edges: &[(&str, &str)]) {
    let mut script = vec![format!(r#"DELETE FROM "{table}""#)];
    match db.backend() {
        svc_runtime::storage::Backend::Sqlite => {
            script.push(format!(r#"DROP TABLE "{table}""#));
            script.push(format!(
                r#"CREATE TABLE "{table}" ("id" TEXT NOT NULL PRIMARY KEY, "A" TEXT NOT NULL REFERENCES "User" ("id") ON DELETE CASCADE, "B" TEXT NOT NULL REFERENCES "Post" ("id") ON DELETE CASCADE, UNIQUE ("A", "B"))"#
            ));
            for (column, unique) in ["A", "B"].into_iter().zip(unique) {
                script.push(format!(
                    r#"CREATE {}INDEX "{table}_{column}" ON "{table}" ("{column}")"#,
                    if unique { "UNIQUE " } else { "" }
                ));
            }
        }
        // Altered rather than re-created, so that the table keeps its triggers.
        svc_runtime::storage::Backend::Postgres => script.extend([
            format!(r#"ALTER TABLE "{table}" DROP CONSTRAINT "{table}_pkey""#),
            format!(
                r#"ALTER TABLE "{table}" ADD COLUMN "id" TEXT COLLATE "C" NOT NULL PRIMARY KEY"#
            ),
            format!(r#"ALTER TABLE "{table}" ADD UNIQUE ("A", "B")"#),
        ]),
    }
    for (a, b) in edges {
        script.push(format!(
            r#"INSERT INTO "{table}" ("id", "A", "B") VALUES ('e-{a}-{b}', '{a}', '{b}')"#
        ));
    }
    db.execute_script(&script)
        .await
        .unwrap_or_else(|e| panic!("{table} with edge ids: {e}"));
    assert_eq!(columns(db, table).await, ["A", "B", "id"]);
}

/// The edges of a join table, `A-B`, sorted.
async fn edges(db: &Db, table: &str) -> Vec<String> {
    texts(
        db,
        &format!(r#"SELECT "A" || '-' || "B" FROM "{table}" ORDER BY 1"#),
    )
    .await
    .into_iter()
    .flatten()
    .collect()
}

/// That the join table `table` is keyed by `(A, B)` alone: on SQLite a `WITHOUT ROWID` table
/// whose primary key is the pair; on PostgreSQL a primary key on the pair and no other
/// constraint but the two foreign keys.
async fn assert_rekeyed(db: &Db, table: &str) {
    match db.backend() {
        svc_runtime::storage::Backend::Sqlite => {
            let sql = texts(
                db,
                &format!("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = '{table}'"),
            )
            .await;
            let sql = sql.into_iter().flatten().next().unwrap_or_default();
            assert!(sql.ends_with("WITHOUT ROWID"), "{sql}");
            let key = texts(
                db,
                &format!("SELECT name FROM pragma_table_info('{table}') WHERE pk > 0 ORDER BY pk"),
            )
            .await;
            assert_eq!(key, [Some("A".to_owned()), Some("B".to_owned())]);
        }
        svc_runtime::storage::Backend::Postgres => {
            let constraints = texts(
                db,
                &format!(
                    "SELECT contype::text || ':' || (SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_attribute \
                     WHERE attrelid = c.conrelid AND attnum = ANY (c.conkey)) FROM pg_constraint AS c \
                     WHERE conrelid = '\"{table}\"'::regclass AND contype IN ('f', 'p', 'u') ORDER BY 1"
                ),
            )
            .await;
            assert_eq!(
                constraints,
                [
                    Some("f:A".to_owned()),
                    Some("f:B".to_owned()),
                    Some("p:A,B".to_owned())
                ]
            );
        }
    }
}

/// The named indexes of a table (not those of its primary key and unique constraints), sorted.
async fn indexes(db: &Db, table: &str) -> Vec<String> {
    let sql = match db.backend() {
        svc_runtime::storage::Backend::Sqlite => format!(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = '{table}' AND sql IS NOT NULL ORDER BY name"
        ),
        svc_runtime::storage::Backend::Postgres => format!(
            "SELECT i.relname::text FROM pg_index AS x JOIN pg_class AS i ON i.oid = x.indexrelid \
             JOIN pg_class AS t ON t.oid = x.indrelid WHERE t.relname = '{table}' \
             AND t.relnamespace = to_regnamespace(current_schema()) AND NOT x.indisprimary \
             AND NOT EXISTS (SELECT 1 FROM pg_constraint AS c WHERE c.conindid = x.indexrelid) ORDER BY 1"
        ),
    };
    texts(db, &sql).await.into_iter().flatten().collect()
}

/// The example service's `Post`, as compiled.
fn post() -> &'static ModelMeta {
    let meta = <example_model::Service as svc_runtime::ServiceDef>::META;
    meta.models.iter().find(|m| m.name == "Post").expect("Post")
}
