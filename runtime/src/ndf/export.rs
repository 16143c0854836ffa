//! `POST /simple/v1/<id>/export` (reference §8.4): one page of an NDF export.
//!
//! Tables are read in a fixed order, 1 000 rows per statement, nodes by id ascending (edges by
//! their two ids), and each row becomes its elements. Elements are added while the sum of their
//! serialised lengths stays within the limit; the first that does not fit ends the page, with
//! the cursor at its row (and, for lists, its field and the offset inside the list: a long list
//! is split into chunks of as many values as fit). A page always holds at least one element (or
//! one list value), so an element larger than the limit cannot stall an export.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use serde_json::value::RawValue;

use super::{Cursor, FileType};
use crate::auth::Principal;
use crate::engine::{Request, State};
use crate::model::{
    ApiResult, Cells, Json, Kind, ModelMeta, RelFieldMeta, ServiceMeta, Val, get_opt,
};
use crate::query::select::push_select;
use crate::storage::{Row, Sql};

/// Rows read per statement.
const ROWS_PER_READ: i64 = 2000;

/// The most text a page's buffer is made for at once (a page of the default limit, 10 MB of
/// elements, fits; a larger limit grows it as it fills).
const PREALLOCATED: usize = 12 << 20;

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

/// One response of the export, as its JSON text:
/// `{"out":{"jsonElements":[…],"size":N},"cursor":{…},"isFull":b}`.
pub type Page = String;

/// The start of a page's text, before its first element.
const HEAD: &str = "{\"out\":{\"jsonElements\":[";

/// Accumulates a page's elements within the limit, written one after the other into the
/// response's text (no text of its own per element, and no copy of them all at the end).
struct Builder<'a> {
    json: String,
    elements: usize,
    size: usize,
    limit: usize,
    file_type: FileType,
    resumes: &'a Resumes,
}

impl Builder<'_> {
    fn is_empty(&self) -> bool {
        self.elements == 0
    }

    /// Begins an element (after its comma): where its text starts in `json`.
    fn begin(&mut self) -> usize {
        if self.elements > 0 {
            self.json.push(',');
        }
        self.json.len()
    }

    /// Keeps the element begun at `start` when it fits (a page's first always does) and says
    /// so; otherwise takes it out again.
    fn keep(&mut self, start: usize) -> bool {
        let len = chars(&self.json[start..]);
        if self.elements > 0 && self.size + len > self.limit {
            self.undo(start);
            return false;
        }
        self.size += len;
        self.elements += 1;
        true
    }

    /// Takes out the element begun at `start`, with its comma.
    fn undo(&mut self, start: usize) {
        self.json.truncate(start - usize::from(self.elements > 0));
    }

    /// Ends the page before the element at `cursor`, the row of key `key`.
    fn full(self, cursor: Cursor, key: Vec<String>) -> Page {
        self.resumes.keep(self.file_type, cursor, key);
        self.finish(cursor, true)
    }

    fn done(self) -> Page {
        self.finish(Cursor::DONE, false)
    }

    fn finish(mut self, cursor: Cursor, is_full: bool) -> Page {
        self.json.push_str("],\"size\":");
        self.json.push_str(itoa::Buffer::new().format(self.size));
        self.json.push_str("},\"cursor\":");
        self.json
            .push_str(&serde_json::to_string(&cursor).unwrap_or_default());
        self.json.push_str(",\"isFull\":");
        self.json.push_str(if is_full { "true" } else { "false" });
        self.json.push('}');
        self.json
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
    let mut json = String::with_capacity(limit.saturating_add(1024).min(PREALLOCATED));
    json.push_str(HEAD);
    let builder = Builder {
        json,
        elements: 0,
        size: 0,
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
    // Every byte looked at (no early exit), which the compiler turns into vector instructions.
    let plain = !text.bytes().fold(false, |escape, b| {
        escape | (b < 0x20) | (b == b'"') | (b == b'\\')
    });
    if plain {
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

/// Appends a node's element from its row (every field's column, as `push_select` reads
/// them): its non-null, non-list fields, `createdAt` and `updatedAt` last.
fn node_element(out: &mut String, meta: &ModelMeta, row: &Row) -> ApiResult<()> {
    out.push_str("{\"_typeName\":");
    push_str(out, meta.name);
    out.push_str(",\"id\":");
    push_str(out, row.text(meta.id)?.unwrap_or_default());
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
        push_str(out, field.name);
        out.push(':');
        let written = match field.kind {
            Kind::Id | Kind::String | Kind::Enum | Kind::Relation => match row.text(i)? {
                Some(text) => {
                    push_str(out, text);
                    true
                }
                None => false,
            },
            Kind::Int => row
                .int(i)?
                .map(|n| out.push_str(itoa::Buffer::new().format(n)))
                .is_some(),
            Kind::Float => row
                .float(i)?
                .map(|f| out.push_str(&Val::Float(f).to_json().to_string()))
                .is_some(),
            Kind::Boolean => row
                .boolean(i)?
                .map(|b| out.push_str(if b { "true" } else { "false" }))
                .is_some(),
            Kind::DateTime => row
                .datetime_text(i)?
                .map(|d| push_str(out, d.as_str()))
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
    Ok(())
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
        for values in &rows {
            let at = page.begin();
            node_element(&mut page.json, meta, values)?;
            if !page.keep(at) {
                let id = values.string(meta.id)?.unwrap_or_default();
                return Ok(page.full(position(table, row, 0, 0), vec![id]));
            }
            row += 1;
        }
        let last = match rows.last() {
            Some(values) => values.string(meta.id)?,
            None => None,
        };
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

/// The items of a stored list, each as its JSON text: a string without escapes as it is stored
/// (the text its value would be written as), anything else read and written again.
fn list_items(stored: Option<&str>, kind: Kind) -> Vec<Cow<'_, str>> {
    let Some(items) = stored.and_then(|text| serde_json::from_str::<Vec<&RawValue>>(text).ok())
    else {
        return Vec::new();
    };
    let plain = matches!(kind, Kind::Id | Kind::String | Kind::Enum);
    items
        .into_iter()
        .map(|raw| {
            let text = raw.get();
            if plain && text.starts_with('"') && !text.contains('\\') {
                return Cow::Borrowed(text);
            }
            let item = serde_json::from_str(text).unwrap_or(Value::Null);
            Cow::Owned(Val::from_stored_json(item, kind).to_json().to_string())
        })
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
                let first = page.is_empty();
                let at = page.begin();
                let element = &mut page.json;
                element.push_str("{\"_typeName\":");
                push_str(element, meta.name);
                element.push_str(",\"id\":");
                push_str(element, &id);
                element.push(',');
                push_str(element, meta.fields[index].name);
                element.push_str(":[");
                // `{…,"<field>":[` + values + `]}`
                let overhead = chars(&element[at..]) + 2;
                // As many values as fit (one at least on an empty page).
                let mut len = overhead;
                let mut count = 0;
                for text in texts {
                    let extra = chars(text) + usize::from(count > 0);
                    if page.size + len + extra > page.limit && !(first && count == 0) {
                        break;
                    }
                    len += extra;
                    count += 1;
                }
                if count == 0 {
                    page.undo(at);
                    return Ok(page.full(position(table, row, field, array), vec![id]));
                }
                for (i, text) in texts[..count].iter().enumerate() {
                    if i > 0 {
                        page.json.push(',');
                    }
                    page.json.push_str(text);
                }
                page.json.push_str("]}");
                let kept = page.keep(at);
                debug_assert!(kept, "a list element made to fit did not");
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
            let at = page.begin();
            let element = &mut page.json;
            element.push('[');
            push_side(element, relation.b, b_id, b_field.map(|f| f.name));
            element.push(',');
            push_side(element, relation.a, a_id, a_field.map(|f| f.name));
            element.push(']');
            if !page.keep(at) {
                let key = vec![a_id.to_owned(), b_id.to_owned()];
                return Ok(page.full(position(table, row, 0, 0), key));
            }
            row += 1;
            last = Some((a_id, b_id));
        }
        let last = last.map(|(a, b): (&str, &str)| vec![a.to_owned(), b.to_owned()]);
        start = next_start(last, exhausted, &mut table, &mut row);
    }
    Ok(page.done())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts the export wrote before it wrote plain strings itself and passed stored list
    /// items through: every value read and written by `serde_json`.
    fn written(text: &str) -> String {
        Value::from(text).to_string()
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let texts = [
            "",
            "plain",
            "a \"quote\"",
            "back\\slash",
            "tab\there",
            "line\nbreak",
            "\u{0}\u{1f}",
            "del\u{7f}",
            "ünïcödé ✓ 𝄞",
            "a long text with nothing to escape in it, longer than one vector register",
            "a long text with one escape at its very end, longer than a vector register\"",
        ];
        for text in texts {
            let mut out = String::new();
            push_str(&mut out, text);
            assert_eq!(out, written(text), "{text:?}");
        }
    }

    #[test]
    fn list_items_are_the_texts_their_values_are_written_as() {
        let cases: [(&str, Kind); 8] = [
            (r#"["a","b \"c\"","d\\e","ü ✓","\u0001"]"#, Kind::String),
            (r#"[ "spaced" , "out" ]"#, Kind::String),
            (r#"["DRAFT","PUBLISHED"]"#, Kind::Enum),
            (r#"[1,-2,2147483647]"#, Kind::Int),
            (r#"[1.5,2,1e3]"#, Kind::Float),
            (r#"[true,false]"#, Kind::Boolean),
            (
                r#"["2020-01-02T03:04:05.678Z","2020-01-02 03:04:05Z"]"#,
                Kind::DateTime,
            ),
            (r#"[{"a":1},"b",[2]]"#, Kind::Json),
        ];
        for (stored, kind) in cases {
            let items: Vec<Value> = serde_json::from_str(stored).expect("a list");
            let expected: Vec<String> = items
                .into_iter()
                .map(|item| Val::from_stored_json(item, kind).to_json().to_string())
                .collect();
            let got: Vec<String> = list_items(Some(stored), kind)
                .into_iter()
                .map(Cow::into_owned)
                .collect();
            assert_eq!(got, expected, "{stored}");
        }
        assert!(list_items(None, Kind::String).is_empty());
        assert!(list_items(Some("not json"), Kind::String).is_empty());
        // A plain string is handed over as stored, not made again.
        let stored = r#"["abc"]"#;
        assert!(matches!(
            list_items(Some(stored), Kind::String)[0],
            Cow::Borrowed(_)
        ));
    }
}
