//! Resolvers (reference §7.4): the fields the `resolver` functions of `svc.yml` add to `Query`
//! and `Mutation`, their payload types, and what a function's data becomes in the response.
//! Resolvers are not subject to permissions; the function is invoked through the service's
//! [`crate::engine::Functions`].

use std::collections::HashMap;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaField, Registry};
use async_graphql::resolver_utils::ContainerType;
use async_graphql::{Context, ServerResult, Value};
use serde_json::Value as J;

use crate::api::args::raw_arg;
use crate::api::registry::{
    input_value, meta_field, named_object, register_object, register_scalar,
};
use crate::api::request;
use crate::api::resolve::{output, server_error};
use crate::model::{
    ApiError, FunctionKind, FunctionMeta, Kind, ResolverField, ResolverMeta, ServiceMeta,
    format_datetime, parse_datetime,
};

/// The resolvers of `service` on `Mutation` (`mutation`) or `Query`, by field name.
pub(crate) fn resolvers(
    service: &'static ServiceMeta,
    mutation: bool,
) -> HashMap<&'static str, (&'static FunctionMeta, &'static ResolverMeta)> {
    service
        .functions
        .iter()
        .filter_map(|f| match &f.kind {
            FunctionKind::Resolver(r) if r.mutation == mutation => Some((r.field, (f, r))),
            _ => None,
        })
        .collect()
}

/// `named` as `T`, `T!`, `[T!]` or `[T!]!`.
fn wrapped(named: &str, list: bool, required: bool) -> String {
    match (list, required) {
        (false, false) => named.to_owned(),
        (false, true) => format!("{named}!"),
        (true, false) => format!("[{named}!]"),
        (true, true) => format!("[{named}!]!"),
    }
}

/// The GraphQL type of a resolver's argument or payload field.
fn value_type(registry: &mut Registry, f: &ResolverField) -> String {
    wrapped(&register_scalar(registry, f.kind), f.list, f.required)
}

/// Registers the fields of the resolvers on one root (with their payload types).
pub(crate) fn register(
    registry: &mut Registry,
    service: &'static ServiceMeta,
    mutation: bool,
) -> IndexMap<String, MetaField> {
    let mut fields = IndexMap::new();
    for f in service.functions {
        let FunctionKind::Resolver(r) = &f.kind else {
            continue;
        };
        if r.mutation != mutation {
            continue;
        }
        let payload = register_object(registry, r.payload.to_owned(), |registry| {
            r.fields
                .iter()
                .map(|p| {
                    let ty = value_type(registry, p);
                    (
                        p.name.to_owned(),
                        meta_field(p.name, ty, IndexMap::new(), None),
                    )
                })
                .collect()
        });
        let args = r
            .args
            .iter()
            .map(|a| {
                let ty = value_type(registry, a);
                (a.name.to_owned(), input_value(a.name.to_owned(), ty))
            })
            .collect();
        let ty = wrapped(&payload, r.list, r.required);
        fields.insert(r.field.to_owned(), meta_field(r.field, ty, args, None));
    }
    fields
}

/// Resolves a resolver's field: invokes the function with the field's arguments and outputs
/// its data as the payload.
pub(crate) async fn resolve(
    ctx: &Context<'_>,
    f: &'static FunctionMeta,
    r: &'static ResolverMeta,
) -> ServerResult<Option<Value>> {
    let req = request(ctx)?;
    let mut data = serde_json::Map::new();
    for a in r.args {
        if let Some((_, value)) = raw_arg(ctx, a.name)? {
            let value = value.into_json().unwrap_or(J::Null);
            data.insert(a.name.to_owned(), value);
        }
    }
    let fail = |e: ApiError| Err(ctx.set_error_path(server_error(ctx, e)));
    let Some(functions) = &req.state().functions else {
        return fail(ApiError::Internal("no function runner".into()));
    };
    let answer = match functions.invoke(req, f, J::Object(data)).await {
        Ok(answer) => answer,
        Err(e) => return fail(e),
    };
    let Some(answer) = answer else {
        if r.required {
            return fail(ApiError::Function {
                code: 2063,
                message: format!(
                    "The payloadType for the resolver `{}` is not nullable, but the resolver returned null.",
                    f.name
                ),
                detail: None,
            });
        }
        return Ok(Some(Value::Null));
    };
    if r.list {
        let J::Array(items) = answer else {
            return fail(mismatch(f));
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match payload(f, r, item) {
                Ok(p) => out.push(p),
                Err(e) => return fail(e),
            }
        }
        output(ctx, Ok(out)).await
    } else {
        match payload(f, r, answer) {
            Ok(p) => output(ctx, Ok(p)).await,
            Err(e) => fail(e),
        }
    }
}

/// 5007: data that is not an object of the payload type.
fn mismatch(f: &FunctionMeta) -> ApiError {
    ApiError::Function {
        code: 5007,
        message: format!(
            "The value of the data object did not match the specified payloadType for function: {}",
            f.name
        ),
        detail: None,
    }
}

/// One payload object from a function's data: keys of the payload type only, values of the
/// field's type (5004 otherwise), required fields present.
fn payload(f: &FunctionMeta, r: &'static ResolverMeta, data: J) -> Result<Payload, ApiError> {
    let J::Object(data) = data else {
        return Err(mismatch(f));
    };
    if data.keys().any(|k| !r.fields.iter().any(|p| p.name == k)) {
        return Err(mismatch(f));
    }
    let mut values = HashMap::with_capacity(r.fields.len());
    for p in r.fields {
        let value = match data.get(p.name) {
            None | Some(J::Null) if p.required => return Err(wrong_type(p)),
            None | Some(J::Null) => Value::Null,
            Some(J::Array(items)) if p.list => Value::List(
                items
                    .iter()
                    .map(|i| scalar(p, i).ok_or_else(|| wrong_type(p)))
                    .collect::<Result<_, _>>()?,
            ),
            Some(_) if p.list => return Err(wrong_type(p)),
            Some(v) => scalar(p, v).ok_or_else(|| wrong_type(p))?,
        };
        values.insert(p.name, value);
    }
    Ok(Payload {
        name: r.payload,
        values,
    })
}

/// 5004: a payload field given a value of another type.
fn wrong_type(p: &ResolverField) -> ApiError {
    let ty = wrapped(p.kind.scalar_name(), p.list, p.required);
    ApiError::Function {
        code: 5004,
        message: format!(
            "Returned Json Object does not match the GraphQL type. The field '{}' should be of type {ty}",
            p.name
        ),
        detail: None,
    }
}

fn scalar(p: &ResolverField, v: &J) -> Option<Value> {
    Some(match (p.kind, v) {
        (Kind::String, J::String(s)) => Value::String(s.clone()),
        (Kind::Id, J::String(s)) => Value::String(s.clone()),
        (Kind::Id, J::Number(n)) => Value::String(n.to_string()),
        (Kind::Int, J::Number(n)) => Value::from(n.as_i64().and_then(|i| i32::try_from(i).ok())?),
        (Kind::Float, J::Number(n)) => Value::from(n.as_f64()?),
        (Kind::Boolean, J::Bool(b)) => Value::Boolean(*b),
        (Kind::DateTime, J::String(s)) => Value::String(format_datetime(&parse_datetime(s)?)),
        (Kind::Json, v) => Value::from_json(v.clone()).ok()?,
        _ => return None,
    })
}

/// A resolver's payload object: its values by field name.
struct Payload {
    name: &'static str,
    values: HashMap<&'static str, Value>,
}

named_object!(impl[] Payload, name: |this| this.name.to_owned());

impl ContainerType for Payload {
    async fn resolve_field(&self, ctx: &Context<'_>) -> ServerResult<Option<Value>> {
        let name = ctx.item.node.name.node.as_str();
        Ok(self.values.get(name).cloned())
    }
}
