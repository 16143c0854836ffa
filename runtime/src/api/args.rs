//! Reading a field's arguments with the data tables: typed arguments, the list arguments, and the
//! write arguments (scalars, `<f>Id(s)`, nested creates), with the errors GraphQL's own input
//! types would give.

use async_graphql::{
    Context, ID, InputType, MaybeUndefined, Pos, ServerError, ServerResult, Value,
};

use super::inputs::{Filter, OrderBy, Raw};
use crate::model::{
    FieldMeta, ModelMeta, Record, RelArg, Val, Write, id_input, parse_write, writable,
};
use crate::query::ListArgs;
use crate::query::args::value_of;

/// A typed argument of the current field.
pub(crate) fn arg<T: InputType>(ctx: &Context<'_>, name: &str) -> ServerResult<T> {
    ctx.param_value::<T>(name, None).map(|(_, v)| v)
}

/// The `filter` argument of the current field, over the nodes of `R`.
pub(crate) fn filter_arg<R: Record>(ctx: &Context<'_>) -> ServerResult<Option<crate::query::Cond>> {
    Ok(arg::<Option<Filter<R>>>(ctx, "filter")?.map(|f| f.cond))
}

/// The eight list arguments over the nodes of `R` (`orderByList` only when `order_list`).
pub(crate) fn list_args<R: Record>(ctx: &Context<'_>, order_list: bool) -> ServerResult<ListArgs> {
    // Read in the order of the arguments, so the first bad one is the one reported.
    let filter = filter_arg::<R>(ctx)?;
    let order_by = arg::<Option<OrderBy<R>>>(ctx, "orderBy")?;
    let order_by_list = if order_list {
        arg::<Option<Vec<OrderBy<R>>>>(ctx, "orderByList")?
    } else {
        None
    };
    Ok(ListArgs {
        filter,
        order: order_by
            .into_iter()
            .chain(order_by_list.into_iter().flatten())
            .map(|o| (o.field, o.descending))
            .collect(),
        skip: arg(ctx, "skip")?,
        after: arg(ctx, "after")?,
        before: arg(ctx, "before")?,
        first: arg(ctx, "first")?,
        last: arg(ctx, "last")?,
    })
}

/// The value of an argument and its position; `None` when absent or null.
pub(crate) fn raw_arg(ctx: &Context<'_>, name: &str) -> ServerResult<Option<(Pos, Value)>> {
    let (pos, value) = ctx.param_value::<MaybeUndefined<Raw>>(name, None)?;
    Ok(value.take().map(|raw| (pos, raw.0)))
}

/// One value of a scalar or enum field as an argument: `None` when absent, `Some(Val::Null)`
/// when explicitly null. Read with the field's Rust type so errors are those of the type (e.g.
/// an Int beyond 32 bits).
pub(crate) fn value_arg(
    ctx: &Context<'_>,
    name: &str,
    field: &FieldMeta,
) -> ServerResult<Option<Val>> {
    let (pos, value) = ctx.param_value::<MaybeUndefined<Raw>>(name, None)?;
    let value = match value {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(Value::Null),
        MaybeUndefined::Value(raw) => Some(raw.0),
    };
    value_of(value, field, pos)
}

/// The arguments of `create<T>` or `update<T>`: scalars, then `<f>Id(s)` and nested creates per
/// relation field.
pub(crate) fn write_args(ctx: &Context<'_>, meta: &'static ModelMeta) -> ServerResult<Write> {
    let mut write = Write::default();
    for (i, f) in meta.fields.iter().enumerate() {
        if writable(meta, i) {
            write.values.push((i, value_arg(ctx, f.name, f)?));
        }
    }
    for (i, f) in meta.relations.iter().enumerate() {
        let ids = if f.list {
            arg::<MaybeUndefined<Vec<ID>>>(ctx, &svc_names::connect_list_argument(f.name))?
                .take()
                .map(|ids| ids.into_iter().map(|id| id.0).collect())
        } else {
            arg::<MaybeUndefined<ID>>(ctx, &svc_names::connect_argument(f.name))?
                .take()
                .map(|id| vec![id.0])
        };
        let nested = match raw_arg(ctx, f.name)? {
            Some((pos, value)) if f.nested => {
                let name = || svc_names::nested_input(meta.name, f.name, f.target.name);
                let items = match (&value, f.list) {
                    (Value::List(items), true) => items.iter().collect(),
                    (_, _) => vec![&value],
                };
                let mut writes = Vec::with_capacity(items.len());
                for item in items {
                    writes.push(parse_write(f.target, item, Some(f.back)).map_err(|e| {
                        let mut message = format!(r#"Failed to parse "{}": {e}"#, name());
                        if f.list {
                            message
                                .push_str(&format!(r#" (occurred while parsing "[{}!]")"#, name()));
                        }
                        ServerError::new(message, Some(pos))
                    })?);
                }
                Some(writes)
            }
            _ => None,
        };
        write.rels.push(RelArg {
            field: i,
            ids,
            nested,
        });
    }
    Ok(write)
}

/// Reads an input object of `meta` (`Create<T>`, `UpdateMany<Plural>Data`) with the data tables.
pub(crate) fn parse_input(
    meta: &'static ModelMeta,
    value: &Value,
    skip: Option<usize>,
    pos: Pos,
    type_name: impl Fn() -> String,
) -> ServerResult<Write> {
    parse_write(meta, value, skip).map_err(|e| {
        ServerError::new(
            format!(r#"Failed to parse "{}": {e}"#, type_name()),
            Some(pos),
        )
    })
}

/// `update: Update<T>!` of `updateOrCreate<T>`: the node's id and the update.
pub(crate) fn update_input(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
) -> ServerResult<(ID, Write)> {
    let name = || svc_names::update_input(meta.name);
    let Some((pos, Value::Object(mut fields))) = raw_arg(ctx, "update")? else {
        return Err(ServerError::new(
            format!(r#"Failed to parse "{}": expected an input object"#, name()),
            None,
        ));
    };
    let id = match fields.shift_remove("id").as_ref().and_then(id_input) {
        Some(id) => ID(id),
        None => {
            return Err(ServerError::new(
                format!(r#"Failed to parse "{}": `id` is required"#, name()),
                Some(pos),
            ));
        }
    };
    let write = parse_input(meta, &Value::Object(fields), None, pos, name)?;
    Ok((id, write))
}
