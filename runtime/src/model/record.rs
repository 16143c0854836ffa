//! The traits generated types implement: [`Record`] for a model's typed row, [`EnumValue`] for a
//! project enum, and the conversions between Rust values, rows and [`Val`].

use async_graphql::{ID, MaybeUndefined};
use sea_orm::DbErr;

use super::cells::Cells;
use super::tables::{FieldMeta, Kind, ModelMeta};
use super::value::{DateTime, Json, Val};

/// A model's typed row. Generated for every model type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a svc model type",
    note = "model types are generated from `types.graphql` by `svc_generator`"
)]
pub trait Record: Sized + Clone + Send + Sync + 'static {
    /// The model's data table.
    const META: &'static ModelMeta;

    /// The node's id.
    fn id(&self) -> &str;

    /// Builds the record from a row selected with the columns of `META.fields`, in order.
    fn decode(row: &dyn Cells) -> Result<Self, DbErr>;
}

/// A project enum. Generated for every enum type.
pub trait EnumValue: Sized + Copy + Send + Sync + 'static {
    /// Every value with its name, in declaration order.
    const VALUES: &'static [(&'static str, Self)];

    /// The value's name, as declared.
    fn name(self) -> &'static str;

    /// The value with this name; `None` when the enum has no such value.
    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// A column type that can be read from a row.
pub trait Column: Sized {
    /// Reads column `idx` of `row`; `None` for a NULL.
    fn get<R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<Self>, DbErr>;
}

/// A value that can be an element of a scalar list (stored as a JSON array).
pub trait ListItem: Sized {
    /// The item from its JSON form; `None` when the JSON holds another type.
    fn from_json(value: serde_json::Value) -> Option<Self>;
}

macro_rules! plain_column {
    ($($t:ty => $read:ident),*) => {$(
        impl Column for $t {
            fn get<R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<Self>, DbErr> {
                row.$read(idx)
            }
        }
    )*};
}
plain_column!(String => string, i32 => int, f64 => float, bool => boolean);

impl Column for ID {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<Self>, DbErr> {
        Ok(String::get(row, idx)?.map(ID))
    }
}

impl Column for DateTime {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<Self>, DbErr> {
        Ok(row.datetime(idx)?.map(DateTime))
    }
}

impl Column for Json {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<Self>, DbErr> {
        String::get(row, idx)?
            .map(|text| {
                serde_json::from_str(&text)
                    .map(Json)
                    .map_err(|e| DbErr::Type(format!("bad stored json: {e}")))
            })
            .transpose()
    }
}

impl<T: ListItem> Column for Vec<T> {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<Self>, DbErr> {
        let Some(text) = String::get(row, idx)? else {
            return Ok(None);
        };
        let items: Vec<serde_json::Value> = serde_json::from_str(&text)
            .map_err(|e| DbErr::Type(format!("bad stored list: {e}")))?;
        items
            .into_iter()
            .map(|it| T::from_json(it).ok_or_else(|| DbErr::Type("bad stored list item".into())))
            .collect::<Result<_, _>>()
            .map(Some)
    }
}

impl ListItem for String {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::String(s) => Some(s),
            _ => None,
        }
    }
}
impl ListItem for ID {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        String::from_json(value).map(ID)
    }
}
impl ListItem for i32 {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        value.as_i64().and_then(|i| i32::try_from(i).ok())
    }
}
impl ListItem for f64 {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        value.as_f64()
    }
}
impl ListItem for bool {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        value.as_bool()
    }
}
impl ListItem for DateTime {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        value
            .as_str()
            .and_then(super::value::parse_datetime)
            .map(DateTime)
    }
}
impl ListItem for Json {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        Some(Json(value))
    }
}

/// Reads a required column (a stored null is an error).
pub fn get<T: Column, R: Cells + ?Sized>(row: &R, idx: usize) -> Result<T, DbErr> {
    T::get(row, idx)?.ok_or_else(|| DbErr::Type(format!("unexpected null in column {idx}")))
}

/// Reads an optional column.
pub fn get_opt<T: Column, R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<T>, DbErr> {
    T::get(row, idx)
}

/// Every column of a node's row (selected with the columns of `meta.fields`, in order) as field
/// values.
pub fn node_values(meta: &ModelMeta, row: &dyn Cells) -> Result<Vec<Val>, DbErr> {
    meta.fields
        .iter()
        .enumerate()
        .map(|(idx, field)| field_value(row, idx, field))
        .collect()
}

/// The value of `field` in column `idx` of `row`.
fn field_value(row: &dyn Cells, idx: usize, field: &FieldMeta) -> Result<Val, DbErr> {
    let value = if field.list {
        get_opt::<Json, _>(row, idx)?.map(|Json(items)| match items {
            serde_json::Value::Array(items) => Val::List(
                items
                    .into_iter()
                    .map(|item| Val::from_stored_json(item, field.kind))
                    .collect(),
            ),
            other => Val::from_stored_json(other, field.kind),
        })
    } else {
        match field.kind {
            Kind::Int => row.int(idx)?.map(Val::Int),
            Kind::Float => row.float(idx)?.map(Val::Float),
            Kind::Boolean => row.boolean(idx)?.map(Val::Bool),
            Kind::DateTime => row.datetime(idx)?.map(Val::DateTime),
            Kind::Json => get_opt::<Json, _>(row, idx)?.map(|j| Val::Json(j.0)),
            Kind::Enum => row.string(idx)?.map(Val::Enum),
            Kind::Id | Kind::String | Kind::Relation => row.string(idx)?.map(Val::String),
        }
    };
    Ok(value.unwrap_or(Val::Null))
}

/// A Rust value that becomes a field value.
pub trait IntoVal {
    /// The value as a [`Val`] (a list becomes [`Val::List`]).
    fn into_val(self) -> Val;
}

impl IntoVal for String {
    fn into_val(self) -> Val {
        Val::String(self)
    }
}
impl IntoVal for ID {
    fn into_val(self) -> Val {
        Val::String(self.0)
    }
}
impl IntoVal for i32 {
    fn into_val(self) -> Val {
        Val::Int(self)
    }
}
impl IntoVal for f64 {
    fn into_val(self) -> Val {
        Val::Float(self)
    }
}
impl IntoVal for bool {
    fn into_val(self) -> Val {
        Val::Bool(self)
    }
}
impl IntoVal for DateTime {
    fn into_val(self) -> Val {
        Val::DateTime(self.0)
    }
}
impl IntoVal for Json {
    fn into_val(self) -> Val {
        Val::Json(self.0)
    }
}
impl<T: IntoVal> IntoVal for Vec<T> {
    fn into_val(self) -> Val {
        Val::List(self.into_iter().map(IntoVal::into_val).collect())
    }
}

/// An optional argument: `None` when absent, `Some(Val::Null)` when explicitly null.
pub fn opt<T: IntoVal>(value: MaybeUndefined<T>) -> Option<Val> {
    match value {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(Val::Null),
        MaybeUndefined::Value(v) => Some(v.into_val()),
    }
}

/// Implements the row and argument conversions for a generated enum type.
#[doc(hidden)]
#[macro_export]
macro_rules! __enum_conversions {
    ($ty:ty) => {
        impl $crate::__codegen::Column for $ty {
            fn get<R: $crate::__codegen::Cells + ?::std::marker::Sized>(
                row: &R,
                idx: usize,
            ) -> ::std::result::Result<::std::option::Option<Self>, $crate::__codegen::DbErr> {
                $crate::__codegen::get_enum(row, idx)
            }
        }
        impl $crate::__codegen::ListItem for $ty {
            fn from_json(
                value: $crate::__codegen::serde_json::Value,
            ) -> ::std::option::Option<Self> {
                value
                    .as_str()
                    .and_then(<$ty as $crate::__codegen::EnumValue>::from_name)
            }
        }
        impl $crate::__codegen::IntoVal for $ty {
            fn into_val(self) -> $crate::__codegen::Val {
                $crate::__codegen::Val::Enum(::std::borrow::ToOwned::to_owned(
                    <$ty as $crate::__codegen::EnumValue>::name(self),
                ))
            }
        }
    };
}

/// Reads an enum column.
pub fn get_enum<E: EnumValue, R: Cells + ?Sized>(row: &R, idx: usize) -> Result<Option<E>, DbErr> {
    String::get(row, idx)?
        .map(|name| {
            E::from_name(&name)
                .ok_or_else(|| DbErr::Type(format!("unknown stored enum value `{name}`")))
        })
        .transpose()
}
