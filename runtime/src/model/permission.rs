//! The `permissions:` of `svc.yml`, compiled by the generator into data tables (reference §5.1):
//! what each permission applies to, for whom, and the `Some<Type>Exists` calls of its query.

/// One entry of `permissions:`, compiled at build time (reference §5.1).
#[derive(Debug)]
pub struct PermissionMeta {
    /// The `operation:` it applies to.
    pub target: PermissionTarget,
    /// Applies only to requests with a valid token.
    pub authenticated: bool,
    /// The fields a type permission covers; `None` for the whole type (future fields included).
    pub fields: Option<&'static [&'static str]>,
    /// The permission query; `None` grants unconditionally.
    pub query: Option<&'static PermissionQuery>,
}

/// What a permission applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionTarget {
    /// `operation: "*"`.
    All,
    /// `Type.op`.
    Type {
        /// The type, an index into [`ServiceMeta::models`](crate::model::ServiceMeta::models).
        model: usize,
        /// The operation on it.
        op: Operation,
    },
    /// `Relation.connect|disconnect|*`.
    Relation {
        /// The relation, an index into
        /// [`ServiceMeta::relations`](crate::model::ServiceMeta::relations).
        relation: usize,
        /// Covers adding edges (`connect` or `*`).
        connect: bool,
        /// Covers removing edges (`disconnect` or `*`).
        disconnect: bool,
    },
}

/// The operation of a type permission, or of an `operationBefore` / `operationAfter` hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `<Type>.read`: reading the type's nodes.
    Read,
    /// `<Type>.create`: creating nodes of the type.
    Create,
    /// `<Type>.update`: updating nodes of the type.
    Update,
    /// `<Type>.delete`: deleting nodes of the type.
    Delete,
}

/// A permission query: grants iff every `Some<Type>Exists` call is true.
#[derive(Debug)]
pub struct PermissionQuery {
    /// The `query:` value of `svc.yml`, for messages.
    pub name: &'static str,
    /// The `Some<Type>Exists` fields of the query, in document order.
    pub calls: &'static [ExistsCall],
    /// The variables the query uses, by name without the `$`, with where each value comes
    /// from; [`PermValue::Var`] indexes this list.
    pub vars: &'static [(&'static str, VarSource)],
}

/// One `Some<Type>Exists(…)` field.
#[derive(Debug)]
pub struct ExistsCall {
    /// The type whose nodes it looks for, an index into
    /// [`ServiceMeta::models`](crate::model::ServiceMeta::models).
    pub model: usize,
    /// Its arguments (`filter`, `orderBy`, `skip`, `after`, `before`, `first`, `last`), by
    /// name, in document order.
    pub args: &'static [(&'static str, PermValue)],
}

/// A constant argument value, or a variable (index into [`PermissionQuery::vars`]).
#[derive(Debug)]
pub enum PermValue {
    /// `null`.
    Null,
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal.
    String(&'static str),
    /// `true` or `false`.
    Boolean(bool),
    /// An enum value, by name: an `orderBy` value (`createdAt_DESC`) or a project enum's value.
    Enum(&'static str),
    /// A list of values.
    List(&'static [PermValue]),
    /// An input object (a filter, …): its keys and values in document order.
    Object(&'static [(&'static str, PermValue)]),
    /// A variable: an index into [`PermissionQuery::vars`].
    Var(usize),
}

/// Where the value of a permission variable comes from (reference §5.4). Field indices are
/// indices into the checked model's [`ModelMeta::fields`](crate::model::ModelMeta::fields)
/// (scalars) or [`ModelMeta::relations`](crate::model::ModelMeta::relations) (relation ids).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarSource {
    /// `$user_id`, `$userId`.
    UserId,
    /// `$node_id`, `$nodeId`.
    NodeId,
    /// `$node_<f>`, `$old_<f>`.
    NodeField(usize),
    /// `$new_<f>`, `$input_<f>`.
    Input(usize),
    /// `$new_<f>Id`, `$input_<f>Id`; indexes
    /// [`ModelMeta::relations`](crate::model::ModelMeta::relations).
    InputRelationId(usize),
    /// `${bName}_id`: the node on side A of the relation.
    SideA,
    /// `${aName}_id`: the node on side B of the relation.
    SideB,
}
