//! Relation fields of object types: `author(filter)`, `posts(filter, orderBy, …)` and
//! `_postsMeta(…)`, resolved in batches so a nested selection costs one SQL statement per level
//! and argument set, however many parent nodes there are.
//!
//! Every request carries its own [`DataLoader`] (no cache shared between requests). Resolvers
//! enqueue `(query, parent id)` keys; the loader groups the keys of one batch by query and runs
//! one statement per group. Pagination is applied in SQL per parent with a window function.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::sync::Arc;

use async_graphql::Context;
use async_graphql::dataloader::{DataLoader, Loader};

use crate::error::{ApiError, ApiResult};
use crate::filter::{Cond, Filter, render};
use crate::meta::{ModelMeta, RelFieldMeta};
use crate::read::{ListArgs, Page, QueryMeta, push_columns, push_order};
use crate::record::Record;
use crate::state::State;
use crate::storage::{Counter, Exec, Sql, push_id_list};

/// The per-request batch loader of relation fields.
pub struct RelLoader {
    state: Arc<State>,
    counter: Arc<Counter>,
}

/// The request's loader, as stored in the request data.
pub type RelLoaders = DataLoader<RelLoader>;

/// A loader for one request.
pub fn loaders(state: Arc<State>, counter: Arc<Counter>) -> RelLoaders {
    DataLoader::new(RelLoader { state, counter }, tokio::spawn).max_batch_size(100_000)
}

/// What to read through one relation field, identified by a canonical text so equal requests
/// from different parents land in one group.
#[derive(Debug)]
struct RelQuery<Q> {
    owner: &'static ModelMeta,
    field: usize,
    spec: Q,
    canon: String,
}

impl<Q: std::fmt::Debug> RelQuery<Q> {
    fn new(owner: &'static ModelMeta, field: usize, spec: Q) -> Arc<Self> {
        let canon = format!("{}.{}:{spec:?}", owner.name, field);
        Arc::new(RelQuery {
            owner,
            field,
            spec,
            canon,
        })
    }

    fn field(&self) -> &'static RelFieldMeta {
        &self.owner.relations[self.field]
    }
}

/// One parent's share of a relation read. `R` is the related record type.
pub struct RelKey<Q, R> {
    query: Arc<RelQuery<Q>>,
    parent: String,
    _record: PhantomData<fn() -> R>,
}

impl<Q, R> Clone for RelKey<Q, R> {
    fn clone(&self) -> Self {
        RelKey {
            query: self.query.clone(),
            parent: self.parent.clone(),
            _record: PhantomData,
        }
    }
}

impl<Q, R> PartialEq for RelKey<Q, R> {
    fn eq(&self, other: &Self) -> bool {
        self.parent == other.parent && self.query.canon == other.query.canon
    }
}

impl<Q, R> Eq for RelKey<Q, R> {}

impl<Q, R> Hash for RelKey<Q, R> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.query.canon.hash(state);
        self.parent.hash(state);
    }
}

/// Groups a batch of keys by query, in a deterministic order.
fn groups<Q, R>(keys: &[RelKey<Q, R>]) -> BTreeMap<&str, (&Arc<RelQuery<Q>>, Vec<&str>)> {
    let mut out: BTreeMap<&str, (&Arc<RelQuery<Q>>, Vec<&str>)> = BTreeMap::new();
    for key in keys {
        out.entry(key.query.canon.as_str())
            .or_insert_with(|| (&key.query, Vec::new()))
            .1
            .push(key.parent.as_str());
    }
    out
}

impl RelLoader {
    fn exec(&self) -> Exec<'_, sea_orm::DatabaseConnection> {
        Exec {
            conn: self.state.db.reader(),
            counter: &self.counter,
        }
    }
}

/// Appends `FROM "<join>" AS j JOIN "<Target>" AS t0 ON t0.id = j.<other> WHERE j.<own> IN (…)`.
fn push_join(sql: &mut Sql, field: &RelFieldMeta, parents: &[&str]) {
    let target = field.target;
    sql.push(" FROM ")
        .ident(field.table)
        .push(" AS j JOIN ")
        .ident(target.table)
        .push(" AS t0 ON ")
        .col("t0", target.fields[target.id].name)
        .push(" = ")
        .col("j", field.other)
        .push(" WHERE ")
        .col("j", field.own);
    push_id_list(sql, parents.iter().copied());
}

impl<R: Record> Loader<RelKey<Page, R>> for RelLoader {
    type Value = Vec<R>;
    type Error = async_graphql::Error;

    async fn load(
        &self,
        keys: &[RelKey<Page, R>],
    ) -> Result<HashMap<RelKey<Page, R>, Vec<R>>, Self::Error> {
        let backend = self.state.db.backend();
        let mut found: HashMap<(&str, String), Vec<R>> = HashMap::new();
        for (canon, (query, parents)) in groups(keys) {
            let field = query.field();
            let target = field.target;
            let page = &query.spec;
            // SELECT * FROM (SELECT <cols>, j.own AS __p, ROW_NUMBER() OVER (…) AS __rn …) AS s
            // WHERE __rn in (skip, skip + limit] ORDER BY __p, __rn
            let mut sql = Sql::new(backend);
            sql.push("SELECT * FROM (SELECT ");
            push_columns(&mut sql, target, "t0");
            sql.push(", ")
                .col("j", field.own)
                .push(" AS \"__p\", ROW_NUMBER() OVER (PARTITION BY ")
                .col("j", field.own);
            push_order(&mut sql, target, "t0", &page.read_order());
            sql.push(") AS \"__rn\"");
            push_join(&mut sql, field, &parents);
            sql.push(" AND ");
            page.push_conditions(&mut sql, target, "t0");
            let skip = i64::from(page.skip.unwrap_or(0));
            let end = skip + i64::from(page.limit());
            sql.push(") AS s WHERE \"__rn\" > ")
                .push(&skip.to_string())
                .push(" AND \"__rn\" <= ")
                .push(&end.to_string())
                .push(" ORDER BY \"__p\", \"__rn\"");
            let rows = self.exec().all(sql).await.map_err(ApiError::from)?;
            let parent_col = target.fields.len();
            for row in &rows {
                let parent: String = row
                    .try_get_by_index(parent_col)
                    .map_err(ApiError::from)?;
                let node = R::decode(row, backend).map_err(ApiError::from)?;
                found.entry((canon, parent)).or_default().push(node);
            }
            if page.from_end() {
                for ((c, _), nodes) in found.iter_mut() {
                    if *c == canon {
                        nodes.reverse();
                    }
                }
            }
        }
        Ok(keys
            .iter()
            .map(|k| {
                let nodes = found
                    .remove(&(k.query.canon.as_str(), k.parent.clone()))
                    .unwrap_or_default();
                (k.clone(), nodes)
            })
            .collect())
    }
}

/// The filter of a `_<field>Meta` count.
#[derive(Debug)]
pub struct CountSpec(Option<Cond>);

impl Loader<RelKey<CountSpec, ()>> for RelLoader {
    type Value = i32;
    type Error = async_graphql::Error;

    async fn load(
        &self,
        keys: &[RelKey<CountSpec, ()>],
    ) -> Result<HashMap<RelKey<CountSpec, ()>, i32>, Self::Error> {
        let backend = self.state.db.backend();
        let mut found: HashMap<(&str, String), i32> = HashMap::new();
        for (canon, (query, parents)) in groups(keys) {
            let field = query.field();
            let mut sql = Sql::new(backend);
            sql.push("SELECT ").col("j", field.own).push(", COUNT(*)");
            push_join(&mut sql, field, &parents);
            if let Some(filter) = &query.spec.0 {
                sql.push(" AND ");
                render(filter, field.target, "t0", &mut sql);
            }
            sql.push(" GROUP BY ").col("j", field.own);
            let rows = self.exec().all(sql).await.map_err(ApiError::from)?;
            for row in &rows {
                let parent: String = row.try_get_by_index(0).map_err(ApiError::from)?;
                let count: i64 = row.try_get_by_index(1).map_err(ApiError::from)?;
                found.insert((canon, parent), i32::try_from(count).unwrap_or(i32::MAX));
            }
        }
        Ok(keys
            .iter()
            .map(|k| {
                let n = found
                    .get(&(k.query.canon.as_str(), k.parent.clone()))
                    .copied()
                    .unwrap_or(0);
                (k.clone(), n)
            })
            .collect())
    }
}

fn loader<'a>(ctx: &Context<'a>) -> ApiResult<&'a RelLoaders> {
    ctx.data_opt::<RelLoaders>()
        .ok_or_else(|| ApiError::Internal("no relation loader in the request".into()))
}

/// A to-many relation field `posts(filter, orderBy, skip, after, before, first, last)`.
pub async fn to_many<P: Record, R: Record>(
    ctx: &Context<'_>,
    parent: &P,
    field: usize,
    args: ListArgs<R>,
) -> async_graphql::Result<Option<Vec<R>>> {
    let key: RelKey<Page, R> = RelKey {
        query: RelQuery::new(P::META, field, args.page()?),
        parent: parent.id().to_owned(),
        _record: PhantomData,
    };
    Ok(Some(loader(ctx)?.load_one(key).await?.unwrap_or_default()))
}

/// A to-one relation field `author(filter)`: `null` when there is no related node or it does not
/// match the filter.
pub async fn to_one<P: Record, R: Record>(
    ctx: &Context<'_>,
    parent: &P,
    field: usize,
    filter: Option<Filter<R>>,
) -> async_graphql::Result<Option<R>> {
    let args = ListArgs {
        filter,
        order_by: None,
        order_by_list: None,
        skip: None,
        after: None,
        before: None,
        first: None,
        last: None,
    };
    let key: RelKey<Page, R> = RelKey {
        query: RelQuery::new(P::META, field, args.page()?),
        parent: parent.id().to_owned(),
        _record: PhantomData,
    };
    Ok(loader(ctx)?
        .load_one(key)
        .await?
        .and_then(|nodes| nodes.into_iter().next()))
}

/// A required to-one relation field (`author: User!`).
pub async fn to_one_required<P: Record, R: Record>(
    ctx: &Context<'_>,
    parent: &P,
    field: usize,
    filter: Option<Filter<R>>,
) -> async_graphql::Result<R> {
    to_one(ctx, parent, field, filter).await?.ok_or_else(|| {
        ApiError::Internal(format!(
            "the required field `{}` of `{}` {} has no node",
            P::META.relations[field].name,
            P::META.name,
            parent.id()
        ))
        .into()
    })
}

/// `_<field>Meta(…) { count }` of a to-many relation field: counts the related nodes matching
/// `filter`; the other arguments are accepted and ignored, as in the reference.
pub async fn to_many_count<P: Record, R: Record>(
    ctx: &Context<'_>,
    parent: &P,
    field: usize,
    args: ListArgs<R>,
) -> async_graphql::Result<QueryMeta> {
    let key: RelKey<CountSpec, ()> = RelKey {
        query: RelQuery::new(P::META, field, CountSpec(args.count_filter()?)),
        parent: parent.id().to_owned(),
        _record: PhantomData,
    };
    let count = loader(ctx)?.load_one(key).await?.unwrap_or(0);
    Ok(QueryMeta { count })
}
