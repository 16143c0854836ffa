//! The one intermediate representation every emitter reads: a service's data model after lowering
//! and validation.
//!
//! Only [`validate`] constructs a [`Valid<Model>`]; emitters take
//! `&Valid<Model>` and never look at the AST, the files or the environment. Items are addressed by
//! typed ids ([`TypeId`], [`EnumId`], [`RelationId`]) that index the vectors of [`Model`], so the
//! order of everything is the document order of the user's files, which keeps output deterministic.

pub mod dump;
pub mod lower;
pub mod validate;

use std::ops::Deref;

use crate::naming;
use crate::source::Span;

/// A value that passed validation. Only the validator can build one.
#[derive(Debug, Clone, PartialEq)]
pub struct Valid<T>(T);

impl<T> Valid<T> {
    /// Marks a value as validated. Crate-private: validation is the only way in.
    pub(crate) fn assume_valid(value: T) -> Self {
        Self(value)
    }

    /// Gives the inner value back.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Valid<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Index of a model type in [`Model::types`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TypeId(pub u32);

/// Index of an enum in [`Model::enums`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EnumId(pub u32);

/// Index of a relation in [`Model::relations`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelationId(pub u32);

/// A whole service: the data model plus the parts of `svc.yml` the generator understands.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Model {
    /// Model types (`type X @model`), in document order.
    pub types: Vec<TypeDef>,
    /// Enum types, in document order.
    pub enums: Vec<EnumDef>,
    /// Relations, in the order their first field appears in the documents (that field is side A).
    pub relations: Vec<Relation>,
    /// Names listed under `rootTokens:` in `svc.yml`.
    pub root_tokens: Vec<String>,
    /// Entries under `permissions:` in `svc.yml`, resolved and compiled.
    pub permissions: Vec<Permission>,
    /// Entries under `functions:` in `svc.yml` (checked for shape; run by a later issue).
    pub functions: Vec<Function>,
}

/// One `type X @model { … }`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDef {
    /// The type's name as declared (`Post`), unique among types and enums.
    pub name: String,
    /// `@rename(oldName:)`, kept for migrations.
    pub old_name: Option<String>,
    /// Every declared field in declaration order, system fields included where declared.
    pub fields: Vec<Field>,
    /// The type's name in its types file.
    pub span: Span,
}

/// One field of a model type.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The field's name as declared (`title`), unique within its type.
    pub name: String,
    /// What the field holds: a scalar, an enum value, or related nodes.
    pub kind: FieldKind,
    /// `T!` on a non-list field. Lists (scalar or relation) are never required, as the reference says.
    pub required: bool,
    /// `[T!]` or `[T!]!` (scalars), `[M!]!` (relations).
    pub list: bool,
    /// `@isUnique`.
    pub unique: bool,
    /// `@search`: substring filters on this `String` field are served by an index (PostgreSQL).
    pub search: bool,
    /// `@defaultValue(value:)`, already checked against the field's type.
    pub default: Option<DefaultValue>,
    /// `@migrationValue(value:)`, already checked against the field's type.
    pub migration_value: Option<DefaultValue>,
    /// `@rename(oldName:)`.
    pub old_name: Option<String>,
    /// `@relation(onDelete:)`: what deleting a node of the declaring type does to the nodes this
    /// field reaches. Always [`OnDelete::SetNull`] on scalar and enum fields.
    pub on_delete: OnDelete,
    /// The whole field definition in its types file.
    pub span: Span,
}

/// What deleting a node does to the nodes it is connected to through one relation field.
///
/// An extension beyond the reference (which only ever disconnects): `@relation(onDelete:)`.
/// Validation guarantees that at most one field of a relation cascades and that the cascades
/// between types have no cycle, so a cascading delete always ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnDelete {
    /// `SET_NULL`: the edges are removed and the related nodes stay (the reference's behaviour).
    #[default]
    SetNull,
    /// `CASCADE`: the related nodes are deleted too, recursively, in the same transaction.
    Cascade,
}

impl OnDelete {
    /// Looks a value up by its SDL name (`CASCADE`, `SET_NULL`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "SET_NULL" => Some(Self::SetNull),
            "CASCADE" => Some(Self::Cascade),
            _ => None,
        }
    }

    /// The SDL name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SetNull => "SET_NULL",
            Self::Cascade => "CASCADE",
        }
    }
}

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldKind {
    /// A value of a built-in scalar type.
    Scalar(ScalarType),
    /// A value of one of the model's enums.
    Enum(EnumId),
    /// The nodes this field reaches through a relation.
    Relation {
        /// The relation the field is a side of.
        relation: RelationId,
        /// The type at the other end (the field's own type for a self relation).
        target: TypeId,
    },
}

/// The built-in scalar types of the data model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// `ID`: a node's id, carried as a string.
    Id,
    /// `String`: text.
    String,
    /// `Int`: a 32-bit signed integer.
    Int,
    /// `Float`: a 64-bit floating-point number.
    Float,
    /// `Boolean`: `true` or `false`.
    Boolean,
    /// `DateTime`: an instant, written as an ISO 8601 string.
    DateTime,
    /// `Json`: a JSON object or array.
    Json,
}

impl ScalarType {
    /// Looks a scalar up by its SDL name.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "ID" => Self::Id,
            "String" => Self::String,
            "Int" => Self::Int,
            "Float" => Self::Float,
            "Boolean" => Self::Boolean,
            "DateTime" => Self::DateTime,
            "Json" => Self::Json,
            _ => return None,
        })
    }

    /// The SDL / GraphQL name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Id => "ID",
            Self::String => "String",
            Self::Int => "Int",
            Self::Float => "Float",
            Self::Boolean => "Boolean",
            Self::DateTime => "DateTime",
            Self::Json => "Json",
        }
    }
}

/// A literal from `@defaultValue` or `@migrationValue`, converted to the field's type.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// A value of a `String` or `ID` field.
    String(String),
    /// A value of an `Int` field.
    Int(i32),
    /// A value of a `Float` field.
    Float(f64),
    /// A value of a `Boolean` field.
    Boolean(bool),
    /// Normalised to `YYYY-MM-DDTHH:MM:SS.sssZ`.
    DateTime(String),
    /// The enum value name.
    Enum(String),
    /// Canonical JSON text of an object or array.
    Json(String),
    /// The value of a list field: its items, each converted to the item type, in order.
    List(Vec<DefaultValue>),
}

/// One `enum E { … }`.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumDef {
    /// The enum's name as declared (`Status`), unique among types and enums.
    pub name: String,
    /// `@rename(oldName:)`, kept for migrations.
    pub old_name: Option<String>,
    /// The value names, in declaration order.
    pub values: Vec<String>,
    /// The enum's name in its types file.
    pub span: Span,
}

/// A relation between two fields (or one field of a self relation declared once).
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// `@relation(name:)`.
    pub name: String,
    /// `@relation(oldName:)`.
    pub old_name: Option<String>,
    /// Side A: the first field with this relation name in document order.
    pub a: RelationEnd,
    /// Side B: the second field. For a self relation declared on a single field this equals `a`.
    pub b: RelationEnd,
}

/// One end of a relation: the field that declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelationEnd {
    /// The type that declares the field.
    pub ty: TypeId,
    /// Index of the field in [`TypeDef::fields`].
    pub field: usize,
}

/// How many nodes each side of a relation connects to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cardinality {
    /// Neither field is a list: each node is connected to at most one node.
    OneToOne,
    /// One field is a list and the other is not.
    OneToMany,
    /// Both fields are lists (or the single field of a self relation is one).
    ManyToMany,
}

/// One entry of `permissions:` in `svc.yml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Permission {
    /// The `operation:` value as written: `*`, `Type.read|create|update|delete` or
    /// `Relation.connect|disconnect|*`.
    pub operation: String,
    /// `authenticated: true`: the permission applies only to requests with a valid token.
    pub authenticated: bool,
    /// The `query:` value as written (`./file.graphql` or `./file.graphql:OperationName`).
    pub query: Option<String>,
    /// `fields:`: the fields the permission is limited to; empty for the whole type.
    pub fields: Vec<String>,
    /// The whole entry in `svc.yml`.
    pub span: Span,
    /// What `operation` names, resolved against the model.
    pub target: PermissionTarget,
    /// The permission query, parsed and validated against the permission schema at build time.
    /// `Some` exactly when `query` is.
    pub compiled: Option<PermissionQuery>,
}

/// What a permission applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionTarget {
    /// `operation: "*"`: everything, for everybody.
    All,
    /// `Type.read|create|update|delete`.
    Type {
        /// The model type.
        ty: TypeId,
        /// The operation allowed on its nodes.
        op: TypeOperation,
    },
    /// `Relation.connect|disconnect|*`.
    Relation {
        /// The relation.
        relation: RelationId,
        /// Whether it allows connecting nodes (`connect` or `*`).
        connect: bool,
        /// Whether it allows disconnecting nodes (`disconnect` or `*`).
        disconnect: bool,
    },
}

/// The operation of a type permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeOperation {
    /// `read`: reading nodes and their fields.
    Read,
    /// `create`: creating nodes.
    Create,
    /// `update`: updating nodes.
    Update,
    /// `delete`: deleting nodes.
    Delete,
}

/// A compiled permission query: the `Some<Type>Exists` fields it selects and the variables they
/// use. The query grants iff every call returns `true`.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionQuery {
    /// How messages name the query: the `query:` value as written.
    pub name: String,
    /// The query as the server would run it (variable definitions injected where the file has
    /// none), for documentation and debugging.
    pub text: String,
    /// The selected `Some<Type>Exists` fields, fragments flattened, in document order.
    pub calls: Vec<ExistsCall>,
    /// The variables the query uses; `PermissionValue::Var` indexes this list.
    pub vars: Vec<PermissionVar>,
}

/// One `Some<Type>Exists(…)` field of a permission query.
#[derive(Debug, Clone, PartialEq)]
pub struct ExistsCall {
    /// The response key (alias or field name).
    pub key: String,
    /// The type whose nodes are looked for.
    pub ty: TypeId,
    /// The arguments as written (`filter`, `orderBy`, `skip`, `after`, `before`, `first`,
    /// `last`), in document order.
    pub args: Vec<(String, PermissionValue)>,
}

/// An argument value of a permission query: a constant, or a variable the server supplies.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionValue {
    /// `null`.
    Null,
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// A string literal.
    String(String),
    /// `true` or `false`.
    Boolean(bool),
    /// An enum value, by name.
    Enum(String),
    /// A list; a single value where the argument's type is a list becomes a one-item list.
    List(Vec<PermissionValue>),
    /// An input object: its fields' names and values, in the order written.
    Object(Vec<(String, PermissionValue)>),
    /// Index into [`PermissionQuery::vars`].
    Var(usize),
}

/// A variable a permission query uses, and where its value comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionVar {
    /// Without the `$`.
    pub name: String,
    /// What the server sets it to.
    pub source: VarSource,
}

/// Where the server takes a permission variable's value from (reference §5.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VarSource {
    /// `$user_id`, `$userId`: the authenticated node's id, `""` when anonymous.
    UserId,
    /// `$node_id`, `$nodeId`: the id of the node being read, updated or deleted (for a create,
    /// the constant `"not-the-id"`). Node-dependent: only allowed inside `filter` for read,
    /// update and delete.
    NodeId,
    /// `$node_<f>` (read, update, delete) and `$old_<f>` (update, delete): the stored value of the
    /// node's scalar field `f` (index into `TypeDef::fields`). Node-dependent: only allowed inside
    /// `filter`.
    NodeField(usize),
    /// `$new_<f>`, `$input_<f>` (create, update): the value supplied for the scalar field `f`
    /// (index into `TypeDef::fields`), null when not supplied.
    Input(usize),
    /// `$new_<f>Id`, `$input_<f>Id` (create, update): the id supplied for the to-one relation
    /// field `f` (index into `TypeDef::fields`) through `<f>Id`, null otherwise.
    InputRelationId(usize),
    /// `${bName}_id` of a relation permission: the id of the node on side A.
    SideA,
    /// `${aName}_id` of a relation permission: the id of the node on side B.
    SideB,
}

/// One entry of `functions:` in `svc.yml`.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// The function's name: its key under `functions:`.
    pub name: String,
    /// Its `type:` and what it applies to.
    pub kind: FunctionKind,
    /// How it runs.
    pub handler: Handler,
    /// `timeout:` in milliseconds, when given.
    pub timeout_ms: Option<u64>,
    /// The function's name in `svc.yml`.
    pub span: Span,
    /// `svc.yml:line:col` of the function's name, for messages of the generated code.
    pub at: String,
}

/// What a function is invoked for.
#[derive(Debug, Clone, PartialEq)]
pub enum FunctionKind {
    /// A field added to `Query` or `Mutation` (reference §7.4).
    Resolver(Resolver),
    /// `operationBefore` (`before`) or `operationAfter` of `op` on the model `ty`.
    Hook {
        /// `operationBefore` (else `operationAfter`).
        before: bool,
        /// The model of `operation: Type.op`.
        ty: TypeId,
        /// The operation: create, update or delete (never read).
        op: TypeOperation,
    },
    /// A server-side subscription: the path of its query file, as written in `svc.yml`, the
    /// query, and the model its one field selects.
    Subscription {
        /// The `query:` value of `svc.yml`: the query file's path as written.
        query: String,
        /// The query file's whole text.
        text: String,
        /// The model whose events invoke the function.
        ty: TypeId,
        /// The response key of the query's one field (its alias, or the model's name).
        key: String,
        /// What the field selects; `None` when the query spreads fragments.
        selection: Option<Vec<Selected>>,
    },
}

/// A field a query selects.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    /// The alias, or the field's name.
    pub key: String,
    /// The field's name.
    pub name: String,
    /// What it selects in turn; empty for a leaf.
    pub children: Vec<Selected>,
}

impl FunctionKind {
    /// The `type:` of `svc.yml`.
    pub fn type_name(&self) -> &'static str {
        match self {
            FunctionKind::Resolver(_) => "resolver",
            FunctionKind::Hook { before: true, .. } => "operationBefore",
            FunctionKind::Hook { before: false, .. } => "operationAfter",
            FunctionKind::Subscription { .. } => "subscription",
        }
    }
}

/// A resolver's schema extension: one field on `Query` or `Mutation` and its payload type.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolver {
    /// `extend type Mutation` (else `Query`).
    pub mutation: bool,
    /// The name of the field added to `Query` or `Mutation`.
    pub field: String,
    /// The field's arguments, in declaration order.
    pub args: Vec<ResolverField>,
    /// The payload type's name.
    pub payload: String,
    /// The payload type's fields, in declaration order.
    pub payload_fields: Vec<ResolverField>,
    /// `[P!]` or `[P!]!`.
    pub list: bool,
    /// `P!` or `[P!]!`.
    pub required: bool,
}

/// An argument of a resolver's field, or a field of its payload: scalars only.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolverField {
    /// The argument's or field's name.
    pub name: String,
    /// Its scalar type (of the items, for a list).
    pub scalar: ScalarType,
    /// `[S!]`.
    pub list: bool,
    /// `S!` or `[S!]!`.
    pub required: bool,
}

/// A function's handler.
#[derive(Debug, Clone, PartialEq)]
pub enum Handler {
    /// `webhook:`: the event is posted to a URL.
    Webhook {
        /// The URL (`http://` or `https://`).
        url: String,
        /// Headers sent with every request, names and values in the order written.
        headers: Vec<(String, String)>,
    },
    /// `code:`: a JavaScript module, run by Node.js.
    Code {
        /// The module's path as written, relative to `dir`.
        src: String,
        /// Environment variables set for the handler, names and values in the order written.
        environment: Vec<(String, String)>,
        /// The directory of `svc.yml`, which `src` is relative to: relative to the directory of
        /// the crate's `Cargo.toml` when it lies under it, absolute otherwise; empty when not
        /// known (a model checked from memory).
        dir: String,
    },
    /// `rust:`: a Rust function compiled into the service.
    Rust {
        /// The function's path as written (`crate::functions::hello`).
        path: String,
    },
}

/// The system fields every model has, exposed only when declared.
pub const SYSTEM_FIELDS: [&str; 3] = ["id", "createdAt", "updatedAt"];

impl Model {
    /// The model type `id`. Panics for an id of another model.
    pub fn ty(&self, id: TypeId) -> &TypeDef {
        &self.types[id.0 as usize]
    }

    /// The enum `id`. Panics for an id of another model.
    pub fn enum_def(&self, id: EnumId) -> &EnumDef {
        &self.enums[id.0 as usize]
    }

    /// The relation `id`. Panics for an id of another model.
    pub fn relation(&self, id: RelationId) -> &Relation {
        &self.relations[id.0 as usize]
    }

    /// Model types with their ids, in document order.
    pub fn type_ids(&self) -> impl Iterator<Item = (TypeId, &TypeDef)> {
        self.types
            .iter()
            .enumerate()
            .map(|(i, t)| (TypeId(i as u32), t))
    }

    /// Enums with their ids, in document order.
    pub fn enum_ids(&self) -> impl Iterator<Item = (EnumId, &EnumDef)> {
        self.enums
            .iter()
            .enumerate()
            .map(|(i, e)| (EnumId(i as u32), e))
    }

    /// The id of the model type named `name` (enums are not looked at).
    pub fn type_by_name(&self, name: &str) -> Option<TypeId> {
        self.types
            .iter()
            .position(|t| t.name == name)
            .map(|i| TypeId(i as u32))
    }

    /// The field at one end of a relation.
    pub fn end_field(&self, end: RelationEnd) -> &Field {
        &self.ty(end.ty).fields[end.field]
    }

    /// `aName` of reference §2.7: `{fa}{B}` (side A's field, side B's type), or `{f}1{M}` for a
    /// self relation declared on the single field `f` of `M`.
    pub fn relation_a_name(&self, rel: RelationId) -> String {
        self.relation_side_name(rel, true)
    }

    /// `bName` of reference §2.7: `{fb}{A}` (side B's field, side A's type), or `{f}2{M}` for a
    /// self relation declared on the single field `f` of `M`.
    pub fn relation_b_name(&self, rel: RelationId) -> String {
        self.relation_side_name(rel, false)
    }

    fn relation_side_name(&self, rel: RelationId, side_a: bool) -> String {
        let r = self.relation(rel);
        let (own, other) = if side_a { (r.a, r.b) } else { (r.b, r.a) };
        let field = &self.end_field(own).name;
        if r.is_single_field_self() {
            naming::self_relation_side_name(field, &self.ty(own.ty).name, side_a)
        } else {
            naming::relation_side_name(field, &self.ty(other.ty).name)
        }
    }

    /// The relation fields of `ty` marked `onDelete: CASCADE`, with their indexes in
    /// [`TypeDef::fields`]: deleting a node of `ty` deletes the nodes these fields reach.
    pub fn cascades(&self, ty: TypeId) -> impl Iterator<Item = (usize, &Field)> {
        self.ty(ty)
            .relation_fields()
            .filter(|(_, f)| f.on_delete == OnDelete::Cascade)
    }

    /// The relation's cardinality, from the shapes of its two fields.
    pub fn cardinality(&self, id: RelationId) -> Cardinality {
        let rel = self.relation(id);
        match (self.end_field(rel.a).list, self.end_field(rel.b).list) {
            (false, false) => Cardinality::OneToOne,
            (true, true) => Cardinality::ManyToMany,
            _ => Cardinality::OneToMany,
        }
    }
}

impl Relation {
    /// A self relation declared on a single field: both sides are that field.
    pub fn is_single_field_self(&self) -> bool {
        self.a == self.b
    }
}

impl TypeDef {
    /// The field named `name`, if the type declares one.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Whether `createdAt` / `updatedAt` / `id` is declared (and therefore exposed in the API).
    pub fn declares(&self, name: &str) -> bool {
        self.field(name).is_some()
    }

    /// Fields stored as columns of the type's own table (scalars and enums), in declaration order.
    pub fn column_fields(&self) -> impl Iterator<Item = (usize, &Field)> {
        self.fields
            .iter()
            .enumerate()
            .filter(|(_, f)| !f.is_relation())
    }

    /// Relation fields, in declaration order.
    pub fn relation_fields(&self) -> impl Iterator<Item = (usize, &Field)> {
        self.fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.is_relation())
    }
}

impl Field {
    /// Whether the field reaches nodes through a relation (else it is a scalar or enum column).
    pub fn is_relation(&self) -> bool {
        matches!(self.kind, FieldKind::Relation { .. })
    }

    /// `id`, `createdAt` or `updatedAt`.
    pub fn is_system(&self) -> bool {
        SYSTEM_FIELDS.contains(&self.name.as_str())
    }

    /// Whether mutations accept this field as an argument (system fields are read-only).
    pub fn is_writable(&self) -> bool {
        !self.is_system()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cascades_lists_the_cascading_relation_fields() {
        let model = crate::frontend::model_from_sdl(
            r#"type Post @model {
                 id: ID! @isUnique
                 title: String
                 author: User @relation(name: "UserPosts")
                 comments: [Comment!]! @relation(name: "PostComments", onDelete: CASCADE)
                 tags: [Tag!]! @relation(name: "PostTags", onDelete: SET_NULL)
               }
               type User @model { id: ID! @isUnique posts: [Post!]! @relation(name: "UserPosts", onDelete: "CASCADE") }
               type Comment @model { id: ID! @isUnique post: Post! @relation(name: "PostComments") }
               type Tag @model { id: ID! @isUnique posts: [Post!]! @relation(name: "PostTags") }"#,
        );
        let names = |ty: &str| -> Vec<(usize, String)> {
            let id = model.type_by_name(ty).unwrap_or_else(|| panic!("no {ty}"));
            model
                .cascades(id)
                .map(|(i, f)| (i, f.name.clone()))
                .collect()
        };
        assert_eq!(names("Post"), [(3, "comments".to_owned())]);
        assert_eq!(names("User"), [(1, "posts".to_owned())]);
        assert!(names("Comment").is_empty());
        let post = model.ty(TypeId(0));
        assert_eq!(post.fields[1].on_delete, OnDelete::SetNull, "scalar");
        assert_eq!(
            post.fields[4].on_delete,
            OnDelete::SetNull,
            "explicit SET_NULL"
        );
        assert_eq!(OnDelete::default(), OnDelete::SetNull);
        for value in [OnDelete::SetNull, OnDelete::Cascade] {
            assert_eq!(OnDelete::from_name(value.name()), Some(value));
        }
    }
}
