//! Queries: `all<Plural>`, `_all<Plural>Meta`, `<Type>(unique args)` and `node(id)`, each one
//! SQL statement (two for `node`), with the reference's ordering and pagination rules.

use async_graphql::{Context, ID, SimpleObject};
use sea_orm::ConnectionTrait;

use crate::error::{ApiError, ApiResult};
use crate::filter::{Filter, OrderBy, render};
use crate::meta::ModelMeta;
use crate::record::Record;
use crate::state::{State, request_counter};
use crate::storage::{Backend, Exec, Sql, push_param, push_select_col};
use crate::value::{Val, is_valid_id};

/// The most nodes one list field returns, with or without `first`/`last`.
pub const MAX_NODES: i32 = 1000;

/// `_QueryMeta { count }`.
#[derive(Debug, Clone, Copy, SimpleObject)]
#[graphql(name = "_QueryMeta")]
pub struct QueryMeta {
    #[graphql(name = "count")]
    pub count: i32,
}

/// The seven arguments of a list field.
#[derive(Debug)]
pub struct ListArgs<R> {
    pub filter: Option<Filter<R>>,
    pub order_by: Option<OrderBy<R>>,
    pub skip: Option<i32>,
    pub after: Option<String>,
    pub before: Option<String>,
    pub first: Option<i32>,
    pub last: Option<i32>,
}

impl<R> ListArgs<R> {
    /// Checks the reference's rules: 3014, 3026–3028, 2041.
    fn check(&self) -> ApiResult<()> {
        if self.first.is_some() && self.last.is_some() {
            return Err(ApiError::InvalidConnectionArguments);
        }
        if self.first.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidFirstArgument);
        }
        if self.last.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidLastArgument);
        }
        if self.skip.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidSkipArgument);
        }
        if let Some(n) = self.first.or(self.last).filter(|&n| n > MAX_NODES) {
            return Err(ApiError::TooManyNodesRequested(n));
        }
        Ok(())
    }
}

/// Appends `SELECT <all columns> FROM "<table>" AS <alias>`.
pub(crate) fn push_select(sql: &mut Sql, meta: &ModelMeta, alias: &str) {
    sql.push("SELECT ");
    sql.join(meta.fields, ", ", |s, f| push_select_col(s, alias, f));
    sql.push(" FROM ")
        .ident(meta.table)
        .push(" AS ")
        .push(alias);
}

/// Decodes every row into records.
pub(crate) fn decode_all<R: Record>(
    rows: &[sea_orm::QueryResult],
    backend: Backend,
) -> ApiResult<Vec<R>> {
    rows.iter()
        .map(|row| R::decode(row, backend).map_err(ApiError::from))
        .collect()
}

/// `all<Plural>(filter, orderBy, skip, after, before, first, last)`.
pub async fn all<R: Record>(ctx: &Context<'_>, args: ListArgs<R>) -> async_graphql::Result<Vec<R>> {
    Ok(list::<R>(ctx, &args).await?)
}

async fn list<R: Record>(ctx: &Context<'_>, args: &ListArgs<R>) -> ApiResult<Vec<R>> {
    args.check()?;
    let state = State::of(ctx);
    let meta = R::META;
    let order = args.order_by.unwrap_or_else(OrderBy::default_order);
    // With `last`, read from the other end and reverse afterwards.
    let from_end = args.last.is_some();
    let descending = order.descending != from_end;

    let mut sql = state.db.sql();
    push_select(&mut sql, meta, "t0");
    sql.push(" WHERE ");
    match &args.filter {
        Some(f) => render(&f.cond, meta, "t0", &mut sql),
        None => {
            sql.push("1=1");
        }
    }
    // `after` keeps what comes after the cursor in the requested order, `before` what comes
    // before; both compare the `(order field, id)` tuple of the cursor node.
    if let Some(after) = &args.after {
        push_cursor(&mut sql, meta, order.field, after, !order.descending);
    }
    if let Some(before) = &args.before {
        push_cursor(&mut sql, meta, order.field, before, order.descending);
    }
    push_order(&mut sql, meta, "t0", order.field, descending);
    let limit = args.first.or(args.last).unwrap_or(MAX_NODES);
    sql.push(" LIMIT ").push(&limit.to_string());
    if let Some(skip) = args.skip.filter(|&s| s > 0) {
        sql.push(" OFFSET ").push(&skip.to_string());
    }

    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let rows = exec.all(sql).await?;
    let mut out = decode_all::<R>(&rows, state.db.backend())?;
    if from_end {
        out.reverse();
    }
    Ok(out)
}

/// Appends ` ORDER BY …` with nulls first in ascending order (as the reference's MySQL does) and
/// `id` as the tie-break in the same direction.
pub(crate) fn push_order(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    field: usize,
    descending: bool,
) {
    let dir = if descending { " DESC" } else { " ASC" };
    sql.push(" ORDER BY ");
    if field != meta.id {
        sql.col(alias, meta.fields[field].name)
            .push(dir)
            .push(if descending {
                " NULLS LAST, "
            } else {
                " NULLS FIRST, "
            });
    }
    sql.col(alias, meta.fields[meta.id].name).push(dir);
}

/// Appends ` AND <row key is greater/less than the cursor node's key>`. An unknown cursor id
/// matches nothing. Nulls count as the smallest values.
fn push_cursor(sql: &mut Sql, meta: &ModelMeta, field: usize, cursor: &str, greater: bool) {
    let id = meta.fields[meta.id].name;
    sql.push(" AND EXISTS (SELECT 1 FROM ")
        .ident(meta.table)
        .push(" AS c WHERE ")
        .col("c", id)
        .push(" = ")
        .bind(sea_orm::Value::String(Some(cursor.to_owned())))
        .push(" AND (");
    let (cmp, id_cmp) = if greater {
        (" > ", " > ")
    } else {
        (" < ", " < ")
    };
    if field != meta.id {
        let f = meta.fields[field].name;
        // Strictly beyond on the order field: a null sorts before every value.
        if greater {
            sql.push("(")
                .col("c", f)
                .push(" IS NULL AND ")
                .col("t0", f)
                .push(" IS NOT NULL) OR ");
        } else {
            sql.push("(")
                .col("t0", f)
                .push(" IS NULL AND ")
                .col("c", f)
                .push(" IS NOT NULL) OR ");
        }
        sql.col("t0", f).push(cmp).col("c", f).push(" OR ((");
        sql.col("t0", f);
        sql.push(match sql.backend() {
            Backend::Sqlite => " IS ",
            Backend::Postgres => " IS NOT DISTINCT FROM ",
        });
        sql.col("c", f).push(") AND ");
        sql.col("t0", id).push(id_cmp).col("c", id).push(")");
    } else {
        sql.col("t0", id).push(id_cmp).col("c", id);
    }
    sql.push("))");
}

/// `_all<Plural>Meta(…) { count }`: counts the nodes matching `filter`; the other arguments are
/// accepted and ignored, as in the reference.
pub async fn count<R: Record>(
    ctx: &Context<'_>,
    args: ListArgs<R>,
) -> async_graphql::Result<QueryMeta> {
    let state = State::of(ctx);
    let meta = R::META;
    let mut sql = state.db.sql();
    sql.push("SELECT COUNT(*) FROM ")
        .ident(meta.table)
        .push(" AS t0 WHERE ");
    match &args.filter {
        Some(f) => render(&f.cond, meta, "t0", &mut sql),
        None => {
            sql.push("1=1");
        }
    }
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let row = exec.one(sql).await.map_err(ApiError::from)?;
    let count: i64 = match row {
        Some(row) => row.try_get_by_index(0).map_err(ApiError::from)?,
        None => 0,
    };
    Ok(QueryMeta {
        count: i32::try_from(count).unwrap_or(i32::MAX),
    })
}

/// `<Type>(id, <unique field>…)`: the first supplied argument, in declaration order, is used.
/// `candidates` holds `(field index, value)` for every unique argument, `None` when absent.
pub async fn one<R: Record>(
    ctx: &Context<'_>,
    candidates: Vec<(usize, Option<Val>)>,
) -> async_graphql::Result<Option<R>> {
    let meta = R::META;
    let Some((field, val)) = candidates
        .iter()
        .find_map(|(f, v)| v.as_ref().filter(|v| !v.is_null()).map(|v| (*f, v)))
    else {
        let names = candidates
            .iter()
            .map(|(f, _)| meta.fields[*f].name)
            .collect();
        return Err(ApiError::NoArgumentsProvided(names).into());
    };
    let state = State::of(ctx);
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    Ok(find_by::<R, _>(&exec, field, val).await?)
}

/// Reads the node whose `field` equals `val`.
pub(crate) async fn find_by<R: Record, C: ConnectionTrait>(
    exec: &Exec<'_, C>,
    field: usize,
    val: &Val,
) -> ApiResult<Option<R>> {
    let meta = R::META;
    let backend = exec.backend();
    let mut sql = Sql::new(backend);
    push_select(&mut sql, meta, "t0");
    sql.push(" WHERE ")
        .col("t0", meta.fields[field].name)
        .push(" = ");
    push_param(&mut sql, val, &meta.fields[field]);
    sql.push(" LIMIT 1");
    match exec.one(sql).await? {
        Some(row) => Ok(Some(R::decode(&row, backend)?)),
        None => Ok(None),
    }
}

/// Reads the node with the given id.
pub async fn by_id<R: Record>(ctx: &Context<'_>, id: &str) -> async_graphql::Result<Option<R>> {
    let state = State::of(ctx);
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let meta = R::META;
    Ok(find_by::<R, _>(&exec, meta.id, &Val::String(id.to_owned())).await?)
}

/// For `node(id)`: the index in `models` of the model that has a node with this id, in one
/// statement over all model tables.
pub async fn node_model(
    ctx: &Context<'_>,
    id: &ID,
    models: &[&'static ModelMeta],
) -> async_graphql::Result<Option<usize>> {
    if models.is_empty() || !is_valid_id(id) {
        return Ok(None);
    }
    let state = State::of(ctx);
    let mut sql = state.db.sql();
    sql.join(models.iter().enumerate(), " UNION ALL ", |s, (i, m)| {
        s.push("SELECT ")
            .push(&i.to_string())
            .push(" FROM ")
            .ident(m.table)
            .push(" WHERE ")
            .ident(m.fields[m.id].name)
            .push(" = ")
            .bind(sea_orm::Value::String(Some(id.to_string())));
    });
    sql.push(" LIMIT 1");
    let exec = Exec {
        conn: state.db.reader(),
        counter: request_counter(ctx),
    };
    let row = exec.one(sql).await.map_err(ApiError::from)?;
    Ok(match row {
        Some(row) => {
            let idx: i64 = match state.db.backend() {
                Backend::Postgres => {
                    i64::from(row.try_get_by_index::<i32>(0).map_err(ApiError::from)?)
                }
                Backend::Sqlite => row.try_get_by_index(0).map_err(ApiError::from)?,
            };
            usize::try_from(idx).ok()
        }
        None => None,
    })
}
