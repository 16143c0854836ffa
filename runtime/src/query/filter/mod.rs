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
    /// `=`: the bare key `f`.
    Eq,
    /// `<>`: `f_not`.
    Ne,
    /// `<`: `f_lt`.
    Lt,
    /// `<=`: `f_lte`.
    Le,
    /// `>`: `f_gt`.
    Gt,
    /// `>=`: `f_gte`.
    Ge,
}

/// Where a `LIKE` pattern is anchored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LikeKind {
    /// Anywhere in the value (`f_contains`, `f_not_contains`): `%text%`.
    Contains,
    /// At the start of the value (`f_starts_with`, `f_not_starts_with`): `text%`.
    StartsWith,
    /// At the end of the value (`f_ends_with`, `f_not_ends_with`): `%text`.
    EndsWith,
}

/// A parsed filter condition over one model's columns (`field` indexes `ModelMeta::fields`).
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    /// Matches every node (`true`) or none (`false`), e.g. an empty `OR` or `f_in: []`.
    Const(bool),
    /// All of the conditions hold (`AND`, and sibling keys); empty matches everything.
    All(Vec<Cond>),
    /// At least one of the conditions holds (`OR`); empty matches everything.
    Any(Vec<Cond>),
    /// `f: null` (`IS NULL`) or `f_not: null` (`IS NOT NULL`).
    IsNull {
        /// The field's index in `ModelMeta::fields`.
        field: usize,
        /// `IS NOT NULL` instead of `IS NULL`.
        negate: bool,
    },
    /// A comparison with a constant; a null constant never reaches here (it matches nothing,
    /// or is an [`Cond::IsNull`]).
    Cmp {
        /// The field's index in `ModelMeta::fields`.
        field: usize,
        /// The operator, from the key's suffix.
        op: CmpOp,
        /// The constant, converted to the field's kind.
        val: Val,
    },
    /// `f_in` / `f_not_in` with a non-empty list of constants.
    In {
        /// The field's index in `ModelMeta::fields`.
        field: usize,
        /// The listed values, never empty.
        vals: Vec<Val>,
        /// `NOT IN` (`f_not_in`) instead of `IN`.
        negate: bool,
    },
    /// A `_contains`-style match with a constant string, in which `%`, `_` and `\` match
    /// literally; case-insensitive.
    Like {
        /// The field's index in `ModelMeta::fields`.
        field: usize,
        /// Where the text must occur.
        kind: LikeKind,
        /// The text as given, not yet escaped.
        text: String,
        /// The `_not_…` form: the text must not occur there.
        negate: bool,
    },
    /// Compares a field with a column of the node a permission query is evaluated for (the
    /// outer row [`OUTER`]); equality is null-safe, as `f: $var` with a null variable means
    /// `f IS NULL`.
    CmpOuter {
        /// The field's index in `ModelMeta::fields`.
        field: usize,
        /// The operator; `_in` becomes `Eq` and `_not_in` `Ne`.
        op: CmpOp,
        /// The outer row's column, as named in the marker from [`outer_value`].
        column: String,
        /// The outer column can be null (equality must then match null with null).
        nullable: bool,
    },
    /// `_contains`-style match against a column of the outer row, matched literally.
    LikeOuter {
        /// The field's index in `ModelMeta::fields`.
        field: usize,
        /// Where the outer column's value must occur.
        kind: LikeKind,
        /// The outer row's column, as named in the marker from [`outer_value`].
        column: String,
        /// The `_not_…` form: the value must not occur there.
        negate: bool,
    },
    /// A condition on the nodes related through `meta.relations[rel]`.
    Rel {
        /// The relation field's index in `ModelMeta::relations`.
        rel: usize,
        /// How many of the related nodes must match.
        quant: Quant,
        /// The condition on a related node, over the related model's fields.
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
