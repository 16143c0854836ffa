//! Filters: the condition tree a `<Type>Filter` argument becomes ([`Cond`]), parsed from the
//! argument's value ([`parse_filter`]) and rendered as SQL ([`render`]).
//!
//! Semantics follow the reference: sibling keys are ANDed, empty `AND`/`OR` match everything,
//! `f: null` is `IS NULL`, `f_in: null` and `f_in: []` match nothing, `f_not_in: []` matches
//! everything, and `%`/`_` in `_contains`-style values are matched literally. Permission queries
//! compare with columns of the node they are evaluated for: such a value is an [`outer_value`]
//! marker, parsed into [`Cond::CmpOuter`] and [`Cond::LikeOuter`].

mod parse;
mod render;

use async_graphql::Value;
use async_graphql::indexmap::IndexMap;

use crate::model::{ApiError, FieldMeta, Kind, Val};

pub use parse::parse_filter;
pub use render::render;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Where a `LIKE` pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeKind {
    Contains,
    StartsWith,
    EndsWith,
}

/// A parsed filter condition over one model's columns (`field` indexes `ModelMeta::fields`).
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Const(bool),
    All(Vec<Cond>),
    Any(Vec<Cond>),
    IsNull {
        field: usize,
        negate: bool,
    },
    Cmp {
        field: usize,
        op: CmpOp,
        val: Val,
    },
    In {
        field: usize,
        vals: Vec<Val>,
        negate: bool,
    },
    Like {
        field: usize,
        kind: LikeKind,
        text: String,
        negate: bool,
    },
    /// Compares a field with a column of the node a permission query is evaluated for (the
    /// outer row [`OUTER`]); equality is null-safe, as `f: $var` with a null variable means
    /// `f IS NULL`.
    CmpOuter {
        field: usize,
        op: CmpOp,
        column: String,
        /// The outer column can be null (equality must then match null with null).
        nullable: bool,
    },
    /// `_contains`-style match against a column of the outer row, matched literally.
    LikeOuter {
        field: usize,
        kind: LikeKind,
        column: String,
        negate: bool,
    },
    /// A condition on the nodes related through `meta.relations[rel]`.
    Rel {
        rel: usize,
        quant: Quant,
        cond: Box<Cond>,
    },
    /// `f_some/f_every/f_none: null`, reported as 3033 when the query runs (parsing cannot carry
    /// an error code).
    NullToMany(&'static str),
}

/// How a relation condition quantifies over the related nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quant {
    /// At least one related node matches (`f_some`, to-one `f: {…}`).
    Some,
    /// No related node fails to match (`f_every`; true when there are none).
    Every,
    /// No related node matches (`f_none`, to-one `f: null` with an always-true condition).
    None,
}

impl Cond {
    /// The first `f_some/f_every/f_none: null` in the tree, as error 3033.
    pub fn check(&self) -> Result<(), ApiError> {
        match self {
            Cond::NullToMany(name) => Err(ApiError::FilterCannotBeNullOnToManyField(name)),
            Cond::All(items) | Cond::Any(items) => items.iter().try_for_each(Cond::check),
            Cond::Rel { cond, .. } => cond.check(),
            _ => Ok(()),
        }
    }
}

/// The alias of the outer row in permission queries evaluated for many nodes at once.
pub const OUTER: &str = "o";

/// The keys of the marker objects that stand for a column of the outer row in a filter value,
/// one for columns that are never null and one for nullable ones (control characters, so no
/// GraphQL input can spell them).
const OUTER_KEY: &str = "\u{1}outer";
const OUTER_NULLABLE_KEY: &str = "\u{1}outer?";

/// A filter value standing for the column `column` of the outer row: what permission variables
/// like `$node_id` become before the filter is parsed.
pub fn outer_value(column: &str, nullable: bool) -> Value {
    let key = if nullable {
        OUTER_NULLABLE_KEY
    } else {
        OUTER_KEY
    };
    let mut map = IndexMap::new();
    map.insert(
        async_graphql::Name::new(key),
        Value::String(column.to_owned()),
    );
    Value::Object(map)
}

/// The outer column a marker value stands for, and whether it can be null.
fn outer_column(v: &Value) -> Option<(&str, bool)> {
    let Value::Object(map) = v else {
        return None;
    };
    if map.len() != 1 {
        return None;
    }
    match map.iter().next() {
        Some((key, Value::String(column))) if key.as_str() == OUTER_KEY => Some((column, false)),
        Some((key, Value::String(column))) if key.as_str() == OUTER_NULLABLE_KEY => {
            Some((column, true))
        }
        _ => None,
    }
}

/// The suffixes a field of each kind gets in `<Type>Filter`, in the reference's order.
pub fn suffixes(field: &FieldMeta) -> &'static [&'static str] {
    if field.list || !field.exposed {
        return &[];
    }
    match field.kind {
        Kind::Id | Kind::String => svc_names::TEXT_FILTERS,
        Kind::Int | Kind::Float | Kind::DateTime => svc_names::ORDERED_FILTERS,
        Kind::Enum => svc_names::ENUM_FILTERS,
        Kind::Boolean => svc_names::BOOLEAN_FILTERS,
        Kind::Json | Kind::Relation => &[],
    }
}
