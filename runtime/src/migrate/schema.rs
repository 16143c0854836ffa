//! The stored form of a data model: what the database was last migrated to, kept as JSON in the
//! meta table (`schema`) and compared with the compiled model at every start and deploy.
//!
//! Only what the tables depend on is kept: model and field names, column kinds, list, required,
//! unique, search, defaults, enum values, relation fields and relations. Permissions, names of
//! generated types and the like live in the binary only.

use serde::{Deserialize, Serialize};

use crate::model::{Kind, MigrationHint, ServiceMeta, Val};

/// The version of this format; a stored schema of another version is read as unknown.
pub const FORMAT: u32 = 1;

/// A whole data model as stored: its types and its relations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// The format version, [`FORMAT`] when written by this build.
    pub format: u32,
    /// The model types, the built-in `File` among them.
    pub models: Vec<Model>,
    /// The relations, each with its join table.
    pub relations: Vec<Relation>,
}

/// One model type as stored: its table's columns and its relation fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// The type's name, which is also its table's.
    pub name: String,
    /// Column fields in column order (`id`, `createdAt` and `updatedAt` included).
    pub fields: Vec<Field>,
    /// The relation fields, in declaration order (they have no column: their edges live in
    /// the relations' join tables).
    pub relation_fields: Vec<RelField>,
}

/// One scalar or enum field as stored: its column and what the column enforces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    /// The field's name, which is also its column's.
    pub name: String,
    /// The field's scalar kind (`Enum` for enum fields), which decides the column type.
    pub kind: Kind,
    /// A list field (`[T!]`), stored as JSON in one column.
    pub list: bool,
    /// Required (`T!`): every node has a value.
    pub required: bool,
    /// `@isUnique`: backed by a unique index.
    pub unique: bool,
    /// `@search`: substring filters are served by an index (`migrate/search.rs`). Absent from
    /// stored schemas that predate it, and left out when false, so they still compare equal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub search: bool,
    /// `id`, `createdAt`, `updatedAt`: never added, removed or changed by a migration.
    pub system: bool,
    /// The default as the JSON of the API value, written into existing nodes when the field is
    /// added as required.
    pub default: Option<serde_json::Value>,
    /// The values of an enum field, in declaration order; empty for other kinds.
    pub enum_values: Vec<String>,
}

/// One relation field of a model as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelField {
    /// The field's name.
    pub name: String,
    /// The name of its relation (a [`Relation::name`]).
    pub relation: String,
    /// A to-many field (`[T!]!`).
    pub list: bool,
    /// A required to-one field (`T!`): every node must have a related node.
    pub required: bool,
}

/// One relation as stored: the two types it links and its join table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Relation {
    /// The relation's name (`@relation(name:)`).
    pub name: String,
    /// The join table (`_<Name>`).
    pub table: String,
    /// Model on side A (column `A`).
    pub a: String,
    /// Model on side B (column `B`).
    pub b: String,
    /// Side A's field is a list: a B node may have many A partners.
    pub a_list: bool,
    /// Side B's field is a list: an A node may have many B partners.
    pub b_list: bool,
}

impl Schema {
    /// The schema of a compiled service.
    pub fn of(service: &ServiceMeta) -> Schema {
        let models = service
            .models
            .iter()
            .map(|m| Model {
                name: m.table.to_owned(),
                fields: m
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| Field {
                        name: f.name.to_owned(),
                        kind: f.kind,
                        list: f.list,
                        required: f.required,
                        unique: f.unique,
                        search: f.search,
                        system: i == m.id || i == m.created_at || i == m.updated_at,
                        default: f.default.as_ref().map(|lit| Val::from_lit(lit).to_json()),
                        enum_values: f.enum_values.iter().map(|v| (*v).to_owned()).collect(),
                    })
                    .collect(),
                relation_fields: m
                    .relations
                    .iter()
                    .map(|r| RelField {
                        name: r.name.to_owned(),
                        relation: service.relations[r.relation].name.to_owned(),
                        list: r.list,
                        required: r.required,
                    })
                    .collect(),
            })
            .collect();
        let relations = service
            .relations
            .iter()
            .map(|r| Relation {
                name: r.name.to_owned(),
                table: r.table.to_owned(),
                a: r.a.to_owned(),
                b: r.b.to_owned(),
                a_list: r.a_list,
                b_list: r.b_list,
            })
            .collect();
        Schema {
            format: FORMAT,
            models,
            relations,
        }
    }

    /// The model type named `name`.
    pub fn model(&self, name: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.name == name)
    }

    /// The relation named `name`.
    pub fn relation(&self, name: &str) -> Option<&Relation> {
        self.relations.iter().find(|r| r.name == name)
    }
}

impl Model {
    /// The scalar or enum field named `name` (relation fields are not among them).
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The names of the `@search` fields, in column order.
    pub fn searched(&self) -> Vec<&str> {
        self.fields
            .iter()
            .filter(|f| f.search)
            .map(|f| f.name.as_str())
            .collect()
    }

    /// The name of the id column: the system field of kind `ID` (`id` when there is none).
    pub fn id(&self) -> &str {
        self.fields
            .iter()
            .find(|f| f.kind == Kind::Id && f.system)
            .map_or("id", |f| f.name.as_str())
    }
}

impl Field {
    /// Whether values of `self` and `other` are stored alike (same column type and meaning).
    pub fn same_storage(&self, other: &Field) -> bool {
        self.kind == other.kind && self.list == other.list
    }

    /// Whether a change of type from `self` to `to` keeps the values, as their text: a single
    /// scalar or enum value becoming a single `String`. A list does not (it needs a migration
    /// value, like any other change of type).
    pub fn converts_to_text(&self, to: &Field) -> bool {
        to.kind == Kind::String && !to.list && !self.list && self.kind != Kind::Relation
    }
}

/// The temporary migration directives of the compiled model: they say how to get from a
/// stored schema to this one where names alone cannot (renames), and what to write into
/// existing nodes (`@migrationValue`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hints {
    /// `(new name, old name)` of renamed types.
    pub models: Vec<(String, String)>,
    /// `(type, new name, old name)` of renamed fields.
    pub fields: Vec<(String, String, String)>,
    /// `(new name, old name)` of renamed relations.
    pub relations: Vec<(String, String)>,
    /// `(type, field, value as API JSON)` of migration values.
    pub values: Vec<(String, String, serde_json::Value)>,
}

impl Hints {
    /// The directives (`@rename`, `@relation(oldName:)`, `@migrationValue`) of a compiled
    /// service.
    pub fn of(service: &ServiceMeta) -> Hints {
        let mut hints = Hints::default();
        for hint in service.migration_hints {
            match hint {
                MigrationHint::RenamedModel { model, from } => {
                    hints.models.push(((*model).to_owned(), (*from).to_owned()));
                }
                MigrationHint::RenamedField { model, field, from } => {
                    hints.fields.push((
                        (*model).to_owned(),
                        (*field).to_owned(),
                        (*from).to_owned(),
                    ));
                }
                MigrationHint::RenamedRelation { relation, from } => {
                    hints
                        .relations
                        .push(((*relation).to_owned(), (*from).to_owned()));
                }
                MigrationHint::Value {
                    model,
                    field,
                    value,
                } => hints.values.push((
                    (*model).to_owned(),
                    (*field).to_owned(),
                    Val::from_lit(value).to_json(),
                )),
            }
        }
        hints
    }

    /// The migration value of `model.field`.
    pub fn value(&self, model: &str, field: &str) -> Option<&serde_json::Value> {
        self.values
            .iter()
            .find(|(m, f, _)| m == model && f == field)
            .map(|(_, _, v)| v)
    }
}
