//! Static description of a service's data model, emitted by the generator as data tables.
//!
//! Everything the runtime does generically (SQL, filters, ordering, defaults, validation) reads
//! these tables; generated code only fills them in and points at them. The tables hold data
//! only: the typed entry points of each model's record type reach the layers that need them
//! through [`super::ServiceDef::visit`].

use async_graphql::registry::Registry;

use super::permission::PermissionMeta;

/// The kind of value a field stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Kind {
    /// `ID`: a node id, stored as text.
    Id,
    /// `String`: text.
    String,
    /// `Int`: a 32-bit signed integer.
    Int,
    /// `Float`: a 64-bit float.
    Float,
    /// `Boolean`.
    Boolean,
    /// `DateTime`: a UTC instant at millisecond precision.
    DateTime,
    /// `Json`: a JSON object or array.
    Json,
    /// A project enum; the values are in [`FieldMeta::enum_values`].
    Enum,
    /// A relation field (stored in the relation's join table, not as a column).
    Relation,
}

impl Kind {
    /// The GraphQL name of the scalar, for scalar kinds.
    pub fn scalar_name(self) -> &'static str {
        match self {
            Kind::Id => "ID",
            Kind::String => "String",
            Kind::Int => "Int",
            Kind::Float => "Float",
            Kind::Boolean => "Boolean",
            Kind::DateTime => "DateTime",
            Kind::Json => "Json",
            Kind::Enum | Kind::Relation => "",
        }
    }

    /// Whether values of this kind are compared case-insensitively (the reference's collation).
    pub fn is_text(self) -> bool {
        matches!(self, Kind::String)
    }
}

/// A literal default value (`@defaultValue`, or `@migrationValue`), already validated and
/// normalised by the generator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    /// A `String` value.
    String(&'static str),
    /// An `Int` value.
    Int(i32),
    /// A `Float` value.
    Float(f64),
    /// A `Boolean` value.
    Boolean(bool),
    /// Canonical `YYYY-MM-DDTHH:MM:SS.sssZ`.
    DateTime(&'static str),
    /// A value of a project enum, by name.
    Enum(&'static str),
    /// Canonical JSON text.
    Json(&'static str),
    /// The items of a list field's value.
    List(&'static [Lit]),
}

/// One field of a model, as the runtime sees it.
#[derive(Debug)]
pub struct FieldMeta {
    /// GraphQL name, also the column name.
    pub name: &'static str,
    /// The kind of value it stores (of each item, for a list).
    pub kind: Kind,
    /// `[T!]` or `[T!]!`: a scalar list, stored as a JSON array in one column.
    pub list: bool,
    /// `T!` on a non-list field (a list is never required).
    pub required: bool,
    /// `@isUnique`: no two nodes hold the same value, nulls aside (`id` is always unique).
    pub unique: bool,
    /// `@search`: a `String` field whose substring filters (`_contains`, `_starts_with`,
    /// `_ends_with`) are served by a trigram index on PostgreSQL (`migrate::search`).
    pub search: bool,
    /// Declared in the SDL (system fields `createdAt`/`updatedAt` always exist as columns but are
    /// exposed only when declared).
    pub exposed: bool,
    /// `@defaultValue`: the value a create writes when it gives none.
    pub default: Option<Lit>,
    /// Values of the enum, for [`Kind::Enum`].
    pub enum_values: &'static [&'static str],
    /// Registers the GraphQL input type of one value of this field (enums point at their
    /// generated type; scalars at the built-in ones).
    pub register: Option<fn(&mut Registry) -> String>,
}

impl FieldMeta {
    /// An optional, non-unique, exposed single value without default: the base the generated
    /// tables refine with the methods below.
    pub const fn new(name: &'static str, kind: Kind) -> FieldMeta {
        FieldMeta {
            name,
            kind,
            list: false,
            required: false,
            unique: false,
            search: false,
            exposed: true,
            default: None,
            enum_values: &[],
            register: None,
        }
    }

    /// A scalar list ([`FieldMeta::list`]).
    pub const fn list(mut self) -> Self {
        self.list = true;
        self
    }

    /// A required field ([`FieldMeta::required`]).
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// A unique field ([`FieldMeta::unique`]).
    pub const fn unique(mut self) -> Self {
        self.unique = true;
        self
    }

    /// A `@search` field ([`FieldMeta::search`]).
    pub const fn search(mut self) -> Self {
        self.search = true;
        self
    }

    /// A system field that is stored but not declared.
    pub const fn hidden(mut self) -> Self {
        self.exposed = false;
        self
    }

    /// A field with the default `value` ([`FieldMeta::default`]).
    pub const fn default(mut self, value: Lit) -> Self {
        self.default = Some(value);
        self
    }

    /// A field of a project enum: its values and the registration of its GraphQL type.
    pub const fn enumeration(
        mut self,
        values: &'static [&'static str],
        register: fn(&mut Registry) -> String,
    ) -> Self {
        self.enum_values = values;
        self.register = Some(register);
        self
    }
}

/// The name of the system type of uploaded files (reference §1.5): every service has it, the
/// File API creates its nodes, and deleting one deletes its stored file.
pub const FILE_MODEL: &str = "File";

/// The fields of `File` that only the File API writes: an update that sets one fails with 3019.
pub const FILE_READ_ONLY: [&str; 4] = ["secret", "url", "contentType", "size"];

/// One model type.
#[derive(Debug)]
pub struct ModelMeta {
    /// The type's name, as declared (`Post`).
    pub name: &'static str,
    /// The plural of `name` that root fields use (`allPosts`, `updateManyPosts`).
    pub plural: &'static str,
    /// The table holding the nodes (named exactly like the model).
    pub table: &'static str,
    /// The name of the filter input type, `<Type>Filter`.
    pub filter_name: &'static str,
    /// The name of the ordering enum, `<Type>OrderBy`.
    pub order_by_name: &'static str,
    /// Column fields: the declared scalar and enum fields in declaration order, then `createdAt`
    /// and `updatedAt` when they are not declared (the columns always exist). This is also the
    /// column order of every `SELECT`, so generated decoders read row values by these indices.
    pub fields: &'static [FieldMeta],
    /// Index of `id` in `fields`.
    pub id: usize,
    /// Index of `createdAt` in `fields`.
    pub created_at: usize,
    /// Index of `updatedAt` in `fields`.
    pub updated_at: usize,
    /// Relation fields, in declaration order.
    pub relations: &'static [RelFieldMeta],
}

/// One relation field of a model: where its edges are stored and what it points at.
#[derive(Debug)]
pub struct RelFieldMeta {
    /// GraphQL field name.
    pub name: &'static str,
    /// Index of the relation in [`ServiceMeta::relations`].
    pub relation: usize,
    /// The join table of the relation.
    pub table: &'static str,
    /// The join column holding this model's ids (`A` or `B`).
    pub own: &'static str,
    /// The join column holding the related nodes' ids.
    pub other: &'static str,
    /// A self relation declared on one field: every edge is stored in both directions.
    pub symmetric: bool,
    /// The related model.
    pub target: &'static ModelMeta,
    /// Index of the field on the other side in `target.relations` (itself for a symmetric one).
    pub back: usize,
    /// `[T!]!` rather than `T`/`T!`.
    pub list: bool,
    /// A required to-one field (`T!`).
    pub required: bool,
    /// Deleting a node of this model deletes the nodes reached through this field.
    pub cascade: bool,
    /// The nested create input `<Owner><field><Related>` exists: the related model has
    /// something to write besides the back relation (otherwise only `<field>Id(s)` exists).
    pub nested: bool,
}

impl RelFieldMeta {
    /// A to-one field on side A of `relation` (join table `table`), optional, without cascade
    /// or nested create: the base the generated tables refine with the methods below.
    pub const fn new(
        name: &'static str,
        relation: usize,
        table: &'static str,
        target: &'static ModelMeta,
        back: usize,
    ) -> RelFieldMeta {
        RelFieldMeta {
            name,
            relation,
            table,
            own: "A",
            other: "B",
            symmetric: false,
            target,
            back,
            list: false,
            required: false,
            cascade: false,
            nested: false,
        }
    }

    /// The field is on side B: its node ids are in column `B`.
    pub const fn side_b(mut self) -> Self {
        self.own = "B";
        self.other = "A";
        self
    }

    /// A self relation declared on one field ([`RelFieldMeta::symmetric`]).
    pub const fn symmetric(mut self) -> Self {
        self.symmetric = true;
        self
    }

    /// A to-many field ([`RelFieldMeta::list`]).
    pub const fn list(mut self) -> Self {
        self.list = true;
        self
    }

    /// A required to-one field ([`RelFieldMeta::required`]).
    pub const fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// Deletes cascade through the field ([`RelFieldMeta::cascade`]).
    pub const fn cascade(mut self) -> Self {
        self.cascade = true;
        self
    }

    /// The field has a nested create input ([`RelFieldMeta::nested`]).
    pub const fn nested(mut self) -> Self {
        self.nested = true;
        self
    }

    /// The field on the other side of the relation.
    pub fn back_field(&self) -> &'static RelFieldMeta {
        &self.target.relations[self.back]
    }
}

/// A relation's join table.
#[derive(Debug)]
pub struct RelationMeta {
    /// `@relation(name:)` (`UserPosts`).
    pub name: &'static str,
    /// The join table, `_<name>`: one row per edge, the ids in columns `A` and `B`.
    pub table: &'static str,
    /// Model on side A (column `A` holds its ids).
    pub a: &'static str,
    /// Model on side B (column `B` holds its ids).
    pub b: &'static str,
    /// Whether side A's field is a list (if not, a B node has at most one A partner).
    pub a_list: bool,
    /// Whether side B's field is a list (if not, an A node has at most one B partner).
    pub b_list: bool,
    /// The relation mutations' names for the nodes: the payload field holding the A node is
    /// `b_name` (argument `<b_name>Id`), the one holding the B node `a_name`. `a_name` is
    /// `{fa}{B}`: side A's field, then side B's type (`postsPost`), or `{f}1{M}` for a self
    /// relation declared on the single field `f` of `M`.
    pub a_name: &'static str,
    /// `{fb}{A}`: side B's field, then side A's type (`authorUser`), or `{f}2{M}` for a self
    /// relation declared on the single field `f` of `M`.
    pub b_name: &'static str,
}

/// The whole data model.
#[derive(Debug)]
pub struct ServiceMeta {
    /// Default alias of the service in URLs (the crate name).
    pub name: &'static str,
    /// Every model type, `File` included; the other tables name a model by its index here.
    pub models: &'static [&'static ModelMeta],
    /// Every relation, in the order its first field appears in the type definitions (that
    /// field is side A); the other tables name a relation by its index here.
    pub relations: &'static [RelationMeta],
    /// Names listed under `rootTokens:` in `svc.yml`.
    pub root_tokens: &'static [&'static str],
    /// The `permissions:` of `svc.yml`, compiled by the generator.
    pub permissions: &'static [PermissionMeta],
    /// The temporary migration directives of the model (`@rename`, `@relation(oldName:)`,
    /// `@migrationValue`), read by migrations.
    pub migration_hints: &'static [MigrationHint],
    /// The project enums.
    pub enums: &'static [EnumMeta],
    /// The `functions:` of `svc.yml`.
    pub functions: &'static [super::FunctionMeta],
}

/// A project enum: its GraphQL name and its values.
#[derive(Debug)]
pub struct EnumMeta {
    /// The enum's name, as declared.
    pub name: &'static str,
    /// Its values, in declaration order.
    pub values: &'static [&'static str],
}

/// One temporary migration directive.
#[derive(Debug)]
pub enum MigrationHint {
    /// `type New @rename(oldName: "Old")`.
    RenamedModel {
        /// The model's new name (`New`).
        model: &'static str,
        /// Its old name (`Old`), which the stored table may still have.
        from: &'static str,
    },
    /// `field: T @rename(oldName: "old")` on `model`.
    RenamedField {
        /// The model that declares the field (by its new name).
        model: &'static str,
        /// The field's new name.
        field: &'static str,
        /// Its old name, which the stored column may still have.
        from: &'static str,
    },
    /// `@relation(name: "New", oldName: "Old")`.
    RenamedRelation {
        /// The relation's new name (`New`).
        relation: &'static str,
        /// Its old name (`Old`), which the stored join table may still have.
        from: &'static str,
    },
    /// `field: T @migrationValue(value: …)` on `model`.
    Value {
        /// The model that declares the field.
        model: &'static str,
        /// The field's name.
        field: &'static str,
        /// The value a migration writes into existing nodes where a change needs one (a
        /// required field added, an optional field made required, a type changed).
        value: Lit,
    },
}

impl ModelMeta {
    /// Whether this is the system type of uploaded files ([`FILE_MODEL`]).
    pub fn is_file(&self) -> bool {
        self.name == FILE_MODEL
    }

    /// Looks a column field up by name.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// Looks a relation field up by name.
    pub fn relation_index(&self, name: &str) -> Option<usize> {
        self.relations.iter().position(|f| f.name == name)
    }

    /// Non-list unique fields usable as single-node lookup arguments, in declaration order.
    pub fn unique_fields(&self) -> impl Iterator<Item = (usize, &FieldMeta)> {
        self.fields
            .iter()
            .enumerate()
            .filter(|(_, f)| f.unique && !f.list && f.exposed)
    }
}
