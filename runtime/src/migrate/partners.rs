//! PostgreSQL: each node's to-one partner copied into its own row.
//!
//! Relations are stored in join tables (`A`, `B`). A relation page (`User.posts`) reads
//! the page of edges, then looks each related node up by its id: one index search per node,
//! which for ten users with ten posts each was most of PostgreSQL's work (docs/benchmarks.md,
//! "PostgreSQL: to-one partners copied into the node's row").
//!
//! Where a join column is unique (the field on that side is to-one, so each of its nodes has at
//! most one partner), that side's table gets a column `__<join table>_<other column>` holding
//! the node's partner, and an index on `(partner, id)` of the rows that have one. A page of the
//! other side's to-many field then reads `WHERE t0."__<join table>_<own>" = <parent>` straight
//! from the related table, like a foreign key.
//!
//! The join table stays the one place edges are written. Triggers on it keep the copy (insert,
//! update and delete, including cascades, and truncate), so every writer (mutations, NDF import,
//! migrations) keeps it without knowing about it. They are statement-level: each statement's
//! rows (its transition tables) update the copies in one pass, where a trigger per row ran an
//! `UPDATE` per edge (an import's batch of edges took up to a fifth longer). [`sync`] creates,
//! fills and removes the columns, indexes, functions and triggers to match the model, in the
//! migration's transaction; GraphQL names cannot begin with `__`, so no field can clash with
//! the columns.

use std::collections::BTreeSet;

use sea_orm::{ConnectionTrait, DatabaseTransaction, DbErr, Statement};

use super::schema::Schema;
use crate::storage::layout::{identifier, partner_column, quote};

/// Prefix of the trigger functions (one per copied column) and of the triggers.
const FUNCTION_PREFIX: &str = "__svc_inline_";

/// The names the triggers give the rows their statement removed and added (transition tables).
const OLD_ROWS: &str = "\"__svc_old\"";
const NEW_ROWS: &str = "\"__svc_new\"";

/// One copied partner: the column `column` on `table` holds, for each node, the `value` join
/// column of the edge whose `key` join column is the node's id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct PartnerCopy {
    table: String,
    id: String,
    column: String,
    join: String,
    key: &'static str,
    value: &'static str,
}

impl PartnerCopy {
    fn function(&self) -> String {
        identifier(format!(
            "{FUNCTION_PREFIX}{}",
            self.column.trim_start_matches('_')
        ))
    }

    /// The row-level trigger of earlier builds, which the statement-level ones replace.
    fn trigger(&self) -> String {
        format!("{FUNCTION_PREFIX}{}", self.value)
    }

    /// The trigger on `event` (`insert`, `update`, `delete` or `truncate`).
    fn trigger_on(&self, event: &str) -> String {
        format!("{}_{event}", self.trigger())
    }
}

/// The copies `schema` needs: one per unique join column.
fn wanted(schema: &Schema) -> Vec<PartnerCopy> {
    let mut out = Vec::new();
    for rel in &schema.relations {
        // Column `B` is unique when side B's field is to-one: each B node has one A partner.
        let sides = [
            (!rel.b_list, &rel.b, "B", "A"),
            (!rel.a_list, &rel.a, "A", "B"),
        ];
        for (unique, model, key, value) in sides {
            let Some(model) = schema.model(model).filter(|_| unique) else {
                continue;
            };
            out.push(PartnerCopy {
                table: model.name.clone(),
                id: model.id().to_owned(),
                column: partner_column(&rel.table, value),
                join: rel.table.clone(),
                key,
                value,
            });
        }
    }
    out.sort();
    out
}

/// Brings the copies to what `schema` needs: with `always`, every column is refilled and every
/// function and trigger made again (after a migration, which may have renamed tables);
/// otherwise only when a column or function is missing or left over, or a trigger is one of
/// the row-level triggers earlier builds made. Returns whether anything was changed.
pub async fn sync(
    tx: &DatabaseTransaction,
    schema: &Schema,
    always: bool,
) -> Result<bool, (String, DbErr)> {
    let wanted = wanted(schema);
    let columns = strings(
        tx,
        "SELECT c.relname || '.' || a.attname FROM pg_attribute AS a \
         JOIN pg_class AS c ON c.oid = a.attrelid \
         WHERE c.relnamespace = to_regnamespace(current_schema()) AND c.relkind = 'r' \
         AND a.attnum > 0 AND NOT a.attisdropped AND a.attname LIKE '\\_\\_%'",
    )
    .await?;
    let functions = strings(
        tx,
        "SELECT proname FROM pg_proc \
         WHERE pronamespace = to_regnamespace(current_schema()) \
         AND proname LIKE '\\_\\_svc\\_inline\\_%'",
    )
    .await?;
    let want_columns: BTreeSet<String> = wanted
        .iter()
        .map(|c| format!("{}.{}", c.table, c.column))
        .collect();
    let want_functions: BTreeSet<String> = wanted.iter().map(PartnerCopy::function).collect();
    // The partial indexes: a copy's index made before it held only the rows with a partner is
    // made again.
    let partial = strings(
        tx,
        "SELECT c.relname::text FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid \
         WHERE c.relnamespace = to_regnamespace(current_schema()) AND i.indpred IS NOT NULL",
    )
    .await?;
    let whole: Vec<&PartnerCopy> = wanted
        .iter()
        .filter(|c| !partial.contains(&c.column))
        .collect();
    // Row-level triggers of earlier builds, which the statement-level ones replace.
    let row_level = strings(
        tx,
        "SELECT t.tgname::text FROM pg_trigger AS t JOIN pg_proc AS p ON p.oid = t.tgfoid \
         WHERE p.pronamespace = to_regnamespace(current_schema()) \
         AND p.proname LIKE '\\_\\_svc\\_inline\\_%' AND (t.tgtype & 1) = 1",
    )
    .await?;
    if !always
        && columns == want_columns
        && functions == want_functions
        && whole.is_empty()
        && row_level.is_empty()
    {
        return Ok(false);
    }
    let schema_name = strings(tx, "SELECT current_schema()")
        .await?
        .into_iter()
        .next()
        .unwrap_or_else(|| "public".to_owned());
    let mut statements = Vec::new();
    for stale in functions.difference(&want_functions) {
        // Its triggers go with it.
        statements.push(format!("DROP FUNCTION {}() CASCADE", quote(stale)));
    }
    for stale in columns.difference(&want_columns) {
        if let Some((table, column)) = stale.split_once('.') {
            statements.push(format!(
                "ALTER TABLE {} DROP COLUMN {}",
                quote(table),
                quote(column)
            ));
        }
    }
    for copy in whole {
        statements.push(format!("DROP INDEX IF EXISTS {}", quote(&copy.column)));
    }
    for copy in &wanted {
        statements.extend(copy_statements(copy, &schema_name));
    }
    for statement in statements {
        tx.execute_unprepared(&statement)
            .await
            .map_err(|e| (statement, e))?;
    }
    Ok(true)
}

/// The column, its index, the trigger keeping it, and the statements filling it from the join
/// table; each can run again.
fn copy_statements(copy: &PartnerCopy, schema: &str) -> Vec<String> {
    let table = quote(&copy.table);
    let qualified = format!("{}.{table}", quote(schema));
    let id = quote(&copy.id);
    let column = quote(&copy.column);
    let join = quote(&copy.join);
    let (key, value) = (quote(copy.key), quote(copy.value));
    let function = quote(&copy.function());
    let trigger = quote(&copy.trigger());
    let qualified_join = format!("{}.{join}", quote(schema));
    let mut statements = vec![
        format!("ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} TEXT COLLATE \"C\""),
        // Named by the column, which is unique across the service (a model name cannot begin
        // with `_`), so a renamed table keeps it. It holds only the rows that have a partner:
        // many nodes have none for a while or for good (an import writes nodes and lists
        // before relations), and every version of a row that is not a HOT update would add an
        // entry; the pages it serves look for one partner (`= parent`), which the planner
        // knows is not null.
        format!(
            "CREATE INDEX IF NOT EXISTS {column} ON {table} ({column}, {id}) \
             WHERE {column} IS NOT NULL"
        ),
        // Statement-level triggers over the rows each statement wrote (its transition
        // tables), so a statement writing many edges (an NDF import's batch, a cascade)
        // updates the copies in one pass instead of once per row. A copy is cleared only if it
        // still holds a removed edge's partner and that edge is gone, and written only if it
        // changes and its edge is there, so the copies end right whatever the order in which
        // one statement's triggers fire (a `WITH` that deletes an edge and inserts another).
        format!(
            "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN \
             IF TG_OP = 'TRUNCATE' THEN \
             UPDATE {qualified} SET {column} = NULL WHERE {column} IS NOT NULL; \
             RETURN NULL; \
             END IF; \
             IF TG_OP <> 'INSERT' THEN \
             UPDATE {qualified} AS t SET {column} = NULL FROM {OLD_ROWS} AS o \
             WHERE t.{id} = o.{key} AND t.{column} = o.{value} \
             AND NOT EXISTS (SELECT 1 FROM {qualified_join} AS j \
             WHERE j.{key} = o.{key} AND j.{value} = o.{value}); \
             END IF; \
             IF TG_OP <> 'DELETE' THEN \
             UPDATE {qualified} AS t SET {column} = n.{value} FROM {NEW_ROWS} AS n \
             WHERE t.{id} = n.{key} AND t.{column} IS DISTINCT FROM n.{value} \
             AND EXISTS (SELECT 1 FROM {qualified_join} AS j \
             WHERE j.{key} = n.{key} AND j.{value} = n.{value}); \
             END IF; \
             RETURN NULL; \
             END $$"
        ),
        // The one row-level trigger of earlier builds.
        format!("DROP TRIGGER IF EXISTS {trigger} ON {join}"),
    ];
    // One statement-level trigger per event, each with the transition tables it reads.
    let events = [
        ("insert", format!("REFERENCING NEW TABLE AS {NEW_ROWS} ")),
        (
            "update",
            format!("REFERENCING OLD TABLE AS {OLD_ROWS} NEW TABLE AS {NEW_ROWS} "),
        ),
        ("delete", format!("REFERENCING OLD TABLE AS {OLD_ROWS} ")),
        ("truncate", String::new()),
    ];
    for (event, referencing) in events {
        let name = quote(&copy.trigger_on(event));
        let event = event.to_uppercase();
        statements.push(format!("DROP TRIGGER IF EXISTS {name} ON {join}"));
        statements.push(format!(
            "CREATE TRIGGER {name} AFTER {event} ON {join} \
             {referencing}FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
        ));
    }
    statements.extend([
        format!(
            "UPDATE {table} AS t SET {column} = j.{value} FROM {join} AS j \
             WHERE j.{key} = t.{id} AND t.{column} IS DISTINCT FROM j.{value}"
        ),
        format!(
            "UPDATE {table} AS t SET {column} = NULL WHERE t.{column} IS NOT NULL \
             AND NOT EXISTS (SELECT 1 FROM {join} AS j WHERE j.{key} = t.{id} \
             AND j.{value} = t.{column})"
        ),
    ]);
    statements
}

/// The first column of each row of `sql`, as text.
async fn strings(tx: &DatabaseTransaction, sql: &str) -> Result<BTreeSet<String>, (String, DbErr)> {
    let rows = tx
        .query_all_raw(Statement::from_string(
            tx.get_database_backend(),
            sql.to_owned(),
        ))
        .await
        .map_err(|e| (sql.to_owned(), e))?;
    rows.iter()
        .map(|row| row.try_get_by_index::<String>(0))
        .collect::<Result<_, _>>()
        .map_err(|e| (sql.to_owned(), e))
}
