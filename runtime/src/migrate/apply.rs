//! Applying a [`Plan`] inside one transaction: data checks first (a step that the stored nodes
//! would violate fails with the reference's error), then the DDL. SQLite changes tables by the
//! rebuild procedure (new table, copy, drop, rename); PostgreSQL uses `ALTER TABLE`.

use sea_orm::{ConnectionTrait, DatabaseTransaction};

use super::MigrationError;
use super::ddl;
use super::plan::{FieldChange, Plan, Step};
use super::schema::{Field, Model, Schema};
use super::search;
use crate::model::Kind;
use crate::storage::Backend;
use crate::storage::layout::quote;

/// Checks the stored data against every step, then changes the tables.
pub(super) async fn apply(
    tx: &DatabaseTransaction,
    backend: Backend,
    renamed: &Schema,
    new: &Schema,
    plan: &Plan,
) -> Result<(), MigrationError> {
    // Renames first, so the checks and the other steps see the new names (`renamed` is the
    // stored schema with them made).
    for step in &plan.steps {
        if step.is_rename() {
            run(tx, statements(backend, renamed, new, step)).await?;
        }
    }
    for step in &plan.steps {
        check(tx, renamed, new, step).await?;
    }
    for step in &plan.steps {
        if !step.is_rename() {
            run(tx, statements(backend, renamed, new, step)).await?;
        }
    }
    run(tx, search::after(renamed, new, backend)).await
}

async fn run(tx: &DatabaseTransaction, statements: Vec<String>) -> Result<(), MigrationError> {
    for statement in statements {
        tx.execute_unprepared(&statement)
            .await
            .map_err(|e| MigrationError::failed(&statement, e))?;
    }
    Ok(())
}

async fn count(tx: &DatabaseTransaction, sql: String) -> Result<i64, MigrationError> {
    let row = tx
        .query_one_raw(sea_orm::Statement::from_string(
            tx.get_database_backend(),
            sql.clone(),
        ))
        .await
        .map_err(|e| MigrationError::failed(&sql, e))?;
    match row {
        Some(row) => row
            .try_get_by_index::<i64>(0)
            .map_err(|e| MigrationError::failed(&sql, e)),
        None => Ok(0),
    }
}

/// `SELECT COUNT(*) FROM <from>`.
async fn count_in(tx: &DatabaseTransaction, from: String) -> Result<i64, MigrationError> {
    count(tx, format!("SELECT COUNT(*) FROM {from}")).await
}

/// The data checks of one step.
async fn check(
    tx: &DatabaseTransaction,
    old: &Schema,
    new: &Schema,
    step: &Step,
) -> Result<(), MigrationError> {
    match step {
        Step::AlterModel {
            name,
            changes,
            required_relations,
        } => {
            let nodes = count_in(tx, quote(name)).await?;
            for change in changes {
                check_field(tx, name, nodes, change).await?;
            }
            if nodes == 0 {
                return Ok(());
            }
            for (field, relation) in required_relations {
                check_required_relation(tx, old, new, name, nodes, field, relation).await?;
            }
            Ok(())
        }
        Step::AlterRelation { from, to } => {
            let join = quote(&to.table);
            for ((column, was_unique), (_, unique)) in ddl::relation_columns(from)
                .into_iter()
                .zip(ddl::relation_columns(to))
            {
                if !unique || was_unique {
                    continue;
                }
                let n = count_in(
                    tx,
                    format!("(SELECT \"{column}\" FROM {join} GROUP BY \"{column}\" HAVING COUNT(*) > 1) AS d"),
                )
                .await?;
                if n > 0 {
                    return Err(MigrationError::new(
                        Some(2031),
                        format!(
                            "The relation `{}` cannot become to-one, because {n} nodes already have more than one related node.",
                            to.name
                        ),
                    ));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The data checks of one field change on model `name`, which holds `nodes` nodes.
async fn check_field(
    tx: &DatabaseTransaction,
    name: &str,
    nodes: i64,
    change: &FieldChange,
) -> Result<(), MigrationError> {
    let table = quote(name);
    let (from, to, valued) = match change {
        FieldChange::Add { field, value } => {
            if field.required && field.default.is_none() && value.is_none() && nodes > 0 {
                return Err(MigrationError::needs_value(&field.name));
            }
            return Ok(());
        }
        FieldChange::Remove(_) => return Ok(()),
        FieldChange::Change { from, to, value } => (from, to, value.is_some()),
    };
    let col = quote(&from.name);
    let rows_where = |cond: String| count_in(tx, format!("{table} WHERE {cond}"));
    if !from.same_storage(to)
        && !from.converts_to_text(to)
        && !valued
        && rows_where(format!("{col} IS NOT NULL")).await? > 0
    {
        return Err(MigrationError::needs_value(&to.name));
    }
    if to.required && !from.required && !valued && rows_where(format!("{col} IS NULL")).await? > 0 {
        return Err(MigrationError::needs_value(&to.name));
    }
    if from.same_storage(to) && to.kind == Kind::Enum {
        for value in from
            .enum_values
            .iter()
            .filter(|v| !to.enum_values.contains(v))
        {
            let literal = value.replace('\'', "''");
            let uses = if to.list {
                format!("{col} LIKE '%\"{literal}\"%'")
            } else {
                format!("{col} = '{literal}'")
            };
            let n = rows_where(uses).await?;
            if n > 0 {
                return Err(MigrationError::new(
                    None,
                    format!(
                        "The value `{value}` cannot be removed from the field `{}`, because {n} nodes of `{name}` use it.",
                        to.name
                    ),
                ));
            }
        }
    }
    if to.unique && !from.unique {
        let shared = count_in(
            tx,
            format!("(SELECT {col} FROM {table} WHERE {col} IS NOT NULL GROUP BY {col} HAVING COUNT(*) > 1) AS d"),
        )
        .await?;
        if shared > 0 {
            return Err(MigrationError::new(
                None,
                format!(
                    "The field `{}` cannot be made unique, because several nodes of `{name}` share a value.",
                    to.name
                ),
            ));
        }
    }
    Ok(())
}

/// 2052: every node of `name` (which holds `nodes`) needs a partner through `relation`.
async fn check_required_relation(
    tx: &DatabaseTransaction,
    old: &Schema,
    new: &Schema,
    name: &str,
    nodes: i64,
    field: &str,
    relation: &str,
) -> Result<(), MigrationError> {
    let Some(rel) = new.relation(relation) else {
        return Ok(());
    };
    // A relation that is new (or re-created) has no edges yet.
    let kept = old
        .relation(relation)
        .is_some_and(|was| was.a == rel.a && was.b == rel.b && was.table == rel.table);
    let lacking = if kept {
        let cond = match (rel.a == name, rel.b == name) {
            (true, true) => "(j.\"A\" = m.\"id\" OR j.\"B\" = m.\"id\")",
            (true, false) => "j.\"A\" = m.\"id\"",
            _ => "j.\"B\" = m.\"id\"",
        };
        count_in(
            tx,
            format!(
                "{} AS m WHERE NOT EXISTS (SELECT 1 FROM {} AS j WHERE {cond})",
                quote(name),
                quote(&rel.table)
            ),
        )
        .await?
    } else {
        nodes
    };
    if lacking > 0 {
        return Err(MigrationError::new(
            Some(2052),
            format!(
                "The relation field `{field}` cannot be made required, because there are already instances of the enclosing type that violate this constraint."
            ),
        ));
    }
    Ok(())
}

/// The DDL of one step.
fn statements(backend: Backend, old: &Schema, new: &Schema, step: &Step) -> Vec<String> {
    match step {
        Step::RenameModel { from, to } => {
            let mut out = vec![format!(
                "ALTER TABLE {} RENAME TO {}",
                quote(&from.name),
                quote(to)
            )];
            let id = from.id();
            for f in from.fields.iter().filter(|f| f.unique && f.name != id) {
                out.extend(ddl::rename_unique_index(
                    backend,
                    (&from.name, &f.name),
                    (to, &f.name),
                ));
            }
            for f in from.fields.iter().filter(|f| f.search) {
                out.extend(search::rename(
                    backend,
                    (&from.name, &f.name),
                    (to, &f.name),
                ));
            }
            out
        }
        Step::RenameRelation { from, to } => {
            let mut out = vec![format!(
                "ALTER TABLE {} RENAME TO {}",
                quote(&from.table),
                quote(&to.table)
            )];
            for (column, unique) in ddl::relation_columns(from) {
                out.push(format!(
                    "DROP INDEX IF EXISTS {}",
                    quote(&ddl::relation_index(from, column))
                ));
                out.extend(ddl::relation_index_statement(to, column, unique));
            }
            out
        }
        Step::RenameField {
            model,
            from,
            to,
            unique,
            search,
        } => {
            let mut out = vec![format!(
                "ALTER TABLE {} RENAME COLUMN {} TO {}",
                quote(model),
                quote(from),
                quote(to)
            )];
            if *unique {
                out.extend(ddl::rename_unique_index(
                    backend,
                    (model, from),
                    (model, to),
                ));
            }
            if *search {
                out.extend(search::rename(backend, (model, from), (model, to)));
            }
            out
        }
        Step::DropRelation(r) => vec![format!("DROP TABLE {}", quote(&r.table))],
        Step::DropModel(m) => vec![format!("DROP TABLE {}", quote(&m.name))],
        Step::CreateModel(m) => {
            let mut out = vec![ddl::create_table(m, &m.name, backend)];
            out.extend(ddl::index_statements(m, backend));
            out
        }
        Step::CreateRelation(r) => ddl::relation_statements(r, backend),
        Step::AlterRelation { from, to } => {
            let mut out = Vec::new();
            for ((column, was_unique), (_, unique)) in ddl::relation_columns(from)
                .into_iter()
                .zip(ddl::relation_columns(to))
            {
                if unique != was_unique {
                    out.push(format!(
                        "DROP INDEX IF EXISTS {}",
                        quote(&ddl::relation_index(from, column))
                    ));
                    out.extend(ddl::relation_index_statement(to, column, unique));
                }
            }
            out
        }
        Step::AlterModel { name, changes, .. } => {
            let (Some(before), Some(after)) = (old.model(name), new.model(name)) else {
                return Vec::new();
            };
            // `@search` alone changes no column (`search::after` makes or drops its index).
            let changes: Vec<FieldChange> = changes
                .iter()
                .filter(|c| !c.is_search_only())
                .cloned()
                .collect();
            if changes.is_empty() {
                return Vec::new();
            }
            match backend {
                Backend::Sqlite => rebuild(before, after, &changes),
                Backend::Postgres => alter(after, &changes),
            }
        }
    }
}

/// SQLite: create the new table, copy every kept value (converted where the type changed to
/// `String`), drop the old table, rename, re-create the indexes. Foreign keys are off while the
/// migration runs, so the join tables keep their edges.
fn rebuild(before: &Model, after: &Model, changes: &[FieldChange]) -> Vec<String> {
    let backend = Backend::Sqlite;
    let temp = format!("_svc_new_{}", after.name);
    let mut out = vec![ddl::create_table(after, &temp, backend)];
    let columns: Vec<String> = after.fields.iter().map(|f| quote(&f.name)).collect();
    let values: Vec<String> = after
        .fields
        .iter()
        .map(|f| {
            let value = migration_value(changes, &f.name).map(|v| literal(f, v, backend));
            let col = quote(&f.name);
            match (before.field(&f.name), value) {
                (Some(was), value) if was.same_storage(f) => match value {
                    Some(v) if f.required && !was.required && f.list => v,
                    Some(v) if f.required && !was.required => format!("COALESCE({col}, {v})"),
                    _ => col,
                },
                (Some(was), _) if was.converts_to_text(f) => text_of(was, backend),
                (Some(_), Some(v)) => v,
                (Some(_), None) => "NULL".to_owned(),
                (None, Some(v)) => v,
                (None, None) => f
                    .default
                    .as_ref()
                    .map_or("NULL".to_owned(), |d| literal(f, d, backend)),
            }
        })
        .collect();
    out.push(format!(
        "INSERT INTO {} ({}) SELECT {} FROM {}",
        quote(&temp),
        columns.join(", "),
        values.join(", "),
        quote(&after.name)
    ));
    out.push(format!("DROP TABLE {}", quote(&after.name)));
    out.push(format!(
        "ALTER TABLE {} RENAME TO {}",
        quote(&temp),
        quote(&after.name)
    ));
    out.extend(ddl::index_statements(after, backend));
    out
}

/// PostgreSQL: one `ALTER TABLE` statement per change.
/// The migration value a change carries for `field`.
fn migration_value<'a>(changes: &'a [FieldChange], field: &str) -> Option<&'a serde_json::Value> {
    changes.iter().find_map(|c| match c {
        FieldChange::Add { field: f, value } if f.name == field => value.as_ref(),
        FieldChange::Change { to, value, .. } if to.name == field => value.as_ref(),
        _ => None,
    })
}

fn alter(after: &Model, changes: &[FieldChange]) -> Vec<String> {
    let backend = Backend::Postgres;
    let table = quote(&after.name);
    let mut out = Vec::new();
    for change in changes {
        match change {
            FieldChange::Remove(f) => {
                out.push(format!(
                    "ALTER TABLE {table} DROP COLUMN {}",
                    quote(&f.name)
                ));
            }
            FieldChange::Add { field: f, value } => {
                out.push(format!(
                    "ALTER TABLE {table} ADD COLUMN {} {}",
                    quote(&f.name),
                    ddl::column_type(f.kind, f.list, backend)
                ));
                if let Some(d) = value.as_ref().or(f.default.as_ref()) {
                    out.push(format!(
                        "UPDATE {table} SET {} = {}",
                        quote(&f.name),
                        literal(f, d, backend)
                    ));
                }
                if f.unique {
                    out.push(ddl::unique_index_of(&after.name, f, backend));
                }
            }
            FieldChange::Change { from, to, value } => {
                let col = quote(&to.name);
                let value = value.as_ref().map(|v| literal(to, v, backend));
                let column_type = ddl::column_type(to.kind, to.list, backend);
                if !from.same_storage(to) {
                    let using = match &value {
                        _ if from.converts_to_text(to) => text_of(from, backend),
                        Some(v) => format!("CAST({v} AS {column_type})"),
                        None => "NULL".to_owned(),
                    };
                    out.push(format!(
                        "ALTER TABLE {table} ALTER COLUMN {col} TYPE {column_type} USING {using}"
                    ));
                } else if let (true, false, Some(v)) = (to.required, from.required, &value) {
                    let missing = if to.list {
                        String::new()
                    } else {
                        format!(" WHERE {col} IS NULL")
                    };
                    out.push(format!("UPDATE {table} SET {col} = {v}{missing}"));
                }
                // A unique field whose index changes form with its type (to or from a
                // `String` on PostgreSQL) gets it made again after the steps
                // (`migrate::unique`).
                if from.unique && !to.unique {
                    out.push(format!(
                        "DROP INDEX IF EXISTS {}",
                        quote(&ddl::unique_index(&after.name, &from.name))
                    ));
                }
                if to.unique && !from.unique {
                    out.push(ddl::unique_index_of(&after.name, to, backend));
                }
            }
        }
    }
    out
}

/// The text of a column's value in the API's notation, for a change to `String`.
fn text_of(from: &Field, backend: Backend) -> String {
    let col = quote(&from.name);
    let text = match (from.kind, backend) {
        (Kind::Boolean, _) => {
            format!("CASE WHEN {col} IS NULL THEN NULL WHEN {col} THEN 'true' ELSE 'false' END")
        }
        (Kind::DateTime, Backend::Postgres) => {
            format!("to_char({col} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')")
        }
        (_, Backend::Sqlite) => format!("CAST({col} AS TEXT)"),
        (_, Backend::Postgres) => format!("{col}::text"),
    };
    match backend {
        Backend::Sqlite => text,
        Backend::Postgres => format!("({text})::citext"),
    }
}

/// A default value as an SQL literal of the field's column.
fn literal(field: &Field, value: &serde_json::Value, backend: Backend) -> String {
    let string = |s: &str| format!("'{}'", s.replace('\'', "''"));
    if field.list || field.kind == Kind::Json {
        return string(&value.to_string());
    }
    match value {
        serde_json::Value::Null => "NULL".to_owned(),
        serde_json::Value::Bool(b) => match backend {
            Backend::Sqlite => if *b { "1" } else { "0" }.to_owned(),
            Backend::Postgres => if *b { "TRUE" } else { "FALSE" }.to_owned(),
        },
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => string(s),
        other => string(&other.to_string()),
    }
}
