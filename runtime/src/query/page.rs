//! Pages: a checked list request (its filter, order, cursors and slice, with the reference's
//! rules), and its SQL.

use super::filter::{Cond, render};
use super::order::{Order, push_order};
use crate::model::{ApiError, ApiResult, ModelMeta};
use crate::storage::{Backend, Sql};

/// The most nodes one list field returns, with or without `first`/`last`.
pub const MAX_NODES: i32 = 1000;

/// A checked list request: what to select and which slice of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The filter, checked to hold no `f_some/f_every/f_none: null`; `None` selects every node.
    pub filter: Option<Cond>,
    /// The sort order, ending with the id.
    pub order: Order,
    /// How many nodes to skip, after the cursors apply, from the end the page is read from
    /// (the last nodes with `last`); `None` for none (a `skip` of 0 too), never negative.
    pub skip: Option<i32>,
    /// The id of the node the page starts after (in `order`).
    pub after: Option<String>,
    /// The id of the node the page ends before (in `order`).
    pub before: Option<String>,
    /// Take the first `n` nodes; 0 to [`MAX_NODES`], never set with `last`.
    pub first: Option<i32>,
    /// Take the last `n` nodes (read backwards); 0 to [`MAX_NODES`], never set with `first`.
    pub last: Option<i32>,
}

impl Page {
    /// A checked page over `meta` (the reference's rules 3014, 3026–3028, 2041, 3033) from
    /// untyped arguments; `counts` is `[skip, first, last]`.
    pub fn new(
        meta: &ModelMeta,
        filter: Option<Cond>,
        order_keys: Vec<(usize, bool)>,
        [skip, first, last]: [Option<i32>; 3],
        after: Option<String>,
        before: Option<String>,
    ) -> ApiResult<Page> {
        if first.is_some() && last.is_some() {
            return Err(ApiError::InvalidConnectionArguments);
        }
        if first.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidFirstArgument);
        }
        if last.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidLastArgument);
        }
        if skip.is_some_and(|n| n < 0) {
            return Err(ApiError::InvalidSkipArgument);
        }
        if let Some(n) = first.or(last).filter(|&n| n > MAX_NODES) {
            return Err(ApiError::TooManyNodesRequested(n));
        }
        if let Some(f) = &filter {
            f.check()?;
        }
        Ok(Page {
            filter,
            order: Order::new(meta, order_keys),
            skip: skip.filter(|&s| s > 0),
            after,
            before,
            first,
            last,
        })
    }

    /// The page read to learn whether more nodes lie beyond this one (the Relay API's
    /// `hasNextPage`/`hasPreviousPage`): one node more on the side that was asked (`first` or
    /// `last`; a checked page has one of them at most).
    pub fn probe(&self) -> Page {
        Page {
            first: self.first.map(|f| f.saturating_add(1)),
            last: self.last.map(|l| l.saturating_add(1)),
            ..self.clone()
        }
    }

    /// Drops the extra node of `nodes`, read in order by [`Page::probe`]: `(hasNextPage,
    /// hasPreviousPage)`, true only when `first` (`last`) was given and more nodes follow (come
    /// before).
    pub fn trim_probe<T>(&self, nodes: &mut Vec<T>) -> (bool, bool) {
        let mut facts = (false, false);
        if let Some(f) = self.first {
            let f = usize::try_from(f).unwrap_or(0);
            facts.0 = nodes.len() > f;
            nodes.truncate(f);
        }
        if let Some(l) = self.last {
            let l = usize::try_from(l).unwrap_or(0);
            facts.1 = nodes.len() > l;
            let extra = nodes.len().saturating_sub(l);
            nodes.drain(..extra);
        }
        facts
    }

    /// With `last`, rows are read from the other end and reversed afterwards.
    pub fn reads_backwards(&self) -> bool {
        self.last.is_some()
    }

    /// The order rows are read in.
    pub fn read_order(&self) -> Order {
        if self.reads_backwards() {
            self.order.inverted()
        } else {
            self.order.clone()
        }
    }

    /// Whether a page that read `read` nodes holds every node its filter selects: it starts at
    /// the first (no `skip`, no cursor) and read fewer than it could take (`first`, `last` or
    /// the most a page holds).
    pub fn holds_all(&self, read: usize) -> bool {
        self.skip.is_none()
            && self.after.is_none()
            && self.before.is_none()
            && usize::try_from(self.limit()).is_ok_and(|limit| read < limit)
    }

    /// How many rows to take after `skip`.
    pub fn limit(&self) -> i32 {
        self.first.or(self.last).unwrap_or(MAX_NODES)
    }

    /// Whether the page has a filter or a cursor (what [`Self::push_conditions`] writes).
    pub fn has_conditions(&self) -> bool {
        self.filter.is_some() || self.after.is_some() || self.before.is_some()
    }

    /// Whether a relation page can be taken from the join table alone, before reading its
    /// nodes: no condition, and ordered by the id, whose values are the join table's.
    pub fn pages_edges_alone(&self) -> bool {
        !self.has_conditions() && self.order.by_id_only()
    }

    /// Appends the filter and the cursor conditions over `alias` (to follow a ` WHERE `).
    pub fn push_conditions(&self, sql: &mut Sql, meta: &ModelMeta, alias: &str) {
        match &self.filter {
            Some(f) => render(f, meta, alias, sql),
            None => {
                sql.push("1=1");
            }
        }
        // `after` keeps what comes after the cursor in the requested order, `before` what comes
        // before; both compare the order keys of the cursor node.
        if let Some(after) = &self.after {
            push_cursor(sql, meta, alias, &self.order, after, true);
        }
        if let Some(before) = &self.before {
            push_cursor(sql, meta, alias, &self.order, before, false);
        }
    }
}

/// Appends ` WHERE <conditions> ORDER BY … LIMIT … [OFFSET …]`: the rows of `page` over `alias`.
pub fn push_page(sql: &mut Sql, meta: &ModelMeta, alias: &str, page: &Page) {
    sql.push(" WHERE ");
    page.push_conditions(sql, meta, alias);
    push_order(sql, meta, alias, &page.read_order());
    push_limit(sql, page);
}

/// Appends ` LIMIT … [OFFSET …]`: the rows of `page` after its skip.
pub fn push_limit(sql: &mut Sql, page: &Page) {
    sql.push(" LIMIT ").push(&page.limit().to_string());
    if let Some(skip) = page.skip.filter(|&skip| skip > 0) {
        sql.push(" OFFSET ").push(&skip.to_string());
    }
}

/// Appends `EXISTS (SELECT 1 FROM "<table>" AS <alias> WHERE … LIMIT … OFFSET …)`: whether the
/// page selects at least one node. The subquery may refer to outer aliases.
pub fn push_exists(sql: &mut Sql, meta: &ModelMeta, alias: &str, page: &Page) {
    sql.push("EXISTS (SELECT 1 FROM ")
        .ident(meta.table)
        .push(" AS ")
        .push(alias)
        .push(" WHERE ");
    page.push_conditions(sql, meta, alias);
    // Without skip or a limit, order does not change whether a row exists.
    if page.skip.is_some() || page.first.is_some() || page.last.is_some() {
        push_order(sql, meta, alias, &page.read_order());
        sql.push(" LIMIT ").push(&page.limit().to_string());
        if let Some(skip) = page.skip {
            sql.push(" OFFSET ").push(&skip.to_string());
        }
    }
    sql.push(")");
}

/// Appends ` AND <row comes after (or before) the cursor node in `order`>`: the order keys are
/// compared lexicographically, nulls counting as the smallest values. An unknown cursor id
/// matches nothing.
fn push_cursor(
    sql: &mut Sql,
    meta: &ModelMeta,
    alias: &str,
    order: &Order,
    cursor: &str,
    after: bool,
) {
    sql.push(" AND EXISTS (SELECT 1 FROM ")
        .ident(meta.table)
        .push(" AS c WHERE ")
        .col("c", meta.fields[meta.id].name)
        .push(" = ")
        .bind(sea_orm::Value::String(Some(cursor.to_owned())))
        .push(" AND ");
    push_beyond(sql, meta, alias, &order.0, after);
    sql.push(")");
}

/// `key0 beyond OR (key0 same AND (key1 beyond OR …))`, ending with the id key.
fn push_beyond(sql: &mut Sql, meta: &ModelMeta, alias: &str, keys: &[(usize, bool)], after: bool) {
    let Some((&(field, desc), rest)) = keys.split_first() else {
        sql.push("1=0");
        return;
    };
    let f = meta.fields[field].name;
    let greater = after != desc;
    sql.push("(");
    if field == meta.id {
        sql.col(alias, f)
            .push(if greater { " > " } else { " < " })
            .col("c", f);
    } else {
        let (low, high) = if greater { ("c", alias) } else { (alias, "c") };
        // Strictly beyond on this key: a null sorts before every value.
        sql.push("(")
            .col(low, f)
            .push(" IS NULL AND ")
            .col(high, f)
            .push(" IS NOT NULL) OR ")
            .col(high, f)
            .push(" > ")
            .col(low, f);
        if !rest.is_empty() {
            sql.push(" OR (").col(alias, f);
            sql.push(match sql.backend() {
                Backend::Sqlite => " IS ",
                Backend::Postgres => " IS NOT DISTINCT FROM ",
            });
            sql.col("c", f).push(" AND ");
            push_beyond(sql, meta, alias, rest, after);
            sql.push(")");
        }
    }
    sql.push(")");
}
