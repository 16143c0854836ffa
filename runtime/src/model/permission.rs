//! The `permissions:` of `svc.yml`, compiled by the generator into data tables (reference §5.1):
//! what each permission applies to, for whom, and the `Some<Type>Exists` calls of its query.

/// One entry of `permissions:`, compiled at build time (reference §5.1).
#[derive(Debug)]
pub struct PermissionMeta {
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
    /// `Type.op`; `model` indexes [`ServiceMeta::models`].
    Type { model: usize, op: Operation },
    /// `Relation.connect|disconnect|*`; `relation` indexes [`ServiceMeta::relations`].
    Relation {
        relation: usize,
        connect: bool,
        disconnect: bool,
    },
}

/// The operation of a type permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    Read,
    Create,
    Update,
    Delete,
}

/// A permission query: grants iff every `Some<Type>Exists` call is true.
#[derive(Debug)]
pub struct PermissionQuery {
    /// The `query:` value of `svc.yml`, for messages.
    pub name: &'static str,
    pub calls: &'static [ExistsCall],
    pub vars: &'static [(&'static str, VarSource)],
}

/// One `Some<Type>Exists(…)` field; `model` indexes [`ServiceMeta::models`].
#[derive(Debug)]
pub struct ExistsCall {
    pub model: usize,
    pub args: &'static [(&'static str, PermValue)],
}

/// A constant argument value, or a variable (index into [`PermissionQuery::vars`]).
#[derive(Debug)]
pub enum PermValue {
    Null,
    Int(i64),
    Float(f64),
    String(&'static str),
    Boolean(bool),
    Enum(&'static str),
    List(&'static [PermValue]),
    Object(&'static [(&'static str, PermValue)]),
    Var(usize),
}

/// Where the value of a permission variable comes from (reference §5.4). Field indices are
/// indices into the checked model's [`ModelMeta::fields`] (scalars) or [`ModelMeta::relations`]
/// (relation ids).
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
    /// `$new_<f>Id`, `$input_<f>Id`; indexes [`ModelMeta::relations`].
    InputRelationId(usize),
    /// `${bName}_id`: the node on side A of the relation.
    SideA,
    /// `${aName}_id`: the node on side B of the relation.
    SideB,
}
