//! The unique indexes of fields. On PostgreSQL those of `String` fields are over
//! `lower(col::text)`, which is `citext`'s equality (`storage/layout.rs`, `lowers`), and every
//! one holds only the rows that have a value (`WHERE col IS NOT NULL`): made so by a first
//! migration, by a field becoming unique or a `String`, kept through renames, and made again by
//! the next start in a database that holds them in an earlier form (over the `citext` column,
//! or over every row). SQLite's are over the column and every row. On both, two values that
//! differ only in case cannot both be stored, and look-ups by the field go through its index.
//! PostgreSQL's partner copies (`migrate/partners.rs`) are indexed the same way, only where a
//! row has a partner, and their pages read that index.

use sea_orm::ConnectionTrait;
use svc_runtime::migrate::schema::{Field, Schema};
use svc_runtime::migrate::{Hints, Options, Outcome};
use svc_runtime::model::{Kind, Val};
use svc_runtime::query::Cond;
use svc_runtime::query::filter::CmpOp;
use svc_runtime::query::page::Page;
use svc_runtime::query::relation::page_statement;
use svc_runtime::query::select::{count_sql, find_row_sql};
use svc_runtime::storage::{Backend, Db};

use super::{
    field, migrate_to, migrate_with, model, open, post, required, schema, texts, timestamp,
};

fn unique(mut f: Field) -> Field {
    f.unique = true;
    f
}

/// `Person { name: String!, <text>: String @isUnique, <number>: <number kind> @isUnique }`.
fn people(text: &str, number: &str, number_kind: Kind) -> Schema {
    schema(
        vec![model(
            "Person",
            vec![
                required(field("name", Kind::String)),
                unique(field(text, Kind::String)),
                unique(field(number, number_kind)),
            ],
            vec![],
        )],
        vec![],
    )
}

/// Each unique index of `Person`: `<name>: lowered` when it is over `lower(…)`, `<name>: column`
/// otherwise, then `, values` when it holds only the rows with a value, `, every row` otherwise.
async fn forms(db: &Db) -> Vec<String> {
    let sql = match db.backend() {
        Backend::Sqlite => {
            "SELECT name || ': ' || CASE WHEN sql LIKE '%lower(%' THEN 'lowered' ELSE 'column' END \
             || CASE WHEN sql LIKE '% WHERE %' THEN ', values' ELSE ', every row' END \
             FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Person' AND name LIKE '%_key' \
             ORDER BY name"
        }
        Backend::Postgres => {
            "SELECT indexname || ': ' || CASE WHEN indexdef LIKE '%(lower(%' THEN 'lowered' \
             ELSE 'column' END || CASE WHEN indexdef LIKE '% WHERE %' THEN ', values' \
             ELSE ', every row' END FROM pg_indexes WHERE schemaname = current_schema() \
             AND tablename = 'Person' AND indexname LIKE '%\\_key' ORDER BY indexname"
        }
    };
    texts(db, sql).await.into_iter().flatten().collect()
}

/// The forms [`forms`] reads: on PostgreSQL `lowered` for the text fields, `column` for the
/// others, each of the rows with a value; on SQLite `column` of every row.
fn expected(db: &Db, indexes: &[(&str, bool)]) -> Vec<String> {
    let pg = db.backend() == Backend::Postgres;
    indexes
        .iter()
        .map(|(name, text)| {
            let form = if *text && pg { "lowered" } else { "column" };
            format!(
                "{name}: {form}, {}",
                if pg { "values" } else { "every row" }
            )
        })
        .collect()
}

/// Inserts a person; whether the database took it.
async fn insert(db: &Db, id: &str, column: &str, value: &str) -> bool {
    let now = timestamp(db);
    db.execute_script(&[format!(
        "INSERT INTO \"Person\" (\"id\", \"createdAt\", \"updatedAt\", \"name\", \"{column}\") \
         VALUES ('{id}', {now}, {now}, 'Someone', '{value}')"
    )])
    .await
    .is_ok()
}

/// Makes each unique index `(name, over)` of `Person` again over `over`, of every row: the
/// forms of earlier databases.
async fn remake(db: &Db, indexes: &[(&str, &str)]) {
    let statements: Vec<String> = indexes
        .iter()
        .flat_map(|(name, over)| {
            [
                format!("DROP INDEX \"{name}\""),
                format!("CREATE UNIQUE INDEX \"{name}\" ON \"Person\" ({over})"),
            ]
        })
        .collect();
    db.execute_script(&statements)
        .await
        .expect("the earlier indexes");
}

/// Inserts a person without an email or a code; whether the database took it.
async fn insert_without(db: &Db, id: &str) -> bool {
    let now = timestamp(db);
    db.execute_script(&[format!(
        "INSERT INTO \"Person\" (\"id\", \"createdAt\", \"updatedAt\", \"name\") \
         VALUES ('{id}', {now}, {now}, 'Nobody')"
    )])
    .await
    .is_ok()
}

/// The plan PostgreSQL makes for `sql` with sequential scans priced out: one that can use an
/// index uses it.
async fn plan(db: &Db, sql: svc_runtime::storage::Sql) -> String {
    let mut statement = sql.into_statement();
    statement.sql = format!("EXPLAIN {}", statement.sql);
    let tx = db.begin().await.expect("begin");
    tx.execute_unprepared("SET LOCAL enable_seqscan = off")
        .await
        .expect("set");
    let rows = tx.query_all_raw(statement).await.expect("explain");
    // Ended at once: a dropped transaction keeps its connection, and its locks, until the pool
    // hands that connection out again.
    tx.rollback().await.expect("rollback");
    rows.iter()
        .map(|r| r.try_get_by_index::<String>(0).expect("a plan line"))
        .collect::<Vec<_>>()
        .join("\n")
}

db_cases! {
    /// The unique index of a text is lowered on PostgreSQL and over the column on SQLite; on both
    /// a value differing from a stored one only in case is refused. A database holding the index
    /// over the `citext` column gets it lowered at the next start, its rows kept; renames keep
    /// the form, and a field that becomes a `String` gets its index lowered.
    async fn unique_texts_are_indexed_lowered(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        let v1 = people("email", "code", Kind::Int);
        assert_eq!(migrate_to(&db, &v1, Options::default()).await, Ok(Outcome::Created));
        assert_eq!(forms(&db).await, expected(&db, &[("Person_code_key", false), ("Person_email_key", true)]));
        assert!(insert(&db, "p1", "email", "Ada@Example.io").await);
        assert!(!insert(&db, "p2", "email", "ada@example.IO").await, "the same email in another case");
        assert!(insert(&db, "p2", "email", "bob@example.io").await);

        if db.backend() == Backend::Postgres {
            // The index as databases made before held it: over the `citext` column.
            remake(&db, &[("Person_email_key", "\"email\"")]).await;
            assert_eq!(
                forms(&db).await,
                ["Person_code_key: column, values", "Person_email_key: column, every row"]
            );
        }
        assert_eq!(migrate_to(&db, &v1, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(forms(&db).await, expected(&db, &[("Person_code_key", false), ("Person_email_key", true)]));
        assert!(!insert(&db, "p3", "email", "BOB@example.io").await, "still unique in any case");
        assert_eq!(
            texts(&db, "SELECT \"email\" FROM \"Person\" ORDER BY \"id\"").await,
            [Some("Ada@Example.io".to_owned()), Some("bob@example.io".to_owned())]
        );

        if db.backend() == Backend::Postgres {
            // As databases made before the indexes were partial held them: lowered, over every
            // row.
            remake(&db, &[("Person_email_key", "lower(\"email\"::text)"), ("Person_code_key", "\"code\"")])
                .await;
            assert_eq!(
                forms(&db).await,
                ["Person_code_key: column, every row", "Person_email_key: lowered, every row"]
            );
            assert_eq!(migrate_to(&db, &v1, Options::default()).await, Ok(Outcome::UpToDate));
            assert_eq!(forms(&db).await, expected(&db, &[("Person_code_key", false), ("Person_email_key", true)]));
        }
        // Rows without a value: as many as there are, the index holding none of them.
        assert!(insert_without(&db, "n1").await && insert_without(&db, "n2").await);
        assert!(!insert(&db, "p3", "email", "ada@EXAMPLE.io").await, "still unique");
        db.execute_script(&["DELETE FROM \"Person\" WHERE \"id\" IN ('n1', 'n2')".to_owned()])
            .await
            .expect("delete");

        // `email` renamed `mail`, `code` from `Int` to `String`.
        let v2 = people("mail", "code", Kind::String);
        let hints = Hints {
            fields: vec![("Person".into(), "mail".into(), "email".into())],
            ..Hints::default()
        };
        assert!(matches!(migrate_with(&db, &v2, &hints, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(forms(&db).await, expected(&db, &[("Person_code_key", true), ("Person_mail_key", true)]));
        assert!(insert(&db, "p3", "code", "Ab1").await);
        assert!(!insert(&db, "p4", "code", "aB1").await, "codes are texts now");
        assert!(!insert(&db, "p4", "mail", "ADA@example.io").await);
        assert_eq!(migrate_to(&db, &v2, Options::default()).await, Ok(Outcome::UpToDate));

        // Back to an `Int`: the index is over the column again.
        db.execute_script(&["DELETE FROM \"Person\" WHERE \"id\" = 'p3'".to_owned()]).await.expect("delete");
        let v3 = people("mail", "code", Kind::Int);
        assert!(matches!(migrate_to(&db, &v3, Options::default()).await, Ok(Outcome::Applied(_))));
        assert_eq!(forms(&db).await, expected(&db, &[("Person_code_key", false), ("Person_mail_key", true)]));
        assert_eq!(migrate_to(&db, &v3, Options::default()).await, Ok(Outcome::UpToDate));
    }

    /// On PostgreSQL, the statements that find nodes by a unique text (one node by `slug`, a
    /// filter `slug: …`, `slug_in` with a short and a long list) can use its lowered index.
    async fn lookups_by_a_unique_text_use_its_index(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        if db.backend() != Backend::Postgres {
            return;
        }
        let compiled = Schema::of(<example_model::Service as svc_runtime::ServiceDef>::META);
        migrate_to(&db, &compiled, Options::default()).await.expect("the example model");
        let post = post();
        let slug = post.fields.iter().position(|f| f.name == "slug").expect("slug");
        let title = post.fields.iter().position(|f| f.name == "title").expect("title");
        let text = |s: &str| Val::String(s.to_owned());
        let by_index = |plan: &str| plan.contains("Post_slug_key");

        let one = plan(&db, find_row_sql(Backend::Postgres, post, slug, &text("Hello"), None)).await;
        assert!(by_index(&one), "{one}");
        let eq = Cond::Cmp { field: slug, op: CmpOp::Eq, val: text("Hello") };
        let counted = plan(&db, count_sql(Backend::Postgres, post, Some(&eq))).await;
        assert!(by_index(&counted), "{counted}");
        let short = Cond::In { field: slug, vals: vec![text("a"), text("B")], negate: false };
        let counted = plan(&db, count_sql(Backend::Postgres, post, Some(&short))).await;
        assert!(by_index(&counted), "{counted}");
        let long = Cond::In {
            field: slug,
            vals: (0..200).map(|i| text(&format!("Slug-{i}"))).collect(),
            negate: false,
        };
        let counted = plan(&db, count_sql(Backend::Postgres, post, Some(&long))).await;
        assert!(by_index(&counted), "{counted}");
        // A unique `ID` field, whose index is over the column.
        let external = post.fields.iter().position(|f| f.name == "externalId").expect("externalId");
        let eq = Cond::Cmp { field: external, op: CmpOp::Eq, val: text("x1") };
        let counted = plan(&db, count_sql(Backend::Postgres, post, Some(&eq))).await;
        assert!(counted.contains("Post_externalId_key"), "{counted}");
        // A field that is not unique has no such index.
        let other = Cond::Cmp { field: title, op: CmpOp::Eq, val: text("Hello") };
        let counted = plan(&db, count_sql(Backend::Postgres, post, Some(&other))).await;
        assert!(!by_index(&counted), "{counted}");
    }

    /// On PostgreSQL the index of a partner copy holds the rows that have a partner: made so,
    /// made again so in a database holding it over every row (the copies kept), and read by a
    /// page of the other side's to-many field.
    async fn partner_copies_are_indexed_where_set(kind) {
        let Some((_guard, db)) = open(kind).await else { return };
        if db.backend() != Backend::Postgres {
            return;
        }
        let compiled = Schema::of(<example_model::Service as svc_runtime::ServiceDef>::META);
        migrate_to(&db, &compiled, Options::default()).await.expect("the example model");
        let form = || async {
            texts(
                &db,
                "SELECT CASE WHEN indexdef LIKE '% WHERE %' THEN 'partners' ELSE 'every row' END \
                 FROM pg_indexes WHERE schemaname = current_schema() AND indexname = '__UserPosts_A'",
            )
            .await
        };
        assert_eq!(form().await, [Some("partners".to_owned())]);
        let now = timestamp(&db);
        db.execute_script(&[
            format!("INSERT INTO \"User\" (\"id\", \"createdAt\", \"updatedAt\") VALUES ('u1', {now}, {now})"),
            format!("INSERT INTO \"Post\" (\"id\", \"createdAt\", \"updatedAt\") VALUES ('p1', {now}, {now}), ('p2', {now}, {now})"),
            "INSERT INTO \"_UserPosts\" (\"A\", \"B\") VALUES ('u1', 'p1')".to_owned(),
            "DROP INDEX \"__UserPosts_A\"".to_owned(),
            "CREATE INDEX \"__UserPosts_A\" ON \"Post\" (\"__UserPosts_A\", \"id\")".to_owned(),
        ])
        .await
        .expect("the data and the whole index");
        assert_eq!(form().await, [Some("every row".to_owned())]);
        assert_eq!(migrate_to(&db, &compiled, Options::default()).await, Ok(Outcome::UpToDate));
        assert_eq!(form().await, [Some("partners".to_owned())]);
        assert_eq!(
            texts(&db, "SELECT \"__UserPosts_A\" FROM \"Post\" ORDER BY \"id\"").await,
            [Some("u1".to_owned()), None]
        );

        // The page of `User.posts` of two users reads the partners' index.
        let meta = <example_model::Service as svc_runtime::ServiceDef>::META;
        let user = meta.models.iter().find(|m| m.name == "User").expect("User");
        let posts = user.relations.iter().find(|r| r.name == "posts").expect("User.posts");
        let page = Page::new(posts.target, None, Vec::new(), [None, Some(10), None], None, None)
            .expect("a page");
        let (sql, ..) = page_statement(Backend::Postgres, posts, &page, &["u1", "u2"], None, None)
            .expect("the page's statement");
        let read = plan(&db, sql).await;
        assert!(read.contains("__UserPosts_A"), "{read}");
    }
}
