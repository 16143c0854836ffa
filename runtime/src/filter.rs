//! `<Type>Filter` and `<Type>OrderBy`: generic GraphQL input types built from a model's data
//! table, parsed into a condition tree and rendered as SQL.
//!
//! The generator emits no per-field filter code: `Filter<Post>` registers `PostFilter` from
//! `Post::META` and parses it generically. Semantics follow the reference: sibling keys are ANDed,
//! empty `AND`/`OR` match everything, `f: null` is `IS NULL`, `f_in: null` and `f_in: []` match
//! nothing, `f_not_in: []` matches everything, and `%`/`_` in `_contains`-style values are
//! matched literally.

use std::borrow::Cow;
use std::marker::PhantomData;

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{
    Deprecation, MetaEnumValue, MetaInputValue, MetaType, MetaTypeId, Registry,
};
use async_graphql::{ID, InputType, InputValueError, InputValueResult, Value};

use crate::meta::{FieldMeta, Kind, ModelMeta};
use crate::record::Record;
use crate::storage::{Backend, Sql, push_param, push_select_col};
use crate::value::{DateTime, Json, Val};

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
    pub fn check(&self) -> Result<(), crate::error::ApiError> {
        match self {
            Cond::NullToMany(name) => Err(crate::error::ApiError::FilterCannotBeNullOnToManyField(
                name,
            )),
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
fn suffixes(field: &FieldMeta) -> &'static [&'static str] {
    const TEXT: &[&str] = &[
        "",
        "_not",
        "_in",
        "_not_in",
        "_lt",
        "_lte",
        "_gt",
        "_gte",
        "_contains",
        "_not_contains",
        "_starts_with",
        "_not_starts_with",
        "_ends_with",
        "_not_ends_with",
    ];
    const ORDERED: &[&str] = &["", "_not", "_in", "_not_in", "_lt", "_lte", "_gt", "_gte"];
    const ENUM: &[&str] = &["", "_not", "_in", "_not_in"];
    const BOOL: &[&str] = &["", "_not"];
    if field.list || !field.exposed {
        return &[];
    }
    match field.kind {
        Kind::Id | Kind::String => TEXT,
        Kind::Int | Kind::Float | Kind::DateTime => ORDERED,
        Kind::Enum => ENUM,
        Kind::Boolean => BOOL,
        Kind::Json | Kind::Relation => &[],
    }
}

/// Registers the GraphQL type of one value of `field` and returns its (nullable) name.
pub(crate) fn register_value_type(registry: &mut Registry, field: &FieldMeta) -> String {
    let named = match (field.kind, field.register) {
        (_, Some(register)) => register(registry),
        (Kind::Id, _) => <ID as InputType>::create_type_info(registry),
        (Kind::Int, _) => <i32 as InputType>::create_type_info(registry),
        (Kind::Float, _) => <f64 as InputType>::create_type_info(registry),
        (Kind::Boolean, _) => <bool as InputType>::create_type_info(registry),
        (Kind::DateTime, _) => <DateTime as InputType>::create_type_info(registry),
        (Kind::Json, _) => <Json as InputType>::create_type_info(registry),
        _ => <String as InputType>::create_type_info(registry),
    };
    named.trim_end_matches('!').to_owned()
}

pub(crate) fn input_value(name: String, ty: String) -> MetaInputValue {
    MetaInputValue {
        name,
        description: None,
        ty,
        deprecation: Deprecation::NoDeprecated,
        default_value: None,
        visible: None,
        inaccessible: false,
        tags: Vec::new(),
        is_secret: false,
        directive_invocations: Vec::new(),
    }
}

/// The registry entry of an input object type built from the data tables.
pub(crate) fn input_object<T>(name: String, fields: IndexMap<String, MetaInputValue>) -> MetaType {
    MetaType::InputObject {
        name,
        description: None,
        input_fields: fields,
        visible: None,
        inaccessible: false,
        tags: Vec::new(),
        rust_typename: Some(std::any::type_name::<T>()),
        oneof: false,
        directive_invocations: Vec::new(),
    }
}

/// `<Type>Filter` for the model `R`.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter<R> {
    pub cond: Cond,
    _model: PhantomData<fn() -> R>,
}

impl<R: Record> InputType for Filter<R> {
    type RawValueType = Self;

    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed(R::META.filter_name)
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_input_type::<Self, _>(MetaTypeId::InputObject, |registry| {
            let meta = R::META;
            let list_of_self = format!("[{}!]", meta.filter_name);
            let mut fields = IndexMap::new();
            for name in ["AND", "OR"] {
                fields.insert(
                    name.to_owned(),
                    input_value(name.to_owned(), list_of_self.clone()),
                );
            }
            for field in meta.fields {
                let suffixes = suffixes(field);
                if suffixes.is_empty() {
                    continue;
                }
                let ty = register_value_type(registry, field);
                for suffix in suffixes {
                    let key = format!("{}{suffix}", field.name);
                    let ty = if suffix.ends_with("_in") {
                        format!("[{ty}!]")
                    } else {
                        ty.clone()
                    };
                    fields.insert(key.clone(), input_value(key, ty));
                }
            }
            for rel in meta.relations {
                let ty = (rel.target.ops.register_filter)(registry);
                let ty = ty.trim_end_matches('!').to_owned();
                let suffixes: &[&str] = if rel.list {
                    &["_every", "_some", "_none"]
                } else {
                    &[""]
                };
                for suffix in suffixes {
                    let key = format!("{}{suffix}", rel.name);
                    fields.insert(key.clone(), input_value(key, ty.clone()));
                }
            }
            input_object::<Self>(meta.filter_name.to_owned(), fields)
        })
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

/// Parses one filter object into a condition.
pub fn parse_filter(meta: &ModelMeta, value: &Value) -> Result<Cond, String> {
    let Value::Object(entries) = value else {
        return Err(format!("expected an object of type `{}`", meta.filter_name));
    };
    let mut all = Vec::with_capacity(entries.len());
    for (key, v) in entries {
        let key = key.as_str();
        if key == "AND" || key == "OR" {
            let subs = match v {
                Value::List(items) => items
                    .iter()
                    .map(|it| parse_filter(meta, it))
                    .collect::<Result<Vec<_>, _>>()?,
                Value::Null => Vec::new(),
                single => vec![parse_filter(meta, single)?],
            };
            all.push(if key == "AND" {
                Cond::All(subs)
            } else if subs.is_empty() {
                // An empty `OR` contributes no condition.
                Cond::Const(true)
            } else {
                Cond::Any(subs)
            });
            continue;
        }
        let (name, suffix) = match key.find('_') {
            Some(i) => (&key[..i], &key[i..]),
            None => (key, ""),
        };
        if let Some(rel) = meta.relation_index(name) {
            all.push(parse_relation(meta, rel, suffix, v, key)?);
            continue;
        }
        let idx = meta
            .field_index(name)
            .filter(|&i| suffixes(&meta.fields[i]).contains(&suffix))
            .ok_or_else(|| format!("unknown filter field `{key}`"))?;
        all.push(parse_key(&meta.fields[idx], idx, suffix, v)?);
    }
    Ok(match all.len() {
        1 => all.pop().unwrap_or(Cond::Const(true)),
        _ => Cond::All(all),
    })
}

/// `f: {…}` / `f: null` on a to-one field, `f_every/f_some/f_none` on a to-many field.
fn parse_relation(
    meta: &ModelMeta,
    rel: usize,
    suffix: &str,
    v: &Value,
    key: &str,
) -> Result<Cond, String> {
    let field = &meta.relations[rel];
    let quant = match (field.list, suffix) {
        (false, "") => Quant::Some,
        (true, "_some") => Quant::Some,
        (true, "_every") => Quant::Every,
        (true, "_none") => Quant::None,
        _ => return Err(format!("unknown filter field `{key}`")),
    };
    if matches!(v, Value::Null) {
        return Ok(if field.list {
            Cond::NullToMany(field.name)
        } else {
            // No related node at all.
            Cond::Rel {
                rel,
                quant: Quant::None,
                cond: Box::new(Cond::Const(true)),
            }
        });
    }
    Ok(Cond::Rel {
        rel,
        quant,
        cond: Box::new(parse_filter(field.target, v)?),
    })
}

fn parse_key(field: &FieldMeta, idx: usize, suffix: &str, v: &Value) -> Result<Cond, String> {
    if let Some((column, nullable)) = outer_column(v) {
        return parse_outer_key(idx, suffix, column, nullable);
    }
    if let (Value::List(items), "_in" | "_not_in") = (v, suffix)
        && items.iter().any(|it| outer_column(it).is_some())
    {
        // `f_in: [$node_x, "a"]`: the constants as `IN`, each outer column as `=` (or, for
        // `_not_in`, all of them as `<>`).
        let negate = suffix == "_not_in";
        let (outer, consts): (Vec<&Value>, Vec<&Value>) =
            items.iter().partition(|it| outer_column(it).is_some());
        let consts = Value::List(consts.into_iter().cloned().collect());
        let mut parts = vec![parse_key(field, idx, suffix, &consts)?];
        for (column, nullable) in outer.into_iter().filter_map(outer_column) {
            let suffix = if negate { "_not" } else { "" };
            parts.push(parse_outer_key(idx, suffix, column, nullable)?);
        }
        return Ok(if negate {
            Cond::All(parts)
        } else {
            Cond::Any(parts)
        });
    }
    let val = || Val::from_graphql(v, field.kind);
    let like = |kind, negate| -> Result<Cond, String> {
        Ok(match val()? {
            Val::String(text) => Cond::Like {
                field: idx,
                kind,
                text,
                negate,
            },
            _ => Cond::Const(false),
        })
    };
    let cmp = |op| -> Result<Cond, String> {
        Ok(match val()? {
            Val::Null => Cond::Const(false),
            val => Cond::Cmp {
                field: idx,
                op,
                val,
            },
        })
    };
    Ok(match suffix {
        "" => match val()? {
            Val::Null => Cond::IsNull {
                field: idx,
                negate: false,
            },
            val => Cond::Cmp {
                field: idx,
                op: CmpOp::Eq,
                val,
            },
        },
        "_not" => match val()? {
            Val::Null => Cond::IsNull {
                field: idx,
                negate: true,
            },
            val => Cond::Cmp {
                field: idx,
                op: CmpOp::Ne,
                val,
            },
        },
        "_in" | "_not_in" => {
            let negate = suffix == "_not_in";
            match val()? {
                Val::List(vals) if vals.is_empty() => Cond::Const(negate),
                Val::List(vals) => Cond::In {
                    field: idx,
                    vals,
                    negate,
                },
                // `f_in: null` and `f_not_in: null` both match nothing.
                _ => Cond::Const(false),
            }
        }
        "_lt" => cmp(CmpOp::Lt)?,
        "_lte" => cmp(CmpOp::Le)?,
        "_gt" => cmp(CmpOp::Gt)?,
        "_gte" => cmp(CmpOp::Ge)?,
        "_contains" => like(LikeKind::Contains, false)?,
        "_not_contains" => like(LikeKind::Contains, true)?,
        "_starts_with" => like(LikeKind::StartsWith, false)?,
        "_not_starts_with" => like(LikeKind::StartsWith, true)?,
        "_ends_with" => like(LikeKind::EndsWith, false)?,
        "_not_ends_with" => like(LikeKind::EndsWith, true)?,
        other => return Err(format!("unknown filter suffix `{other}`")),
    })
}

/// A filter key whose value is a column of the outer row.
fn parse_outer_key(idx: usize, suffix: &str, column: &str, nullable: bool) -> Result<Cond, String> {
    let column = column.to_owned();
    let cmp = |op| Cond::CmpOuter {
        field: idx,
        op,
        column: column.clone(),
        nullable,
    };
    let like = |kind, negate| Cond::LikeOuter {
        field: idx,
        kind,
        column: column.clone(),
        negate,
    };
    Ok(match suffix {
        "" | "_in" => cmp(CmpOp::Eq),
        "_not" | "_not_in" => cmp(CmpOp::Ne),
        "_lt" => cmp(CmpOp::Lt),
        "_lte" => cmp(CmpOp::Le),
        "_gt" => cmp(CmpOp::Gt),
        "_gte" => cmp(CmpOp::Ge),
        "_contains" => like(LikeKind::Contains, false),
        "_not_contains" => like(LikeKind::Contains, true),
        "_starts_with" => like(LikeKind::StartsWith, false),
        "_not_starts_with" => like(LikeKind::StartsWith, true),
        "_ends_with" => like(LikeKind::EndsWith, false),
        "_not_ends_with" => like(LikeKind::EndsWith, true),
        other => return Err(format!("unknown filter suffix `{other}`")),
    })
}

/// Appends the SQL of `cond` over the table aliased `alias`.
pub fn render(cond: &Cond, meta: &ModelMeta, alias: &str, sql: &mut Sql) {
    match cond {
        Cond::Const(true) => {
            sql.push("1=1");
        }
        Cond::Const(false) => {
            sql.push("1=0");
        }
        Cond::All(items) | Cond::Any(items) if items.is_empty() => {
            sql.push("1=1");
        }
        Cond::All(items) | Cond::Any(items) => {
            let sep = if matches!(cond, Cond::All(_)) {
                " AND "
            } else {
                " OR "
            };
            sql.push("(");
            sql.join(items, sep, |s, it| render(it, meta, alias, s));
            sql.push(")");
        }
        Cond::IsNull { field, negate } => {
            sql.col(alias, meta.fields[*field].name);
            sql.push(if *negate { " IS NOT NULL" } else { " IS NULL" });
        }
        Cond::Cmp { field, op, val } => {
            let f = &meta.fields[*field];
            sql.col(alias, f.name).push(match op {
                CmpOp::Eq => " = ",
                CmpOp::Ne => " <> ",
                CmpOp::Lt => " < ",
                CmpOp::Le => " <= ",
                CmpOp::Gt => " > ",
                CmpOp::Ge => " >= ",
            });
            push_param(sql, val, f);
        }
        Cond::In {
            field,
            vals,
            negate,
        } => {
            let f = &meta.fields[*field];
            sql.col(alias, f.name)
                .push(if *negate { " NOT IN (" } else { " IN (" });
            sql.join(vals, ", ", |s, v| push_param(s, v, f));
            sql.push(")");
        }
        Cond::Like {
            field,
            kind,
            text,
            negate,
        } => {
            let f = &meta.fields[*field];
            let escaped = escape_like(text);
            let pattern = match kind {
                LikeKind::Contains => format!("%{escaped}%"),
                LikeKind::StartsWith => format!("{escaped}%"),
                LikeKind::EndsWith => format!("%{escaped}"),
            };
            // On PostgreSQL a `citext` column is matched as `text` (ILIKE ignores case either
            // way): the planner estimates `text` patterns from the column's statistics but
            // `citext` ones with a fixed guess, which made it sort a whole filtered table to
            // take the first 50 rows instead of walking the id index.
            push_select_col(sql, alias, f);
            let op = match (sql.backend(), negate) {
                (Backend::Sqlite, false) => " LIKE ",
                (Backend::Sqlite, true) => " NOT LIKE ",
                (Backend::Postgres, false) => " ILIKE ",
                (Backend::Postgres, true) => " NOT ILIKE ",
            };
            sql.push(op)
                .bind(sea_orm::Value::String(Some(pattern)))
                .push(" ESCAPE '\\'");
        }
        Cond::CmpOuter {
            field,
            op,
            column,
            nullable,
        } => {
            let f = &meta.fields[*field];
            let plain = |sql: &mut Sql, op: &str| {
                sql.col(alias, f.name).push(op).col(OUTER, column);
            };
            match (op, nullable, sql.backend()) {
                // SQLite's `IS` / `IS NOT` are null-safe and use indexes.
                (CmpOp::Eq, true, Backend::Sqlite) => plain(sql, " IS "),
                (CmpOp::Ne, true, Backend::Sqlite) => plain(sql, " IS NOT "),
                // PostgreSQL cannot use an index for `IS NOT DISTINCT FROM`; spell it out.
                (CmpOp::Eq, true, Backend::Postgres) => {
                    sql.push("(");
                    plain(sql, " = ");
                    sql.push(" OR (")
                        .col(alias, f.name)
                        .push(" IS NULL AND ")
                        .col(OUTER, column)
                        .push(" IS NULL))");
                }
                (CmpOp::Ne, true, Backend::Postgres) => plain(sql, " IS DISTINCT FROM "),
                (CmpOp::Eq, false, _) => plain(sql, " = "),
                // As for constants, a null column of the checked table matches neither.
                (CmpOp::Ne, false, _) => plain(sql, " <> "),
                (CmpOp::Lt, ..) => plain(sql, " < "),
                (CmpOp::Le, ..) => plain(sql, " <= "),
                (CmpOp::Gt, ..) => plain(sql, " > "),
                (CmpOp::Ge, ..) => plain(sql, " >= "),
            }
        }
        Cond::LikeOuter {
            field,
            kind,
            column,
            negate,
        } => {
            let f = &meta.fields[*field];
            push_select_col(sql, alias, f);
            let op = match (sql.backend(), negate) {
                (Backend::Sqlite, false) => " LIKE ",
                (Backend::Sqlite, true) => " NOT LIKE ",
                (Backend::Postgres, false) => " ILIKE ",
                (Backend::Postgres, true) => " NOT ILIKE ",
            };
            sql.push(op);
            if *kind != LikeKind::StartsWith {
                sql.push("'%' || ");
            }
            // The outer value is escaped in SQL, as `escape_like` does for constants.
            sql.push("REPLACE(REPLACE(REPLACE(CAST(");
            sql.col(OUTER, column);
            sql.push(" AS TEXT), '\\', '\\\\'), '%', '\\%'), '_', '\\_')");
            if *kind != LikeKind::EndsWith {
                sql.push(" || '%'");
            }
            sql.push(" ESCAPE '\\'");
        }
        Cond::Rel { rel, quant, cond } => {
            let field = &meta.relations[*rel];
            let target = field.target;
            // Nested aliases extend the outer one, so every level has its own names.
            let join = format!("{alias}j");
            let inner = format!("{alias}r");
            if *quant != Quant::Some {
                sql.push("NOT ");
            }
            sql.push("EXISTS (SELECT 1 FROM ")
                .ident(field.table)
                .push(" AS ")
                .push(&join)
                .push(" JOIN ")
                .ident(target.table)
                .push(" AS ")
                .push(&inner)
                .push(" ON ")
                .col(&inner, target.fields[target.id].name)
                .push(" = ")
                .col(&join, field.other)
                .push(" WHERE ")
                .col(&join, field.own)
                .push(" = ")
                .col(alias, meta.fields[meta.id].name)
                .push(" AND (");
            render(cond, target, &inner, sql);
            // `every` = no related node for which the condition is not true (null counts as
            // not matching).
            sql.push(if *quant == Quant::Every {
                ") IS NOT TRUE)"
            } else {
                "))"
            });
        }
        Cond::NullToMany(_) => {
            sql.push("1=0");
        }
    }
}

/// Escapes `\`, `%` and `_` so they match literally inside a `LIKE` pattern.
fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `<Type>OrderBy` for the model `R`: `{field}_ASC` / `{field}_DESC` for every exposed non-list
/// scalar field.
#[derive(Debug, PartialEq, Eq)]
pub struct OrderBy<R> {
    pub field: usize,
    pub descending: bool,
    _model: PhantomData<fn() -> R>,
}

impl<R> Clone for OrderBy<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for OrderBy<R> {}

impl<R: Record> OrderBy<R> {
    /// The default order: `id` ascending.
    pub fn default_order() -> Self {
        OrderBy {
            field: R::META.id,
            descending: false,
            _model: PhantomData,
        }
    }

    fn items() -> impl Iterator<Item = (usize, bool, String)> {
        order_items(R::META)
    }
}

/// The values of `<Type>OrderBy` for `meta`: `(field index, descending, name)`.
pub(crate) fn order_items(meta: &'static ModelMeta) -> impl Iterator<Item = (usize, bool, String)> {
    meta.fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.exposed && !f.list && f.kind != Kind::Relation)
        .flat_map(|(i, f)| {
            [
                (i, false, format!("{}_ASC", f.name)),
                (i, true, format!("{}_DESC", f.name)),
            ]
        })
}

impl<R: Record> InputType for OrderBy<R> {
    type RawValueType = Self;

    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed(R::META.order_by_name)
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_input_type::<Self, _>(MetaTypeId::Enum, |_| MetaType::Enum {
            name: R::META.order_by_name.to_owned(),
            description: None,
            enum_values: Self::items()
                .map(|(_, _, name)| {
                    let value = MetaEnumValue {
                        name: name.clone(),
                        description: None,
                        deprecation: Deprecation::NoDeprecated,
                        visible: None,
                        inaccessible: false,
                        tags: Vec::new(),
                        directive_invocations: Vec::new(),
                    };
                    (name, value)
                })
                .collect(),
            visible: None,
            inaccessible: false,
            tags: Vec::new(),
            rust_typename: Some(std::any::type_name::<Self>()),
            directive_invocations: Vec::new(),
            requires_scopes: Vec::new(),
        })
    }

    fn parse(value: Option<Value>) -> InputValueResult<Self> {
        let name = match &value {
            Some(Value::Enum(n)) => n.as_str(),
            Some(Value::String(s)) => s.as_str(),
            _ => return Err(InputValueError::expected_type(value.unwrap_or_default())),
        };
        Self::items()
            .find(|(_, _, item)| item == name)
            .map(|(field, descending, _)| OrderBy {
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
        let f = &R::META.fields[self.field];
        let dir = if self.descending { "DESC" } else { "ASC" };
        Value::Enum(async_graphql::Name::new(format!("{}_{dir}", f.name)))
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_escaping() {
        assert_eq!(escape_like(r"50%_a\b"), r"50\%\_a\\b");
    }
}
