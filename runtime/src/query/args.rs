//! The arguments of a list field as the query layer takes them, whoever read them: the GraphQL
//! layer from typed arguments, a compiled plan from the values of a request it answers.

use async_graphql::{ID, InputType, MaybeUndefined, Name, Pos, ServerError, ServerResult, Value};

use super::filter::{Cond, parse_filter};
use super::order::order_key;
use super::page::Page;
use crate::model::{ApiResult, DateTime, FieldMeta, IntoVal, Json, Kind, ModelMeta, Val, opt};

/// The arguments of a list field: the reference's seven, with `orderBy` and the `orderByList`
/// extension as one list of order keys `(field index, descending)`, `orderBy` first.
#[derive(Debug, Default)]
pub struct ListArgs {
    /// The parsed `filter` argument, not yet checked for 3033; `None` when absent or null.
    pub filter: Option<Cond>,
    /// `orderBy` then the `orderByList` keys, as `(index in ModelMeta::fields, descending)`;
    /// empty when neither is given.
    pub order: Vec<(usize, bool)>,
    /// `skip`, as given (a negative value is rejected by [`ListArgs::page`]).
    pub skip: Option<i32>,
    /// `after`: the id of the node the page starts after.
    pub after: Option<String>,
    /// `before`: the id of the node the page ends before.
    pub before: Option<String>,
    /// `first`, as given (checked by [`ListArgs::page`]).
    pub first: Option<i32>,
    /// `last`, as given (checked by [`ListArgs::page`]).
    pub last: Option<i32>,
}

impl ListArgs {
    /// The arguments with only a filter (a to-one relation field's).
    pub fn filtered(filter: Option<Cond>) -> ListArgs {
        ListArgs {
            filter,
            ..ListArgs::default()
        }
    }

    /// Checks the reference's rules (3014, 3026–3028, 2041, 3033) and resolves the order.
    pub fn page(self, meta: &ModelMeta) -> ApiResult<Page> {
        Page::new(
            meta,
            self.filter,
            self.order,
            [self.skip, self.first, self.last],
            self.after,
            self.before,
        )
    }

    /// Only the filter matters for counts (the reference ignores the other arguments).
    pub fn count_filter(self) -> ApiResult<Option<Cond>> {
        if let Some(f) = &self.filter {
            f.check()?;
        }
        Ok(self.filter)
    }

    /// The list arguments among `args` (a field's arguments, variables resolved), read as the
    /// GraphQL layer's typed arguments read them; `None` when one does not parse (the executor
    /// then reports it).
    pub fn from_values(meta: &ModelMeta, args: &[(Name, Value)]) -> Option<ListArgs> {
        let order_list = match arg(args, "orderByList") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::List(items)) => items
                .iter()
                .map(|item| order_of(meta, item))
                .collect::<Option<_>>()?,
            Some(item) => vec![order_of(meta, &item)?],
        };
        let order_by = match arg(args, "orderBy") {
            None | Some(Value::Null) => None,
            Some(value) => Some(order_of(meta, &value)?),
        };
        Some(ListArgs {
            filter: filter_of(meta, args)?,
            order: order_by.into_iter().chain(order_list).collect(),
            skip: typed(args, "skip")?,
            after: typed(args, "after")?,
            before: typed(args, "before")?,
            first: typed(args, "first")?,
            last: typed(args, "last")?,
        })
    }
}

/// The `filter` argument among `args`, unchecked; `None` when it does not parse.
pub fn filter_of(meta: &ModelMeta, args: &[(Name, Value)]) -> Option<Option<Cond>> {
    match arg(args, "filter") {
        None | Some(Value::Null) => Some(None),
        Some(value) => parse_filter(meta, &value).ok().map(Some),
    }
}

/// One `<Type>OrderBy` value (an enum value, or its name as a string from variables).
fn order_of(meta: &ModelMeta, value: &Value) -> Option<(usize, bool)> {
    match value {
        Value::Enum(name) => order_key(meta, name),
        Value::String(name) => order_key(meta, name),
        _ => None,
    }
}

/// The argument `name` among `args`.
fn arg(args: &[(Name, Value)], name: &str) -> Option<Value> {
    args.iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, v)| v.clone())
}

/// An argument of a built-in type, parsed as the resolvers parse it.
fn typed<T: InputType>(args: &[(Name, Value)], name: &str) -> Option<T> {
    T::parse(arg(args, name)).ok()
}

/// One value of a scalar or enum field given as an argument (`None` when absent): `None` when
/// absent, `Some(Val::Null)` when explicitly null. Read with the field's Rust type, so errors
/// are those of the type (an `Int` beyond 32 bits), placed at `pos`.
pub fn value_of(value: Option<Value>, field: &FieldMeta, pos: Pos) -> ServerResult<Option<Val>> {
    fn typed<T: InputType + IntoVal>(value: Option<Value>, pos: Pos) -> ServerResult<Option<Val>> {
        MaybeUndefined::<T>::parse(value)
            .map(opt)
            .map_err(|e| e.into_server_error(pos))
    }
    match (field.kind, field.list) {
        (Kind::Id, false) => typed::<ID>(value, pos),
        (Kind::Id, true) => typed::<Vec<ID>>(value, pos),
        (Kind::Int, false) => typed::<i32>(value, pos),
        (Kind::Int, true) => typed::<Vec<i32>>(value, pos),
        (Kind::Float, false) => typed::<f64>(value, pos),
        (Kind::Float, true) => typed::<Vec<f64>>(value, pos),
        (Kind::Boolean, false) => typed::<bool>(value, pos),
        (Kind::Boolean, true) => typed::<Vec<bool>>(value, pos),
        (Kind::DateTime, false) => typed::<DateTime>(value, pos),
        (Kind::DateTime, true) => typed::<Vec<DateTime>>(value, pos),
        (Kind::Json, false) => typed::<Json>(value, pos),
        (Kind::Json, true) => typed::<Vec<Json>>(value, pos),
        (Kind::Enum, _) => match value {
            // Enum values are checked by validation against the registered enum type.
            None => Ok(None),
            Some(value) => Val::from_graphql(&value, Kind::Enum)
                .map(Some)
                .map_err(|e| ServerError::new(e.to_string(), Some(pos))),
        },
        (_, false) => typed::<String>(value, pos),
        (_, true) => typed::<Vec<String>>(value, pos),
    }
}
