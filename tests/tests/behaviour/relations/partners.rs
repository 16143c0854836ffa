//! PostgreSQL: each node's to-one partner copied into its row (`runtime/src/migrate/partners.rs`).
//! The copy follows every write of the join table (inserts, updates, deletes, cascades,
//! truncation), every migration (renames, a relation becoming to-many and back, a database made
//! before the copies existed), and relation pages read it. PostgreSQL only: SQLite reads the
//! join table.

use serde_json::json;
use svc_runtime::migrate::schema::Schema;
use svc_runtime::migrate::{Hints, Options, Outcome};
use svc_runtime::storage::Db;

use crate::migrations::{
    field, migrate_to, migrate_with, model, open, rel_field, relation, required, schema, texts,
    timestamp,
};
use crate::support::{self, Server};

/// `User { name }` 1–n `Post { title }` through the relation `name` (`User.posts`,
/// `Post.author`); `posts_list` makes `Post.authors` a list too (n–m).
fn blog(user: &str, name: &str, posts_list: bool) -> Schema {
    use svc_runtime::model::Kind;
    schema(
        vec![
            model(
                user,
                vec![required(field("name", Kind::String))],
                vec![rel_field("posts", name, true, false)],
            ),
            model(
                "Post",
                vec![required(field("title", Kind::String))],
                vec![rel_field("author", name, posts_list, false)],
            ),
        ],
        vec![relation(name, user, "Post", true, posts_list)],
    )
}

/// `post=partner` for every post, by id (`-` for none), read from the column `column`.
async fn copies(db: &Db, column: &str) -> Vec<String> {
    texts(
        db,
        &format!(r#"SELECT "id" || '=' || COALESCE("{column}", '-') FROM "Post" ORDER BY "id""#),
    )
    .await
    .into_iter()
    .flatten()
    .collect()
}

/// The columns of `table` whose names begin with `__`.
async fn copy_columns(db: &Db, table: &str) -> Vec<String> {
    texts(
        db,
        &format!(
            "SELECT column_name::text FROM information_schema.columns WHERE table_name = '{table}' \
             AND table_schema = current_schema() AND column_name LIKE '\\_\\_%' ORDER BY 1"
        ),
    )
    .await
    .into_iter()
    .flatten()
    .collect()
}

/// The names of the service's trigger functions.
async fn functions(db: &Db) -> Vec<String> {
    texts(
        db,
        "SELECT proname::text FROM pg_proc WHERE pronamespace = to_regnamespace(current_schema()) \
         AND proname LIKE '\\_\\_svc%' ORDER BY 1",
    )
    .await
    .into_iter()
    .flatten()
    .collect()
}

/// The triggers on `table`, each as `name:row` or `name:statement`.
async fn triggers(db: &Db, table: &str) -> Vec<String> {
    texts(
        db,
        &format!(
            "SELECT t.tgname || CASE WHEN (t.tgtype & 1) = 1 THEN ':row' ELSE ':statement' END \
             FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid \
             WHERE c.relname = '{table}' AND c.relnamespace = to_regnamespace(current_schema()) \
             AND NOT t.tgisinternal ORDER BY 1"
        ),
    )
    .await
    .into_iter()
    .flatten()
    .collect()
}

async fn run(db: &Db, statements: &[&str]) {
    let statements: Vec<String> = statements.iter().map(|s| (*s).to_owned()).collect();
    db.execute_script(&statements)
        .await
        .unwrap_or_else(|e| panic!("{statements:?}: {e}"));
}

/// Users `u1`, `u2` and posts `p1`, `p2`, `p3` in `user`'s and `Post`'s tables.
async fn nodes(db: &Db, user: &str) {
    let now = timestamp(db);
    run(
        db,
        &[
            &format!(
                r#"INSERT INTO "{user}" ("id", "createdAt", "updatedAt", "name") VALUES ('u1', {now}, {now}, 'Ann'), ('u2', {now}, {now}, 'Bob')"#
            ),
            &format!(
                r#"INSERT INTO "Post" ("id", "createdAt", "updatedAt", "title") VALUES ('p1', {now}, {now}, 'one'), ('p2', {now}, {now}, 'two'), ('p3', {now}, {now}, 'three')"#
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn the_copy_follows_every_write_of_the_join_table() {
    let Some((_guard, db)) = open(support::Db::Postgres).await else {
        return;
    };
    migrate_to(&db, &blog("User", "UserPosts", false), Options::default())
        .await
        .expect("created");
    assert_eq!(copy_columns(&db, "Post").await, ["__UserPosts_A"]);
    assert_eq!(copy_columns(&db, "User").await, Vec::<String>::new());
    nodes(&db, "User").await;
    let col = "__UserPosts_A";
    run(
        &db,
        &[r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p1'), ('u1', 'p2')"#],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=u1", "p2=u1", "p3=-"]);
    // Another partner for p2, then the edge moved to p3.
    run(
        &db,
        &[r#"UPDATE "_UserPosts" SET "A" = 'u2' WHERE "B" = 'p2'"#],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=u1", "p2=u2", "p3=-"]);
    run(
        &db,
        &[r#"UPDATE "_UserPosts" SET "B" = 'p3' WHERE "B" = 'p2'"#],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=u1", "p2=-", "p3=u2"]);
    run(&db, &[r#"DELETE FROM "_UserPosts" WHERE "B" = 'p1'"#]).await;
    assert_eq!(copies(&db, col).await, ["p1=-", "p2=-", "p3=u2"]);
    // Statements writing several edges, and statements that remove and add edges of one post
    // at once (the triggers are per statement; the copies must not depend on which of them
    // fires first): the edge of p3 moved to u1 and p1 given one, in one statement; then p3's
    // edge removed and added again as it was.
    run(
        &db,
        &[
            r#"WITH "gone" AS (DELETE FROM "_UserPosts" WHERE "B" = 'p3' RETURNING "B") INSERT INTO "_UserPosts" ("A", "B") SELECT 'u1', "B" FROM "gone" UNION ALL SELECT 'u1', 'p1'"#,
        ],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=u1", "p2=-", "p3=u1"]);
    run(
        &db,
        &[
            r#"WITH "gone" AS (DELETE FROM "_UserPosts" WHERE "B" = 'p3' RETURNING "A", "B") INSERT INTO "_UserPosts" ("A", "B") SELECT "A", "B" FROM "gone""#,
        ],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=u1", "p2=-", "p3=u1"]);
    run(
        &db,
        &[
            r#"UPDATE "_UserPosts" SET "A" = 'u2' WHERE "A" = 'u1'"#,
            r#"DELETE FROM "_UserPosts" WHERE "B" = 'p1'"#,
        ],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=-", "p2=-", "p3=u2"]);
    // Deleting a user deletes its edges (a cascade), and that clears the copies.
    run(&db, &[r#"DELETE FROM "User" WHERE "id" = 'u2'"#]).await;
    assert_eq!(copies(&db, col).await, ["p1=-", "p2=-", "p3=-"]);
    // Deleting a post with an edge.
    run(
        &db,
        &[
            r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p3')"#,
            r#"DELETE FROM "Post" WHERE "id" = 'p3'"#,
        ],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=-", "p2=-"]);
    // Emptying the join table at once.
    run(
        &db,
        &[
            r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p1')"#,
            r#"TRUNCATE "_UserPosts""#,
        ],
    )
    .await;
    assert_eq!(copies(&db, col).await, ["p1=-", "p2=-"]);
    assert_eq!(
        texts(&db, r#"SELECT "A" FROM "_UserPosts""#).await,
        Vec::<Option<String>>::new()
    );
}

#[tokio::test]
async fn the_copy_follows_migrations() {
    let Some((_guard, db)) = open(support::Db::Postgres).await else {
        return;
    };
    migrate_to(&db, &blog("User", "UserPosts", false), Options::default())
        .await
        .expect("created");
    nodes(&db, "User").await;
    run(
        &db,
        &[r#"INSERT INTO "_UserPosts" ("A", "B") VALUES ('u1', 'p1'), ('u2', 'p2')"#],
    )
    .await;
    assert_eq!(functions(&db).await, ["__svc_inline_UserPosts_A"]);

    // The type and the relation renamed: the copy takes the relation's new name, keeps its
    // values, and its trigger writes to the renamed table.
    let renamed = blog("Person", "Authorship", false);
    let hints = Hints {
        models: vec![("Person".into(), "User".into())],
        relations: vec![("Authorship".into(), "UserPosts".into())],
        ..Hints::default()
    };
    let applied = migrate_with(&db, &renamed, &hints, Options::default()).await;
    assert!(matches!(applied, Ok(Outcome::Applied(_))), "{applied:?}");
    assert_eq!(copy_columns(&db, "Post").await, ["__Authorship_A"]);
    assert_eq!(functions(&db).await, ["__svc_inline_Authorship_A"]);
    assert_eq!(
        copies(&db, "__Authorship_A").await,
        ["p1=u1", "p2=u2", "p3=-"]
    );
    run(
        &db,
        &[r#"INSERT INTO "_Authorship" ("A", "B") VALUES ('u1', 'p3')"#],
    )
    .await;
    assert_eq!(
        copies(&db, "__Authorship_A").await,
        ["p1=u1", "p2=u2", "p3=u1"]
    );

    // Posts with several authors: no post has one partner any more, so there is no copy.
    let many = blog("Person", "Authorship", true);
    let applied = migrate_to(&db, &many, Options::default()).await;
    assert!(matches!(applied, Ok(Outcome::Applied(_))), "{applied:?}");
    assert_eq!(copy_columns(&db, "Post").await, Vec::<String>::new());
    assert_eq!(functions(&db).await, Vec::<String>::new());
    run(
        &db,
        &[
            r#"INSERT INTO "_Authorship" ("A", "B") VALUES ('u2', 'p3')"#,
            r#"DELETE FROM "_Authorship" WHERE "A" = 'u1'"#,
        ],
    )
    .await;
    // Back to one author per post: the copy is made again from the edges written meanwhile.
    let applied = migrate_to(&db, &renamed, Options::default()).await;
    assert!(matches!(applied, Ok(Outcome::Applied(_))), "{applied:?}");
    assert_eq!(
        copies(&db, "__Authorship_A").await,
        ["p1=-", "p2=u2", "p3=u2"]
    );

    // A database whose copies are missing (as one made before they existed) gets them at the
    // next start, with the model unchanged.
    run(
        &db,
        &[
            r#"DROP FUNCTION "__svc_inline_Authorship_A"() CASCADE"#,
            r#"ALTER TABLE "Post" DROP COLUMN "__Authorship_A""#,
            r#"INSERT INTO "_Authorship" ("A", "B") VALUES ('u1', 'p1')"#,
        ],
    )
    .await;
    assert_eq!(
        migrate_to(&db, &renamed, Options::default()).await,
        Ok(Outcome::UpToDate)
    );
    assert_eq!(
        copies(&db, "__Authorship_A").await,
        ["p1=u1", "p2=u2", "p3=u2"]
    );
    run(
        &db,
        &[r#"DELETE FROM "_Authorship" WHERE "A" = 'u1' AND "B" = 'p1'"#],
    )
    .await;
    assert_eq!(
        copies(&db, "__Authorship_A").await,
        ["p1=-", "p2=u2", "p3=u2"]
    );
    // The one row-level trigger of earlier builds is replaced by statement-level ones at the
    // next start.
    let statement_level = [
        "__svc_inline_A_delete:statement",
        "__svc_inline_A_insert:statement",
        "__svc_inline_A_truncate:statement",
        "__svc_inline_A_update:statement",
    ];
    assert_eq!(triggers(&db, "_Authorship").await, statement_level);
    run(
        &db,
        &[
            r#"DROP TRIGGER "__svc_inline_A_insert" ON "_Authorship""#,
            r#"DROP TRIGGER "__svc_inline_A_update" ON "_Authorship""#,
            r#"DROP TRIGGER "__svc_inline_A_delete" ON "_Authorship""#,
            r#"CREATE TRIGGER "__svc_inline_A" AFTER INSERT OR UPDATE OR DELETE ON "_Authorship" FOR EACH ROW EXECUTE FUNCTION "__svc_inline_Authorship_A"()"#,
        ],
    )
    .await;
    assert_eq!(
        migrate_to(&db, &renamed, Options::default()).await,
        Ok(Outcome::UpToDate)
    );
    assert_eq!(triggers(&db, "_Authorship").await, statement_level);
    run(
        &db,
        &[r#"INSERT INTO "_Authorship" ("A", "B") VALUES ('u1', 'p1')"#],
    )
    .await;
    assert_eq!(
        copies(&db, "__Authorship_A").await,
        ["p1=u1", "p2=u2", "p3=u2"]
    );
    // Nothing missing: the next start changes nothing.
    assert_eq!(
        migrate_to(&db, &renamed, Options::default()).await,
        Ok(Outcome::UpToDate)
    );
}

/// Creates a post by `author` through the API (`authorId`); returns its id.
async fn post(srv: &Server, slug: &str, title: &str, author: &str) -> String {
    srv.create(
        "Post",
        &format!(r#"slug: "{slug}", title: "{title}", authorId: "{author}""#),
    )
    .await
}

/// Through the API: mutations keep the copies, and a to-many page reads its nodes by them.
#[tokio::test]
async fn relation_pages_read_the_copy() {
    let Some(srv) = Server::start(support::Db::Postgres).await else {
        return;
    };
    let ann = srv
        .create("User", r#"email: "ann@example.com", name: "Ann""#)
        .await;
    let bob = srv
        .create("User", r#"email: "bob@example.com", name: "Bob""#)
        .await;
    let p1 = post(&srv, "p1", "one", &ann).await;
    let p2 = post(&srv, "p2", "two", &ann).await;
    srv.data(&format!(
        r#"mutation {{ updatePost(id: "{p2}", authorId: "{bob}") {{ id }} }}"#
    ))
    .await;
    let read = r#"{ allUsers(orderBy: name_ASC) { name posts { slug } } }"#;
    assert_eq!(
        srv.data(read).await,
        json!({"allUsers": [
            {"name": "Ann", "posts": [{"slug": "p1"}]},
            {"name": "Bob", "posts": [{"slug": "p2"}]},
        ]})
    );
    // A nested create (in a transaction) writes its parent into the new post's row.
    let cid = srv
        .data(
            r#"mutation { createUser(email: "cid@example.com", name: "Cid", posts: [{slug: "p3", title: "three"}]) { id posts { id } } }"#,
        )
        .await;
    let p3 = cid["createUser"]["posts"][0]["id"]
        .as_str()
        .expect("p3")
        .to_owned();
    let cid = cid["createUser"]["id"].as_str().expect("Cid").to_owned();
    // A create whose author does not exist writes nothing, copy included.
    let missing = srv
        .gql(r#"mutation { createPost(slug: "p4", title: "four", authorId: "cjld2cjxh0000qzrmn831i7rn") { id } }"#)
        .await;
    assert!(
        missing["errors"].as_array().is_some_and(|e| !e.is_empty()),
        "{missing}"
    );
    let db = Db::connect(&srv.database().url).await.expect("connect");
    assert_eq!(
        copies(&db, "__UserPosts_A").await,
        [
            format!("{p1}={ann}"),
            format!("{p2}={bob}"),
            format!("{p3}={cid}")
        ]
    );
    // The page reads the copy, not the join table: a copy changed behind the trigger's back
    // moves the post in the page (the join table still says Bob).
    run(
        &db,
        &[&format!(
            r#"UPDATE "Post" SET "__UserPosts_A" = '{ann}' WHERE "id" = '{p2}'"#
        )],
    )
    .await;
    assert_eq!(
        srv.data(read).await,
        json!({"allUsers": [
            {"name": "Ann", "posts": [{"slug": "p1"}, {"slug": "p2"}]},
            {"name": "Bob", "posts": []},
            {"name": "Cid", "posts": [{"slug": "p3"}]},
        ]})
    );
}

/// A relation name longer than PostgreSQL keeps (63 bytes) names a copy PostgreSQL cuts: a
/// start with the model unchanged finds it in place and leaves it (the same column, not one
/// dropped and made again), and pages still read it.
#[tokio::test]
async fn a_long_relation_name_is_found_again() {
    let Some((_guard, db)) = open(support::Db::Postgres).await else {
        return;
    };
    let name = format!("Authorship{}", "x".repeat(60));
    let target = blog("User", &name, false);
    migrate_to(&db, &target, Options::default())
        .await
        .expect("created");
    let column = copy_columns(&db, "Post").await;
    assert_eq!(column.len(), 1);
    assert_eq!(column[0].len(), 63);
    let attnum = format!(
        "SELECT attnum::text FROM pg_attribute WHERE attrelid = to_regclass('\"Post\"') AND attname = '{}'",
        column[0]
    );
    let before = texts(&db, &attnum).await;
    nodes(&db, "User").await;
    run(
        &db,
        &[&format!(
            r#"INSERT INTO "_{name}" ("A", "B") VALUES ('u1', 'p2')"#
        )],
    )
    .await;
    assert_eq!(
        migrate_to(&db, &target, Options::default()).await,
        Ok(Outcome::UpToDate)
    );
    assert_eq!(texts(&db, &attnum).await, before);
    assert_eq!(copies(&db, &column[0]).await, ["p1=-", "p2=u1", "p3=-"]);
}

/// A `deleteUser` whose cascade clears its post's copy of the author, while another
/// transaction holds the post's row and then deletes the same edge: the two lock the rows in
/// opposite orders, and PostgreSQL breaks the deadlock by rolling `deleteUser`'s transaction
/// back (it waited first, so its check runs first). The mutation runs again once the other
/// commits, and succeeds.
#[tokio::test]
async fn a_mutation_rolled_back_for_a_deadlock_runs_again() {
    use sqlx::Connection;
    let Some(srv) = Server::start(support::Db::Postgres).await else {
        return;
    };
    let ann = srv
        .create("User", r#"email: "ann@example.com", name: "Ann""#)
        .await;
    let p1 = post(&srv, "p1", "one", &ann).await;
    let mut conn = sqlx::PgConnection::connect(&srv.database().url)
        .await
        .expect("connect");
    for sql in [
        "BEGIN".to_owned(),
        format!(r#"UPDATE "Post" SET "votes" = 1 WHERE "id" = '{p1}'"#),
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(&mut conn)
            .await
            .expect("the other transaction");
    }
    let delete = format!(r#"mutation {{ deleteUser(id: "{ann}") {{ id }} }}"#);
    let (deleted, ()) = tokio::join!(srv.gql(&delete), async {
        // `deleteUser` is waiting for the post's row by now; this waits for its edge.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        for sql in [
            format!(r#"DELETE FROM "_UserPosts" WHERE "B" = '{p1}'"#),
            "COMMIT".to_owned(),
        ] {
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await
                .expect("the other transaction goes through");
        }
    });
    assert_eq!(deleted, json!({"data": {"deleteUser": {"id": ann}}}));
    assert_eq!(
        srv.data(r#"{ allUsers { id } allPosts { slug votes author { id } } }"#)
            .await,
        json!({"allUsers": [], "allPosts": [{"slug": "p1", "votes": 1, "author": null}]})
    );
    let db = Db::connect(&srv.database().url).await.expect("connect");
    assert_eq!(copies(&db, "__UserPosts_A").await, [format!("{p1}=-")]);
}
