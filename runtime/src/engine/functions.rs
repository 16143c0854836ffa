//! Functions as the engine sees them (reference §7): the `operationBefore` hooks of every node a
//! mutation writes run before its transaction begins, and their data replaces the write's values;
//! the `operationAfter` hook of the mutation's node runs after the commit, and its data replaces
//! the values of the payload. How a function is invoked (a webhook, …) is the `functions` layer's
//! business, behind [`Functions`], which the service installs in its [`State`](super::State).
//!
//! No hook runs inside a transaction: a slow handler never holds a database lock.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value as J;

use super::Request;
use crate::model::{
    ApiError, ApiResult, FieldMeta, FunctionMeta, Kind, ModelMeta, Operation, Val, Write, cuid,
    node_values, parse_datetime, writable,
};
use crate::storage::Row;

/// A function's answer: `Some(data)`, or `None` for a null result (reference §7.3).
pub type Reply<'a> = Pin<Box<dyn Future<Output = ApiResult<Option<J>>> + Send + 'a>>;

/// Invokes the service's functions.
pub trait Functions: Send + Sync {
    /// Invokes `function` for `req` with `data` (the event's `data`).
    fn invoke<'a>(
        &'a self,
        req: &'a Request,
        function: &'static FunctionMeta,
        data: J,
    ) -> Reply<'a>;
}

/// Where a request came from, for the event of the functions it invokes (reference §7.2).
#[derive(Debug, Clone, Default)]
pub struct Origin {
    /// The request's id (`local:simple:<cuid>`, …), the `executionId` of the functions' errors
    /// and logs.
    pub request_id: String,
    /// The client's IP address (a resolver's `sourceIp`); empty when unknown.
    pub source_ip: String,
    /// The bearer token the request carried.
    pub token: Option<String>,
}

/// The hook of `meta` for `op`, before or after, when the service declares one and can run it.
fn hook(
    req: &Request,
    meta: &ModelMeta,
    before: bool,
    op: Operation,
) -> Option<&'static FunctionMeta> {
    let service = req.state().service;
    if service.functions.is_empty() || req.state().functions.is_none() {
        return None;
    }
    let index = service.models.iter().position(|m| std::ptr::eq(*m, meta))?;
    service
        .functions
        .iter()
        .find(|f| f.hooks(before, index, op))
}

async fn invoke(req: &Request, f: &'static FunctionMeta, data: J) -> ApiResult<Option<J>> {
    match &req.state().functions {
        Some(functions) => functions.invoke(req, f, data).await,
        None => Ok(None),
    }
}

/// Runs the `operationBefore` hooks of a create: of the node, then of each node its nested
/// creates write, depth first, in argument order. A hook's data replaces the scalar values of
/// its write; the node's id is chosen here, so the hook sees it (reference §7.2).
pub(crate) async fn before_create(
    req: &Request,
    meta: &'static ModelMeta,
    mut write: Write,
) -> ApiResult<Write> {
    if req.state().service.functions.is_empty() {
        return Ok(write);
    }
    if let Some(f) = hook(req, meta, true, Operation::Create) {
        let id = cuid();
        let data = write_json(meta, &write, Some(&id));
        if let Some(out) = invoke(req, f, data).await? {
            replace_values(meta, &mut write, out, true)?;
        }
        write.values.push((meta.id, Some(Val::String(id))));
    }
    nested_creates(req, meta, &mut write).await?;
    Ok(write)
}

/// Runs [`before_create`] on each nested create of `write`, in argument order.
async fn nested_creates(
    req: &Request,
    meta: &'static ModelMeta,
    write: &mut Write,
) -> ApiResult<()> {
    for rel in &mut write.rels {
        let Some(nested) = rel.nested.take() else {
            continue;
        };
        let target = meta.relations[rel.field].target;
        let mut done = Vec::with_capacity(nested.len());
        for w in nested {
            done.push(Box::pin(before_create(req, target, w)).await?);
        }
        rel.nested = Some(done);
    }
    Ok(())
}

/// Runs the `operationBefore` hook of an update of node `id` (and of the nested creates it
/// makes).
pub(crate) async fn before_update(
    req: &Request,
    meta: &'static ModelMeta,
    id: &str,
    mut write: Write,
) -> ApiResult<Write> {
    if req.state().service.functions.is_empty() {
        return Ok(write);
    }
    if let Some(f) = hook(req, meta, true, Operation::Update) {
        let data = write_json(meta, &write, Some(id));
        if let Some(out) = invoke(req, f, data).await? {
            replace_values(meta, &mut write, out, false)?;
        }
    }
    nested_creates(req, meta, &mut write).await?;
    Ok(write)
}

/// Runs the `operationBefore` hook of a delete of node `id`: it can only refuse.
pub(crate) async fn before_delete(
    req: &Request,
    meta: &'static ModelMeta,
    id: &str,
) -> ApiResult<()> {
    if let Some(f) = hook(req, meta, true, Operation::Delete) {
        invoke(req, f, serde_json::json!({ "id": id })).await?;
    }
    Ok(())
}

/// Runs the `operationAfter` hook of `op` with the node's values as written (for a delete: as
/// they were); its data replaces the payload's values, not the stored ones.
pub(crate) async fn after(
    req: &Request,
    meta: &'static ModelMeta,
    op: Operation,
    row: Row,
) -> ApiResult<Row> {
    let Some(f) = hook(req, meta, false, op) else {
        return Ok(row);
    };
    let mut values = node_values(meta, &row)?;
    let mut data = BTreeMap::new();
    for (field, value) in meta.fields.iter().zip(&values) {
        data.insert(field.name.to_owned(), value.to_json());
    }
    let Some(out) = invoke(req, f, J::Object(data.into_iter().collect())).await? else {
        return Ok(row);
    };
    let J::Object(out) = out else {
        return Err(not_an_object());
    };
    for (key, value) in out {
        let Some(i) = meta.field_index(&key) else {
            continue;
        };
        if i == meta.id {
            continue;
        }
        values[i] = value_of(meta, &meta.fields[i], value)?;
    }
    Ok(Row::values(values))
}

/// 5006: a function's `data` that is not an object where one is needed.
pub(crate) fn not_an_object() -> ApiError {
    ApiError::Function {
        code: 5006,
        message: "The return value should include a 'data' field of type object".to_owned(),
        detail: None,
    }
}

/// The write's arguments as a hook receives them: scalar values, `<f>Id`/`<f>Ids`, nested
/// objects, and `id`; keys sorted, explicit nulls as `null`.
fn write_json(meta: &ModelMeta, write: &Write, id: Option<&str>) -> J {
    let mut out: BTreeMap<String, J> = BTreeMap::new();
    for (i, v) in &write.values {
        if let Some(v) = v
            && *i != meta.id
        {
            out.insert(meta.fields[*i].name.to_owned(), v.to_json());
        }
    }
    for rel in &write.rels {
        let field = &meta.relations[rel.field];
        if let Some(ids) = &rel.ids {
            if field.list {
                let ids = ids.iter().map(|s| J::String(s.clone())).collect();
                out.insert(svc_names::connect_list_argument(field.name), J::Array(ids));
            } else {
                let id = ids.first().map_or(J::Null, |s| J::String(s.clone()));
                out.insert(svc_names::connect_argument(field.name), id);
            }
        }
        if let Some(nested) = &rel.nested {
            let items: Vec<J> = nested
                .iter()
                .map(|w| write_json(field.target, w, None))
                .collect();
            let value = if field.list {
                J::Array(items)
            } else {
                items.into_iter().next().unwrap_or(J::Null)
            };
            out.insert(field.name.to_owned(), value);
        }
    }
    if let Some(id) = id {
        out.insert("id".to_owned(), J::String(id.to_owned()));
    }
    J::Object(out.into_iter().collect())
}

/// A before-hook's data becomes the write's scalar values (reference §7.3): model scalars only,
/// the id unchanged, relation arguments ignored, values checked as arguments are; a key the
/// model does not have is 3005, and a create missing a required value is 3020.
fn replace_values(
    meta: &'static ModelMeta,
    write: &mut Write,
    out: J,
    create: bool,
) -> ApiResult<()> {
    let J::Object(out) = out else {
        return Err(not_an_object());
    };
    let mut values = Vec::new();
    let mut extra = Vec::new();
    for (key, value) in out {
        if key == "id" {
            continue;
        }
        if let Some(i) = meta.field_index(&key).filter(|&i| writable(meta, i)) {
            values.push((i, Some(value_of(meta, &meta.fields[i], value)?)));
        } else if meta.field_index(&key).is_some() || is_relation_argument(meta, &key) {
            continue;
        } else {
            extra.push(key);
        }
    }
    if !extra.is_empty() {
        return Err(ApiError::ExtraArguments {
            names: extra,
            model: meta.name,
        });
    }
    if create {
        for (i, field) in meta.fields.iter().enumerate() {
            let given = values
                .iter()
                .any(|(j, v)| *j == i && v.as_ref().is_some_and(|v| !v.is_null()));
            if writable(meta, i) && field.required && field.default.is_none() && !given {
                return Err(ApiError::FieldCannotBeNull(field.name));
            }
        }
    }
    write.values = values;
    Ok(())
}

/// Whether `key` names a relation argument of `meta` (`<f>`, `<f>Id`, `<f>Ids`).
fn is_relation_argument(meta: &ModelMeta, key: &str) -> bool {
    let name = svc_names::parse_connect_argument(key).map_or(key, |(name, _)| name);
    meta.relation_index(name).is_some()
}

/// A value a function gives for `field`, checked against the field's type (3036 otherwise).
fn value_of(meta: &ModelMeta, field: &'static FieldMeta, value: J) -> ApiResult<Val> {
    let invalid = |v: &J| ApiError::InputInvalid {
        value: v.to_string(),
        field: field.name,
        model: meta.name,
    };
    if value.is_null() {
        return Ok(Val::Null);
    }
    if field.list {
        let J::Array(items) = &value else {
            return Err(invalid(&value));
        };
        let items = items
            .iter()
            .map(|item| scalar(field, item).ok_or_else(|| invalid(&value)))
            .collect::<ApiResult<Vec<Val>>>()?;
        return Ok(Val::List(items));
    }
    scalar(field, &value).ok_or_else(|| invalid(&value))
}

fn scalar(field: &FieldMeta, value: &J) -> Option<Val> {
    Some(match (field.kind, value) {
        (Kind::Id | Kind::String, J::String(s)) => Val::String(s.clone()),
        (Kind::Enum, J::String(s)) if field.enum_values.contains(&s.as_str()) => {
            Val::Enum(s.clone())
        }
        (Kind::Int, J::Number(n)) => Val::Int(n.as_i64().and_then(|i| i32::try_from(i).ok())?),
        (Kind::Float, J::Number(n)) => Val::Float(n.as_f64()?),
        (Kind::Boolean, J::Bool(b)) => Val::Bool(*b),
        (Kind::DateTime, J::String(s)) => Val::DateTime(parse_datetime(s)?),
        (Kind::Json, J::String(s)) => Val::Json(serde_json::from_str(s).ok()?),
        (Kind::Json, v @ (J::Object(_) | J::Array(_))) => Val::Json(v.clone()),
        _ => return None,
    })
}
