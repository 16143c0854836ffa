//! Permission queries as SQL. A query grants iff all its `Some<Type>Exists` calls are true, so it
//! becomes `EXISTS (…) AND EXISTS (…)`. Variables that depend on the checked node (`$node_id`,
//! `$node_<f>`, `$old_<f>`) become columns of an outer row, so one statement answers the query
//! for any number of nodes:
//!
//! ```sql
//! SELECT o."id", CASE WHEN (EXISTS (…o."id"…)) THEN 1 ELSE 0 END, …
//! FROM "Post" AS o WHERE o."id" IN (<ids>)
//! ```

use std::collections::HashMap;

use async_graphql::indexmap::IndexMap;
use async_graphql::{Name, Value};

use crate::model::{
    ApiError, ApiResult, Cells, InputError, ModelMeta, PermValue, PermissionQuery, ServiceMeta,
    VarSource,
};
use crate::query::filter::outer_value;
use crate::query::order::order_key;
use crate::query::page::push_exists;
use crate::query::{OUTER, Page, parse_filter};
use crate::storage::{Counted, Sql, Statements};

/// What a permission variable stands for in one evaluation.
#[derive(Debug, Clone)]
pub enum Bind {
    /// A value known before the statement runs.
    Const(Value),
    /// The outer node's id.
    OuterId,
    /// The outer node's column (index into the outer model's fields).
    OuterField(usize),
}

/// Binds every variable of a query.
pub type Binder<'a> = &'a (dyn Fn(VarSource) -> Bind + Sync);

/// Whether every query grants, for each outer node: id → one flag per query, in order. Ids
/// that name no node are missing from the map.
pub async fn for_nodes<C: Statements + ?Sized>(
    exec: &Counted<'_, C>,
    service: &ServiceMeta,
    queries: &[&PermissionQuery],
    outer: &'static ModelMeta,
    ids: &[&str],
    bind: Binder<'_>,
) -> ApiResult<HashMap<String, Vec<bool>>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let mut sql = Sql::new(exec.backend());
    let id_col = outer.fields[outer.id].name;
    sql.push("SELECT ").col(OUTER, id_col);
    push_flags(&mut sql, service, queries, outer, bind)?;
    sql.push(" FROM ")
        .ident(outer.table)
        .push(" AS ")
        .push(OUTER)
        .push(" WHERE ")
        .col(OUTER, id_col);
    sql.id_any(ids.iter().copied());
    let rows = exec.all(sql).await?;
    let mut out: HashMap<String, Vec<bool>> = HashMap::with_capacity(rows.len());
    for row in rows {
        let id = row
            .string(0)?
            .ok_or_else(|| ApiError::Internal("a node without id".into()))?;
        out.insert(id, flags_at(&row, 1, queries.len())?);
    }
    Ok(out)
}

/// Appends `, CASE WHEN (<query>) THEN 1 ELSE 0 END` for each query, over the outer row
/// [`OUTER`] of model `outer`.
pub fn push_flags(
    sql: &mut Sql,
    service: &ServiceMeta,
    queries: &[&PermissionQuery],
    outer: &'static ModelMeta,
    bind: Binder<'_>,
) -> ApiResult<()> {
    for q in queries {
        sql.push(", CASE WHEN (");
        push_query(sql, service, q, Some(outer), bind)?;
        sql.push(") THEN 1 ELSE 0 END");
    }
    Ok(())
}

/// The `count` flags [`push_flags`] selected, from column `start` on.
pub fn flags_at(row: &(impl Cells + ?Sized), start: usize, count: usize) -> ApiResult<Vec<bool>> {
    (start..start + count).map(|i| flag(row, i)).collect()
}

/// A `CASE WHEN … THEN 1 ELSE 0 END` column.
fn flag(row: &(impl Cells + ?Sized), idx: usize) -> ApiResult<bool> {
    Ok(row.int(idx)?.is_some_and(|v| v != 0))
}

/// Whether each query grants, when no variable depends on a node.
pub async fn constant<C: Statements + ?Sized>(
    exec: &Counted<'_, C>,
    service: &ServiceMeta,
    queries: &[&PermissionQuery],
    bind: Binder<'_>,
) -> ApiResult<Vec<bool>> {
    if queries.is_empty() {
        return Ok(Vec::new());
    }
    let mut sql = Sql::new(exec.backend());
    sql.push("SELECT ");
    for (i, q) in queries.iter().enumerate() {
        if i > 0 {
            sql.push(", ");
        }
        sql.push("CASE WHEN (");
        push_query(&mut sql, service, q, None, bind)?;
        sql.push(") THEN 1 ELSE 0 END");
    }
    let row = exec
        .one(sql)
        .await?
        .ok_or_else(|| ApiError::Internal("permission query returned no row".into()))?;
    (0..queries.len()).map(|i| flag(&row, i)).collect()
}

/// Appends the condition of one query: its calls' `EXISTS` joined with `AND`.
fn push_query(
    sql: &mut Sql,
    service: &ServiceMeta,
    query: &PermissionQuery,
    outer: Option<&'static ModelMeta>,
    bind: Binder<'_>,
) -> ApiResult<()> {
    if query.calls.is_empty() {
        sql.push("1=1");
        return Ok(());
    }
    for (i, call) in query.calls.iter().enumerate() {
        if i > 0 {
            sql.push(" AND ");
        }
        let model = service.models[call.model];
        let mut args: HashMap<&str, Value> = HashMap::new();
        for (name, value) in call.args {
            args.insert(name, to_value(value, query, outer, bind)?);
        }
        let page = page(query, model, args)?;
        push_exists(sql, model, &format!("p{i}"), &page);
    }
    Ok(())
}

/// The page one call of `query` selects; an argument that does not parse, or breaks a paging
/// rule, makes the query invalid (3008).
fn page(
    query: &PermissionQuery,
    model: &'static ModelMeta,
    mut args: HashMap<&str, Value>,
) -> ApiResult<Page> {
    let wrong = |e: InputError| invalid(query, e.to_string());
    let filter = match args.remove("filter") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_filter(model, &v).map_err(wrong)?),
    };
    let order = match args.remove("orderBy") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Enum(name)) => vec![
            order_key(model, &name)
                .ok_or_else(|| wrong(InputError::UnknownOrder(name.to_string())))?,
        ],
        Some(other) => return Err(wrong(InputError::NotAnOrder(other.to_string()))),
    };
    let int = |v: Option<Value>| -> Result<Option<i32>, InputError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .and_then(|n| i32::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| InputError::IntOutOfRange(n.to_string())),
            Some(other) => Err(InputError::NotAnInt(other.to_string())),
        }
    };
    let text = |v: Option<Value>| -> Result<Option<String>, InputError> {
        match v {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(InputError::NotAString(other.to_string())),
        }
    };
    let counts = [
        int(args.remove("skip")).map_err(wrong)?,
        int(args.remove("first")).map_err(wrong)?,
        int(args.remove("last")).map_err(wrong)?,
    ];
    let after = text(args.remove("after")).map_err(wrong)?;
    let before = text(args.remove("before")).map_err(wrong)?;
    Page::new(model, filter, order, counts, after, before).map_err(|e| invalid(query, e.message()))
}

/// The argument value with its variables bound; node-dependent ones become outer-column
/// markers the filter parser turns into column comparisons.
fn to_value(
    value: &PermValue,
    query: &PermissionQuery,
    outer: Option<&'static ModelMeta>,
    bind: Binder<'_>,
) -> ApiResult<Value> {
    Ok(match value {
        PermValue::Null => Value::Null,
        PermValue::Int(i) => Value::Number((*i).into()),
        PermValue::Float(f) => {
            async_graphql::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        PermValue::String(s) => Value::String((*s).to_owned()),
        PermValue::Boolean(b) => Value::Boolean(*b),
        PermValue::Enum(e) => Value::Enum(Name::new(e)),
        PermValue::List(items) => Value::List(
            items
                .iter()
                .map(|it| to_value(it, query, outer, bind))
                .collect::<ApiResult<_>>()?,
        ),
        PermValue::Object(fields) => {
            let mut map = IndexMap::new();
            for (k, v) in *fields {
                map.insert(Name::new(k), to_value(v, query, outer, bind)?);
            }
            Value::Object(map)
        }
        PermValue::Var(i) => {
            let (name, source) = query
                .vars
                .get(*i)
                .ok_or_else(|| ApiError::Internal(format!("unknown variable {i}")))?;
            match (bind(*source), outer) {
                (Bind::Const(v), _) => v,
                (Bind::OuterId, Some(m)) => outer_value(m.fields[m.id].name, false),
                (Bind::OuterField(f), Some(m)) => {
                    let field = &m.fields[f];
                    outer_value(field.name, !field.required)
                }
                (_, None) => {
                    return Err(invalid(
                        query,
                        format!("the variable `${name}` has no node to take its value from"),
                    ));
                }
            }
        }
    })
}

fn invalid(query: &PermissionQuery, message: String) -> ApiError {
    ApiError::PermissionQueryInvalid(format!("{message} (in {})", query.name))
}
