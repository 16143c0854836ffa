//! The traits generated types implement: [`Record`] for a model's typed row, [`EnumValue`] for a
//! project enum, and the conversions between Rust values, rows and [`Val`].

use async_graphql::{ID, MaybeUndefined};
use sea_orm::DbErr;

use crate::meta::ModelMeta;
use crate::storage::{Backend, Cells, Row};
use crate::value::{DateTime, Json, Val};

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
    fn decode(row: &Row, backend: Backend) -> Result<Self, DbErr>;
}

/// A project enum. Generated for every enum type.
pub trait EnumValue: Sized + Copy + Send + Sync + 'static {
    /// Every value with its name, in declaration order.
    const VALUES: &'static [(&'static str, Self)];

    fn name(self) -> &'static str;

    fn from_name(name: &str) -> Option<Self> {
        Self::VALUES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }
}

/// A column type that can be read from a row.
pub trait Column: Sized {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize, backend: Backend)
    -> Result<Option<Self>, DbErr>;
}

/// A value that can be an element of a scalar list (stored as a JSON array).
pub trait ListItem: Sized {
    fn from_json(value: serde_json::Value) -> Option<Self>;
}

macro_rules! plain_column {
    ($($t:ty => $read:ident),*) => {$(
        impl Column for $t {
            fn get<R: Cells + ?Sized>(row: &R, idx: usize, _: Backend) -> Result<Option<Self>, DbErr> {
                row.$read(idx)
            }
        }
    )*};
}
plain_column!(String => string, i32 => int, f64 => float, bool => boolean);

impl Column for ID {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize, b: Backend) -> Result<Option<Self>, DbErr> {
        Ok(String::get(row, idx, b)?.map(ID))
    }
}

impl Column for DateTime {
    fn get<R: Cells + ?Sized>(
        row: &R,
        idx: usize,
        backend: Backend,
    ) -> Result<Option<Self>, DbErr> {
        Ok(row.datetime(idx, backend)?.map(DateTime))
    }
}

impl Column for Json {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize, b: Backend) -> Result<Option<Self>, DbErr> {
        String::get(row, idx, b)?
            .map(|text| {
                serde_json::from_str(&text)
                    .map(Json)
                    .map_err(|e| DbErr::Type(format!("bad stored json: {e}")))
            })
            .transpose()
    }
}

impl<T: ListItem> Column for Vec<T> {
    fn get<R: Cells + ?Sized>(row: &R, idx: usize, b: Backend) -> Result<Option<Self>, DbErr> {
        let Some(text) = String::get(row, idx, b)? else {
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
            .and_then(crate::value::parse_datetime)
            .map(DateTime)
    }
}
impl ListItem for Json {
    fn from_json(value: serde_json::Value) -> Option<Self> {
        Some(Json(value))
    }
}

/// Reads a required column (a stored null is an error).
pub fn get<T: Column, R: Cells + ?Sized>(
    row: &R,
    idx: usize,
    backend: Backend,
) -> Result<T, DbErr> {
    T::get(row, idx, backend)?
        .ok_or_else(|| DbErr::Type(format!("unexpected null in column {idx}")))
}

/// Reads an optional column.
pub fn get_opt<T: Column, R: Cells + ?Sized>(
    row: &R,
    idx: usize,
    backend: Backend,
) -> Result<Option<T>, DbErr> {
    T::get(row, idx, backend)
}

/// A Rust value that becomes a field value.
pub trait IntoVal {
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
                backend: $crate::__codegen::Backend,
            ) -> ::std::result::Result<::std::option::Option<Self>, $crate::__codegen::DbErr> {
                $crate::__codegen::get_enum(row, idx, backend)
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
pub fn get_enum<E: EnumValue, R: Cells + ?Sized>(
    row: &R,
    idx: usize,
    backend: Backend,
) -> Result<Option<E>, DbErr> {
    String::get(row, idx, backend)?
        .map(|name| {
            E::from_name(&name)
                .ok_or_else(|| DbErr::Type(format!("unknown stored enum value `{name}`")))
        })
        .transpose()
}
