//! `POST /simple/v1/<id>/export` (reference §8.4): one page of an NDF export.
//!
//! Tables are read in a fixed order, 1 000 rows per statement, nodes by id ascending (edges by
//! their two ids), and each row becomes its elements. Elements are added while the sum of their
//! serialised lengths stays within the limit; the first that does not fit ends the page, with
//! the cursor at its row (and, for lists, its field and the offset inside the list: a long list
//! is split into chunks of as many values as fit). A page always holds at least one element (or
//! one list value), so an element larger than the limit cannot stall an export.

use std::sync::Arc;

use serde_json::Value;

use super::{Cursor, FileType};
use crate::auth::Principal;
use crate::engine::{Request, State};
use crate::model::{ApiResult, Kind, ModelMeta, RelFieldMeta, ServiceMeta, Val, node_values};
use crate::query::select::push_select;
use crate::storage::{Counter, Sql};

/// Rows read per statement.
const ROWS_PER_READ: i64 = 1000;

/// One response of the export: the elements (their JSON texts), their summed length, where to
/// continue, and whether the page ended because the limit was reached.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub elements: Vec<String>,
    pub size: usize,
    pub cursor: Cursor,
    pub is_full: bool,
}

impl Page {
    /// The response body: `{"out":{"jsonElements":[…],"size":N},"cursor":{…},"isFull":b}`.
    pub fn to_json(&self) -> String {
        let mut out = String::with_capacity(self.size + self.elements.len() + 128);
        out.push_str("{\"out\":{\"jsonElements\":[");
        for (i, element) in self.elements.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(element);
        }
        out.push_str("],\"size\":");
        out.push_str(&self.size.to_string());
        out.push_str("},\"cursor\":");
        out.push_str(&serde_json::to_string(&self.cursor).unwrap_or_default());
        out.push_str(",\"isFull\":");
        out.push_str(if self.is_full { "true" } else { "false" });
        out.push('}');
        out
    }
}

/// Accumulates a page's elements within the limit.
struct Builder {
    page: Page,
    limit: usize,
}

impl Builder {
    fn new(limit: usize) -> Builder {
        Builder {
            page: Page {
                elements: Vec::new(),
                size: 0,
                cursor: Cursor::DONE,
                is_full: false,
            },
            limit,
        }
    }

    /// Whether an element of `len` characters fits (a page's first element always does).
    fn fits(&self, len: usize) -> bool {
        self.page.elements.is_empty() || self.page.size + len <= self.limit
    }

    /// Adds `element`, of `len` characters.
    fn push(&mut self, element: String, len: usize) {
        self.page.size += len;
        self.page.elements.push(element);
    }

    /// Ends the page before the element at `cursor`.
    fn full(mut self, cursor: Cursor) -> Page {
        self.page.cursor = cursor;
        self.page.is_full = true;
        self.page
    }

    fn done(self) -> Page {
        self.page
    }
}

/// The page of `file_type` that starts at `cursor`, of at most `limit` characters of elements.
pub async fn export(
    state: &Arc<State>,
    counter: &Arc<Counter>,
    file_type: FileType,
    cursor: Cursor,
    limit: usize,
) -> ApiResult<Page> {
    let req = Request::new(state.clone(), counter.clone(), Principal::Admin);
    let builder = Builder::new(limit);
    if cursor.is_done() {
        return Ok(builder.done());
    }
    let service = state.service;
    match file_type {
        FileType::Nodes => nodes(&req, service, cursor, builder).await,
        FileType::Lists => lists(&req, service, cursor, builder).await,
        FileType::Relations => relations(&req, service, cursor, builder).await,
    }
}

/// `row` of a cursor as a non-negative offset.
fn offset(n: i64) -> i64 {
    n.max(0)
}

/// Up to [`ROWS_PER_READ`] rows of `meta` by id, with every column: from the row offset `skip`
/// (a page's first read), or after the id `after` (the next reads of a page, which then do not
/// step over every row before them again).
async fn node_rows(
    req: &Request,
    meta: &ModelMeta,
    skip: i64,
    after: Option<&str>,
) -> ApiResult<Vec<Vec<Val>>> {
    let id = meta.fields[meta.id].name;
    let mut sql = req.db().sql();
    push_select(&mut sql, meta, "t0");
    if let Some(after) = after {
        sql.push(" WHERE t0.")
            .ident(id)
            .push(" > ")
            .bind(after.into());
    }
    sql.push(" ORDER BY t0.").ident(id);
    sql.push(&format!(" LIMIT {ROWS_PER_READ}"));
    if after.is_none() {
        sql.push(&format!(" OFFSET {skip}"));
    }
    let rows = req.reads().all(sql).await?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(node_values(meta, &row)?);
    }
    Ok(out)
}

/// The id of a row of [`node_values`].
fn id_of(meta: &ModelMeta, values: &[Val]) -> String {
    match &values[meta.id] {
        Val::String(s) => s.clone(),
        other => other.to_json().to_string(),
    }
}

/// Appends `"key":<value>` (with a leading comma).
fn push_entry(out: &mut String, key: &str, value: &Value) {
    out.push(',');
    out.push_str(&Value::from(key).to_string());
    out.push(':');
    out.push_str(&value.to_string());
}

/// `{"_typeName":…,"id":…` (without the closing brace).
fn element_head(meta: &ModelMeta, id: &str) -> String {
    format!(
        "{{\"_typeName\":{},\"id\":{}",
        Value::from(meta.name),
        Value::from(id)
    )
}

/// A node's element: its non-null, non-list fields, `createdAt` and `updatedAt` last.
fn node_element(meta: &ModelMeta, values: &[Val]) -> String {
    let mut out = element_head(meta, &id_of(meta, values));
    for (i, field) in meta.fields.iter().enumerate() {
        if i == meta.id
            || i == meta.created_at
            || i == meta.updated_at
            || field.list
            || field.kind == Kind::Relation
            || values[i].is_null()
        {
            continue;
        }
        push_entry(&mut out, field.name, &values[i].to_json());
    }
    for i in [meta.created_at, meta.updated_at] {
        push_entry(&mut out, meta.fields[i].name, &values[i].to_json());
    }
    out.push('}');
    out
}

async fn nodes(
    req: &Request,
    service: &ServiceMeta,
    cursor: Cursor,
    mut page: Builder,
) -> ApiResult<Page> {
    let models = service.models;
    let mut table = usize::try_from(cursor.table).unwrap_or(usize::MAX);
    let mut row = offset(cursor.row);
    let mut last: Option<String> = None;
    while let Some(meta) = models.get(table) {
        let rows = node_rows(req, meta, row, last.as_deref()).await?;
        let exhausted = (rows.len() as i64) < ROWS_PER_READ;
        last = rows.last().map(|values| id_of(meta, values));
        for values in &rows {
            let element = node_element(meta, values);
            let len = element.chars().count();
            if !page.fits(len) {
                return Ok(page.full(position(table, row, 0, 0)));
            }
            page.push(element, len);
            row += 1;
        }
        if exhausted {
            table += 1;
            row = 0;
            last = None;
        }
    }
    Ok(page.done())
}

/// The list fields (indices into `meta.fields`) of a model.
fn list_fields(meta: &ModelMeta) -> Vec<usize> {
    (0..meta.fields.len())
        .filter(|&i| meta.fields[i].list)
        .collect()
}

async fn lists(
    req: &Request,
    service: &ServiceMeta,
    cursor: Cursor,
    mut page: Builder,
) -> ApiResult<Page> {
    let models: Vec<&ModelMeta> = service
        .models
        .iter()
        .copied()
        .filter(|m| m.fields.iter().any(|f| f.list))
        .collect();
    let mut table = usize::try_from(cursor.table).unwrap_or(usize::MAX);
    let mut row = offset(cursor.row);
    let mut field = usize::try_from(cursor.field.max(0)).unwrap_or(0);
    let mut array = usize::try_from(cursor.array.max(0)).unwrap_or(0);
    let mut last: Option<String> = None;
    while let Some(meta) = models.get(table) {
        let fields = list_fields(meta);
        let rows = node_rows(req, meta, row, last.as_deref()).await?;
        let exhausted = (rows.len() as i64) < ROWS_PER_READ;
        last = rows.last().map(|values| id_of(meta, values));
        for values in &rows {
            let id = id_of(meta, values);
            while let Some(&index) = fields.get(field) {
                let items: &[Val] = match &values[index] {
                    Val::List(items) => items,
                    _ => &[],
                };
                let head = element_head(meta, &id);
                let name = Value::from(meta.fields[index].name).to_string();
                // `{head},"<field>":[` + values + `]}`
                let overhead = head.chars().count() + 1 + name.chars().count() + 2 + 2;
                let texts: Vec<String> = items[array.min(items.len())..]
                    .iter()
                    .map(|v| v.to_json().to_string())
                    .collect();
                if texts.is_empty() {
                    field += 1;
                    array = 0;
                    continue;
                }
                // As many values as fit (one at least on an empty page).
                let first = page.page.elements.is_empty();
                let mut len = overhead;
                let mut count = 0;
                for text in &texts {
                    let extra = text.chars().count() + usize::from(count > 0);
                    if page.page.size + len + extra > page.limit && !(first && count == 0) {
                        break;
                    }
                    len += extra;
                    count += 1;
                }
                if count == 0 {
                    return Ok(page.full(position(table, row, field, array)));
                }
                let mut element = head;
                element.push(',');
                element.push_str(&name);
                element.push_str(":[");
                element.push_str(&texts[..count].join(","));
                element.push_str("]}");
                page.push(element, len);
                if count < texts.len() {
                    return Ok(page.full(position(table, row, field, array + count)));
                }
                field += 1;
                array = 0;
            }
            field = 0;
            row += 1;
        }
        if exhausted {
            table += 1;
            row = 0;
            last = None;
        }
    }
    Ok(page.done())
}

fn position(table: usize, row: i64, field: usize, array: usize) -> Cursor {
    Cursor {
        table: table as i64,
        row,
        field: field as i64,
        array: array as i64,
    }
}

/// The relation field of `meta` on side `own` (`"A"` or `"B"`) of relation `relation`.
fn side_field(meta: &ModelMeta, relation: usize, own: &str) -> Option<&'static RelFieldMeta> {
    let fields: &'static [RelFieldMeta] = meta.relations;
    fields
        .iter()
        .find(|f| f.relation == relation && (f.own == own || f.symmetric))
}

fn model_named(service: &ServiceMeta, name: &str) -> Option<&'static ModelMeta> {
    service.models.iter().copied().find(|m| m.name == name)
}

/// One side of a relation element: `{"_typeName":…,"id":…,"fieldName":…}`.
fn side(model: &str, id: &str, field: Option<&str>) -> String {
    format!(
        "{{\"_typeName\":{},\"id\":{},\"fieldName\":{}}}",
        Value::from(model),
        Value::from(id),
        field.map_or(Value::Null, Value::from)
    )
}

async fn relations(
    req: &Request,
    service: &ServiceMeta,
    cursor: Cursor,
    mut page: Builder,
) -> ApiResult<Page> {
    let mut table = usize::try_from(cursor.table).unwrap_or(usize::MAX);
    let mut row = offset(cursor.row);
    let mut last: Option<(String, String)> = None;
    while let Some(relation) = service.relations.get(table) {
        let a = model_named(service, relation.a);
        let b = model_named(service, relation.b);
        let a_field = a.and_then(|m| side_field(m, table, "A"));
        let symmetric = a_field.is_some_and(|f| f.symmetric);
        // A one-field self relation names its field on one side only.
        let b_field = if symmetric {
            None
        } else {
            b.and_then(|m| side_field(m, table, "B"))
        };
        let mut sql = Sql::new(req.db().backend());
        sql.push("SELECT \"A\", \"B\" FROM ")
            .ident(relation.table)
            .push(" WHERE 1 = 1");
        if symmetric {
            // Stored in both directions: each edge once.
            sql.push(" AND \"A\" <= \"B\"");
        }
        if let Some((a, b)) = &last {
            // A row value, which both databases compare through the (A, B) index.
            sql.push(" AND (\"A\", \"B\") > (")
                .bind(a.as_str().into())
                .push(", ")
                .bind(b.as_str().into())
                .push(")");
        }
        sql.push(&format!(" ORDER BY \"A\", \"B\" LIMIT {ROWS_PER_READ}"));
        if last.is_none() {
            sql.push(&format!(" OFFSET {row}"));
        }
        let rows = req.reads().all(sql).await?;
        let exhausted = (rows.len() as i64) < ROWS_PER_READ;
        for edge in &rows {
            let a_id: String = crate::model::get(edge, 0)?;
            let b_id: String = crate::model::get(edge, 1)?;
            let element = format!(
                "[{},{}]",
                side(relation.b, &b_id, b_field.map(|f| f.name)),
                side(relation.a, &a_id, a_field.map(|f| f.name))
            );
            let len = element.chars().count();
            if !page.fits(len) {
                return Ok(page.full(position(table, row, 0, 0)));
            }
            page.push(element, len);
            row += 1;
            last = Some((a_id, b_id));
        }
        if exhausted {
            table += 1;
            row = 0;
            last = None;
        }
    }
    Ok(page.done())
}
