//! `POST /simple/v1/<id>/export` (reference §8.4): one page of an NDF export.
//!
//! Tables are read in a fixed order, 1 000 rows per statement, nodes by id ascending (edges by
//! their two ids), and each row becomes its elements. Elements are added while the sum of their
//! serialised lengths stays within the limit; the first that does not fit ends the page, with
//! the cursor at its row (and, for lists, its field and the offset inside the list: a long list
//! is split into chunks of as many values as fit). A page always holds at least one element (or
//! one list value), so an element larger than the limit cannot stall an export.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{Cursor, FileType};
use crate::auth::Principal;
use crate::engine::{Request, State};
use crate::model::{
    ApiResult, Cells, Json, Kind, ModelMeta, RelFieldMeta, ServiceMeta, Val, format_datetime,
    get_opt,
};
use crate::query::select::push_select;
use crate::storage::{Row, Sql};

/// Rows read per statement.
const ROWS_PER_READ: i64 = 2000;

/// How many page ends [`Resumes`] keeps.
const KEPT_RESUMES: usize = 256;

/// Where the pages handed out last end: for a cursor, the key of the row it points at (a node's
/// id, or an edge's two ids). A cursor counts rows from the start of its table, as the
/// reference's does; the next page starts at that key through the index instead of stepping over
/// every row before it again (which made an export's time grow with the square of its size).
/// A cursor this server did not hand out (another instance's, or one forgotten) is still read
/// by its row offset.
#[derive(Debug, Default)]
pub struct Resumes(Mutex<HashMap<(FileType, Cursor), Vec<String>>>);

impl Resumes {
    fn get(&self, file_type: FileType, cursor: Cursor) -> Option<Vec<String>> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&(file_type, cursor)).cloned()
    }

    fn keep(&self, file_type: FileType, cursor: Cursor, key: Vec<String>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= KEPT_RESUMES {
            map.clear();
        }
        map.insert((file_type, cursor), key);
    }
}

/// Where the first read of a table starts.
enum Start {
    /// After this many rows.
    Offset(i64),
    /// At this key (a row of it or the first after it).
    At(Vec<String>),
    /// After this key (the next reads of a page).
    After(Vec<String>),
}

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
struct Builder<'a> {
    page: Page,
    limit: usize,
    file_type: FileType,
    resumes: &'a Resumes,
}

impl Builder<'_> {
    /// Whether an element of `len` characters fits (a page's first element always does).
    fn fits(&self, len: usize) -> bool {
        self.page.elements.is_empty() || self.page.size + len <= self.limit
    }

    /// Adds `element`, of `len` characters.
    fn push(&mut self, element: String, len: usize) {
        self.page.size += len;
        self.page.elements.push(element);
    }

    /// Ends the page before the element at `cursor`, the row of key `key`.
    fn full(mut self, cursor: Cursor, key: Vec<String>) -> Page {
        self.resumes.keep(self.file_type, cursor, key);
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
    counter: &Arc<crate::storage::Counter>,
    file_type: FileType,
    cursor: Cursor,
    limit: usize,
    resumes: &Resumes,
) -> ApiResult<Page> {
    let req = Request::new(state.clone(), counter.clone(), Principal::Admin);
    let builder = Builder {
        page: Page {
            elements: Vec::new(),
            size: 0,
            cursor: Cursor::DONE,
            is_full: false,
        },
        limit,
        file_type,
        resumes,
    };
    if cursor.is_done() {
        return Ok(builder.done());
    }
    let start = match resumes.get(file_type, cursor) {
        Some(key) => Start::At(key),
        None => Start::Offset(cursor.row.max(0)),
    };
    let service = state.service;
    match file_type {
        FileType::Nodes => nodes(&req, service, cursor, start, builder).await,
        FileType::Lists => lists(&req, service, cursor, start, builder).await,
        FileType::Relations => relations(&req, service, cursor, start, builder).await,
    }
}

/// The characters of `text`.
fn chars(text: &str) -> usize {
    if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    }
}

/// Appends `text` as a JSON string.
fn push_str(out: &mut String, text: &str) {
    if text
        .bytes()
        .all(|b| b >= 0x20 && b != b'"' && b != b'\\' && b != 0x7f)
    {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(&Value::from(text).to_string());
    }
}

/// Reads up to [`ROWS_PER_READ`] rows of `meta` by id, with `columns` pushed by `select`, from
/// `start`.
async fn read_nodes(
    req: &Request,
    meta: &ModelMeta,
    select: impl FnOnce(&mut Sql),
    start: &Start,
) -> ApiResult<Vec<Row>> {
    let id = meta.fields[meta.id].name;
    let mut sql = req.db().sql();
    select(&mut sql);
    match start {
        Start::Offset(_) => {}
        Start::At(key) | Start::After(key) => {
            let op = if matches!(start, Start::At(_)) {
                " >= "
            } else {
                " > "
            };
            let key = key.first().map_or("", String::as_str);
            sql.push(" WHERE t0.").ident(id).push(op).bind(key.into());
        }
    }
    sql.push(" ORDER BY t0.").ident(id);
    sql.push(&format!(" LIMIT {ROWS_PER_READ}"));
    if let Start::Offset(skip) = start {
        sql.push(&format!(" OFFSET {skip}"));
    }
    req.counter().add(1);
    Ok(req.db().bulk_rows(sql).await?)
}

/// A node's element from its row (every field's column, as `push_select` reads them): its
/// non-null, non-list fields, `createdAt` and `updatedAt` last; and its id.
fn node_element(meta: &ModelMeta, row: &Row) -> ApiResult<(String, String)> {
    let id = row.string(meta.id)?.unwrap_or_default();
    let mut out = String::with_capacity(256);
    out.push_str("{\"_typeName\":");
    push_str(&mut out, meta.name);
    out.push_str(",\"id\":");
    push_str(&mut out, &id);
    let last = [meta.created_at, meta.updated_at];
    let fields = (0..meta.fields.len())
        .filter(|i| *i != meta.id && !last.contains(i))
        .chain(last);
    for i in fields {
        let field = &meta.fields[i];
        if field.list || field.kind == Kind::Relation {
            continue;
        }
        let before = out.len();
        out.push(',');
        push_str(&mut out, field.name);
        out.push(':');
        let written = match field.kind {
            Kind::Id | Kind::String | Kind::Enum | Kind::Relation => match row.text(i)? {
                Some(text) => {
                    push_str(&mut out, text);
                    true
                }
                None => false,
            },
            Kind::Int => row.int(i)?.map(|n| out.push_str(&n.to_string())).is_some(),
            Kind::Float => row
                .float(i)?
                .map(|f| out.push_str(&Val::Float(f).to_json().to_string()))
                .is_some(),
            Kind::Boolean => row
                .boolean(i)?
                .map(|b| out.push_str(if b { "true" } else { "false" }))
                .is_some(),
            Kind::DateTime => row
                .datetime(i)?
                .map(|d| push_str(&mut out, &format_datetime(&d)))
                .is_some(),
            Kind::Json => get_opt::<Json, _>(row, i)?
                .map(|j| out.push_str(&j.0.to_string()))
                .is_some(),
        };
        if !written {
            out.truncate(before);
        }
    }
    out.push('}');
    Ok((out, id))
}

async fn nodes(
    req: &Request,
    service: &ServiceMeta,
    cursor: Cursor,
    mut start: Start,
    mut page: Builder<'_>,
) -> ApiResult<Page> {
    let models = service.models;
    let mut table = usize::try_from(cursor.table).unwrap_or(usize::MAX);
    let mut row = cursor.row.max(0);
    while let Some(meta) = models.get(table) {
        let rows = read_nodes(req, meta, |sql| push_select(sql, meta, "t0"), &start).await?;
        let exhausted = (rows.len() as i64) < ROWS_PER_READ;
        let mut last = None;
        for values in &rows {
            let (element, id) = node_element(meta, values)?;
            let len = chars(&element);
            if !page.fits(len) {
                return Ok(page.full(position(table, row, 0, 0), vec![id]));
            }
            page.push(element, len);
            row += 1;
            last = Some(id);
        }
        start = next_start(last.map(|id| vec![id]), exhausted, &mut table, &mut row);
    }
    Ok(page.done())
}

/// The list fields (indices into `meta.fields`) of a model.
fn list_fields(meta: &ModelMeta) -> Vec<usize> {
    (0..meta.fields.len())
        .filter(|&i| meta.fields[i].list)
        .collect()
}

/// The items of a stored list, each as its JSON text.
fn list_items(stored: Option<&str>, kind: Kind) -> Vec<String> {
    let Some(Value::Array(items)) = stored.and_then(|text| serde_json::from_str(text).ok()) else {
        return Vec::new();
    };
    items
        .into_iter()
        .map(|item| Val::from_stored_json(item, kind).to_json().to_string())
        .collect()
}

async fn lists(
    req: &Request,
    service: &ServiceMeta,
    cursor: Cursor,
    mut start: Start,
    mut page: Builder<'_>,
) -> ApiResult<Page> {
    let models: Vec<&ModelMeta> = service
        .models
        .iter()
        .copied()
        .filter(|m| m.fields.iter().any(|f| f.list))
        .collect();
    let mut table = usize::try_from(cursor.table).unwrap_or(usize::MAX);
    let mut row = cursor.row.max(0);
    let mut field = usize::try_from(cursor.field.max(0)).unwrap_or(0);
    let mut array = usize::try_from(cursor.array.max(0)).unwrap_or(0);
    while let Some(meta) = models.get(table) {
        let fields = list_fields(meta);
        // The id, then the list fields.
        let select = |sql: &mut Sql| {
            sql.push("SELECT ").select_col("t0", &meta.fields[meta.id]);
            for &i in &fields {
                sql.push(", ").select_col("t0", &meta.fields[i]);
            }
            sql.push(" FROM ").ident(meta.table).push(" t0");
        };
        let rows = read_nodes(req, meta, select, &start).await?;
        let exhausted = (rows.len() as i64) < ROWS_PER_READ;
        let mut last = None;
        for values in &rows {
            let id = values.string(0)?.unwrap_or_default();
            while let Some(&index) = fields.get(field) {
                let items = list_items(values.text(1 + field)?, meta.fields[index].kind);
                let texts = &items[array.min(items.len())..];
                if texts.is_empty() {
                    field += 1;
                    array = 0;
                    continue;
                }
                let mut element = String::with_capacity(64);
                element.push_str("{\"_typeName\":");
                push_str(&mut element, meta.name);
                element.push_str(",\"id\":");
                push_str(&mut element, &id);
                element.push(',');
                push_str(&mut element, meta.fields[index].name);
                element.push_str(":[");
                // `{…,"<field>":[` + values + `]}`
                let overhead = chars(&element) + 2;
                // As many values as fit (one at least on an empty page).
                let first = page.page.elements.is_empty();
                let mut len = overhead;
                let mut count = 0;
                for text in texts {
                    let extra = chars(text) + usize::from(count > 0);
                    if page.page.size + len + extra > page.limit && !(first && count == 0) {
                        break;
                    }
                    len += extra;
                    count += 1;
                }
                if count == 0 {
                    return Ok(page.full(position(table, row, field, array), vec![id]));
                }
                element.push_str(&texts[..count].join(","));
                element.push_str("]}");
                page.push(element, len);
                if count < texts.len() {
                    return Ok(page.full(position(table, row, field, array + count), vec![id]));
                }
                field += 1;
                array = 0;
            }
            field = 0;
            row += 1;
            last = Some(id);
        }
        start = next_start(last.map(|id| vec![id]), exhausted, &mut table, &mut row);
    }
    Ok(page.done())
}

/// Where the next read starts after one that ended at the key `last`: after it, or at the
/// start of the next table when the read was the table's last (`exhausted`).
fn next_start(
    last: Option<Vec<String>>,
    exhausted: bool,
    table: &mut usize,
    row: &mut i64,
) -> Start {
    match last {
        Some(key) if !exhausted => Start::After(key),
        _ => {
            *table += 1;
            *row = 0;
            Start::Offset(0)
        }
    }
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

/// Appends one side of a relation element: `{"_typeName":…,"id":…,"fieldName":…}`.
fn push_side(out: &mut String, model: &str, id: &str, field: Option<&str>) {
    out.push_str("{\"_typeName\":");
    push_str(out, model);
    out.push_str(",\"id\":");
    push_str(out, id);
    out.push_str(",\"fieldName\":");
    match field {
        Some(name) => push_str(out, name),
        None => out.push_str("null"),
    }
    out.push('}');
}

async fn relations(
    req: &Request,
    service: &ServiceMeta,
    cursor: Cursor,
    mut start: Start,
    mut page: Builder<'_>,
) -> ApiResult<Page> {
    let mut table = usize::try_from(cursor.table).unwrap_or(usize::MAX);
    let mut row = cursor.row.max(0);
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
        if let Start::At(key) | Start::After(key) = &start
            && let [a, b] = key.as_slice()
        {
            // A row value, which both databases compare through the (A, B) index.
            let op = if matches!(start, Start::At(_)) {
                " >= "
            } else {
                " > "
            };
            sql.push(" AND (\"A\", \"B\")")
                .push(op)
                .push("(")
                .bind(a.as_str().into())
                .push(", ")
                .bind(b.as_str().into())
                .push(")");
        }
        sql.push(&format!(" ORDER BY \"A\", \"B\" LIMIT {ROWS_PER_READ}"));
        if let Start::Offset(skip) = start {
            sql.push(&format!(" OFFSET {skip}"));
        }
        req.counter().add(1);
        let rows = req.db().bulk_rows(sql).await?;
        let exhausted = (rows.len() as i64) < ROWS_PER_READ;
        let mut last = None;
        for edge in &rows {
            let a_id = edge.text(0)?.unwrap_or_default();
            let b_id = edge.text(1)?.unwrap_or_default();
            let mut element = String::with_capacity(128);
            element.push('[');
            push_side(&mut element, relation.b, b_id, b_field.map(|f| f.name));
            element.push(',');
            push_side(&mut element, relation.a, a_id, a_field.map(|f| f.name));
            element.push(']');
            let len = chars(&element);
            if !page.fits(len) {
                let key = vec![a_id.to_owned(), b_id.to_owned()];
                return Ok(page.full(position(table, row, 0, 0), key));
            }
            page.push(element, len);
            row += 1;
            last = Some((a_id, b_id));
        }
        let last = last.map(|(a, b): (&str, &str)| vec![a.to_owned(), b.to_owned()]);
        start = next_start(last, exhausted, &mut table, &mut row);
    }
    Ok(page.done())
}
