//! The typed input types of the arguments that depend on a model: `<Type>Filter` ([`Filter`])
//! and `<Type>OrderBy` ([`OrderBy`]), registered from the data tables and parsed with the query
//! layer's parsers; and `Raw`, an argument read as sent, whose real type the tables describe.

use std::borrow::Cow;
use std::marker::PhantomData;

use async_graphql::registry::Registry;
use async_graphql::{InputType, InputValueError, InputValueResult, Value};

use super::registry::{register_filter, register_order_by};
use crate::model::Record;
use crate::query::order::order_key;
use crate::query::{Cond, parse_filter};

/// `<Type>Filter` for the model `R`.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter<R> {
    /// The filter as the query layer's condition, parsed against `R`'s data table.
    pub cond: Cond,
    _model: PhantomData<fn() -> R>,
}

impl<R: Record> InputType for Filter<R> {
    type RawValueType = Self;

    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed(R::META.filter_name)
    }

    fn create_type_info(registry: &mut Registry) -> String {
        register_filter(registry, R::META)
    }

    fn parse(value: Option<Value>) -> InputValueResult<Self> {
        let value = value.unwrap_or(Value::Null);
        let cond = parse_filter(R::META, &value).map_err(InputValueError::custom)?;
        Ok(Filter {
            cond,
            _model: PhantomData,
        })
    }

    fn to_value(&self) -> Value {
        // Filters are only ever read from requests; they are never sent back to a client.
        Value::Null
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }
}

/// A value of `<Type>OrderBy` for the model `R`: `{field}_ASC` / `{field}_DESC` for every exposed
/// non-list scalar field.
#[derive(Debug, PartialEq, Eq)]
pub struct OrderBy<R> {
    /// The ordered field: an index into `R::META.fields` (a non-list scalar field).
    pub field: usize,
    /// `true` for `{field}_DESC`, `false` for `{field}_ASC`.
    pub descending: bool,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for OrderBy<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for OrderBy<R> {}

impl<R: Record> InputType for OrderBy<R> {
    type RawValueType = Self;

    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed(R::META.order_by_name)
    }

    fn create_type_info(registry: &mut Registry) -> String {
        register_order_by(registry, R::META)
    }

    fn parse(value: Option<Value>) -> InputValueResult<Self> {
        let name = match &value {
            Some(Value::Enum(n)) => n.as_str(),
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(InputValueError::expected_type(value.unwrap_or_default())),
        };
        order_key(R::META, name)
            .map(|(field, descending)| OrderBy {
                field,
                descending,
                _model: PhantomData,
            })
            .ok_or_else(|| {
                InputValueError::custom(format!(
                    "enumeration type \"{}\" does not contain the value \"{name}\"",
                    R::META.order_by_name
                ))
            })
    }

    fn to_value(&self) -> Value {
        let name = R::META.fields[self.field].name;
        Value::Enum(async_graphql::Name::new(svc_names::order_value(
            name,
            self.descending,
        )))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }
}

/// An argument as sent, variables resolved; validation has checked it against its registered
/// type, and the data tables say how to read it.
pub(crate) struct Raw(pub(crate) Value);

impl InputType for Raw {
    type RawValueType = Self;

    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed("Raw")
    }

    fn create_type_info(_: &mut Registry) -> String {
        // Never registered: the argument's real type is registered from the data tables.
        Self::type_name().into_owned()
    }

    fn parse(value: Option<Value>) -> InputValueResult<Self> {
        Ok(Raw(value.unwrap_or(Value::Null)))
    }

    fn to_value(&self) -> Value {
        self.0.clone()
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }
}
