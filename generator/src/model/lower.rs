//! Lowering: the parsed SDL files plus `svc.yml` become a [`Model`].
//!
//! [`Ast`] is the shared, read-only view of all types files concatenated in the order `svc.yml`
//! lists them; the validation rules and [`lower`] both read it. `lower` runs only after every rule
//! passed, so it can rely on names resolving, but it still never indexes blindly: a bug in a rule
//! must surface as a wrong model in a test, not as a panic in a user's build.

use std::collections::HashMap;

use apollo_compiler::Node;
use apollo_compiler::ast::{
    Definition, Directive, DirectiveList, EnumTypeDefinition, FieldDefinition,
    ObjectTypeDefinition, Type, Value,
};

use crate::model::validate::defaults;
use crate::model::{
    EnumDef, EnumId, Field, FieldKind, Model, OnDelete, Permission, PermissionTarget, Relation,
    RelationEnd, RelationId, ScalarType, TypeDef, TypeId,
};
use crate::source::{FileId, Span};
use crate::syntax::config::Config;
use crate::syntax::sdl::{SdlFile, span_in};

/// An object type definition (`type X …`) of some types file.
#[derive(Debug, Clone, Copy)]
pub struct ObjectDecl<'a> {
    /// The types file it is written in.
    pub file: FileId,
    /// The definition as parsed.
    pub def: &'a Node<ObjectTypeDefinition>,
}

/// An enum definition of some types file.
#[derive(Debug, Clone, Copy)]
pub struct EnumDecl<'a> {
    /// The types file it is written in.
    pub file: FileId,
    /// The definition as parsed.
    pub def: &'a Node<EnumTypeDefinition>,
}

/// What a field's named type refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A built-in scalar (which wins over a user type of the same name).
    Scalar(ScalarType),
    /// Index into [`Ast::enums`].
    Enum(usize),
    /// Index into [`Ast::objects`].
    Object(usize),
    /// No scalar, enum or object type has the name.
    Unknown,
}

/// The shape of a field type: `T`, `T!`, `[T]`, `[T!]!`, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape<'a> {
    /// The innermost named type.
    pub name: &'a str,
    /// `[…]`: a list type.
    pub list: bool,
    /// `!` on the outer type (`T!` or `[…]!`).
    pub non_null: bool,
    /// `!` on the list element (`[T!]`).
    pub item_non_null: bool,
    /// A list of lists, which no model field may have.
    pub nested: bool,
}

impl<'a> Shape<'a> {
    /// The shape of a field's type as written.
    pub fn of(ty: &'a Type) -> Self {
        let (list, non_null, inner) = match ty {
            Type::Named(n) => {
                return Self::named(n.as_str(), false);
            }
            Type::NonNullNamed(n) => return Self::named(n.as_str(), true),
            Type::List(inner) => (true, false, inner),
            Type::NonNullList(inner) => (true, true, inner),
        };
        let (name, item_non_null, nested) = match inner.as_ref() {
            Type::Named(n) => (n.as_str(), false, false),
            Type::NonNullNamed(n) => (n.as_str(), true, false),
            Type::List(_) | Type::NonNullList(_) => {
                (inner.inner_named_type().as_str(), false, true)
            }
        };
        Self {
            name,
            list,
            non_null,
            item_non_null,
            nested,
        }
    }

    fn named(name: &'a str, non_null: bool) -> Self {
        Self {
            name,
            list: false,
            non_null,
            item_non_null: false,
            nested: false,
        }
    }

    /// `T`, `T!`, `[T!]`, `[T!]!` (reference §1.3).
    pub fn is_valid_scalar(&self) -> bool {
        !self.nested && (!self.list || self.item_non_null)
    }

    /// `M`, `M!`, `[M!]!` (reference §1.3).
    pub fn is_valid_relation(&self) -> bool {
        !self.nested && (!self.list || (self.item_non_null && self.non_null))
    }

    /// Only `T!` on a non-list field counts as required.
    pub fn required(&self) -> bool {
        self.non_null && !self.list
    }
}

/// All types files seen as one schema, in concatenation order.
#[derive(Debug)]
pub struct Ast<'a> {
    /// The parsed types files, in concatenation order.
    pub files: &'a [SdlFile],
    /// Every object type definition (`type X …`, with `@model` or not), in document order;
    /// a name defined twice appears twice.
    pub objects: Vec<ObjectDecl<'a>>,
    /// Every enum definition, in document order; a name defined twice appears twice.
    pub enums: Vec<EnumDecl<'a>>,
    /// First definition of each object type name.
    object_index: HashMap<&'a str, usize>,
    /// First definition of each enum name.
    enum_index: HashMap<&'a str, usize>,
}

impl<'a> Ast<'a> {
    /// The view of `files`, with the object types and enums of every file indexed.
    pub fn new(files: &'a [SdlFile]) -> Self {
        let mut ast = Self {
            files,
            objects: Vec::new(),
            enums: Vec::new(),
            object_index: HashMap::new(),
            enum_index: HashMap::new(),
        };
        for f in files {
            for def in &f.document.definitions {
                match def {
                    Definition::ObjectTypeDefinition(def) => {
                        ast.object_index
                            .entry(def.name.as_str())
                            .or_insert(ast.objects.len());
                        ast.objects.push(ObjectDecl { file: f.file, def });
                    }
                    Definition::EnumTypeDefinition(def) => {
                        ast.enum_index
                            .entry(def.name.as_str())
                            .or_insert(ast.enums.len());
                        ast.enums.push(EnumDecl { file: f.file, def });
                    }
                    _ => {}
                }
            }
        }
        ast
    }

    /// Resolves a named type. Scalars win over user types of the same name (which are errors).
    pub fn target(&self, name: &str) -> Target {
        if let Some(s) = ScalarType::from_name(name) {
            Target::Scalar(s)
        } else if let Some(&i) = self.enum_index.get(name) {
            Target::Enum(i)
        } else if let Some(&i) = self.object_index.get(name) {
            Target::Object(i)
        } else {
            Target::Unknown
        }
    }

    /// Every field of every object type, with the index of its type.
    pub fn fields(
        &self,
    ) -> impl Iterator<Item = (usize, ObjectDecl<'a>, &'a Node<FieldDefinition>)> {
        self.objects
            .iter()
            .enumerate()
            .flat_map(|(i, o)| o.def.fields.iter().map(move |f| (i, *o, f)))
    }
}

/// Span of a node in a file.
pub fn node_span<T>(file: FileId, node: &Node<T>) -> Span {
    span_in(file, node.location())
}

/// Span of a name (falls back to the file start for names the parser did not locate).
pub fn name_span(file: FileId, name: &apollo_compiler::Name) -> Span {
    span_in(file, name.location())
}

/// A directive argument read as a string whatever the literal kind, as the reference's
/// `directiveArgumentAsString` does. Lists, objects, variables and `null` have no string form.
pub fn value_as_string(value: &Value) -> Option<String> {
    Some(match value {
        Value::String(s) => s.clone(),
        Value::Enum(n) => n.to_string(),
        Value::Int(i) => i.as_str().to_owned(),
        Value::Float(f) => f.as_str().to_owned(),
        Value::Boolean(b) => b.to_string(),
        Value::Null | Value::Variable(_) | Value::List(_) | Value::Object(_) => return None,
    })
}

/// The argument `name` of a directive, if given.
pub fn argument<'d>(directive: &'d Directive, name: &str) -> Option<&'d Node<Value>> {
    directive.specified_argument_by_name(name)
}

/// `@relation(name:)` of a field, when it is a string literal.
pub fn relation_name(directives: &DirectiveList) -> Option<&str> {
    match argument(directives.get("relation")?, "name")?.as_ref() {
        Value::String(s) => Some(s.as_str()),
        _ => None,
    }
}

/// An `onDelete:` literal: the enum value `CASCADE` or `SET_NULL`, or the same text as a string.
pub fn on_delete_value(value: &Value) -> Option<OnDelete> {
    match value {
        Value::Enum(n) => OnDelete::from_name(n.as_str()),
        Value::String(s) => OnDelete::from_name(s),
        _ => None,
    }
}

/// `@relation(onDelete:)` of a field; the default when it is absent (or invalid, which
/// [`crate::model::validate::fields`] reports).
pub fn on_delete(directives: &DirectiveList) -> OnDelete {
    directives
        .get("relation")
        .and_then(|d| argument(d, "onDelete"))
        .and_then(|v| on_delete_value(v))
        .unwrap_or_default()
}

/// A string-literal argument of a named directive (for `oldName`).
fn string_argument(directives: &DirectiveList, directive: &str, arg: &str) -> Option<String> {
    match argument(directives.get(directive)?, arg)?.as_ref() {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// Builds the model. Call only after every rule of [`crate::model::validate`] passed.
pub fn lower(ast: &Ast, config: &Config) -> Model {
    let mut model = Model::default();
    for e in &ast.enums {
        model.enums.push(EnumDef {
            name: e.def.name.to_string(),
            old_name: string_argument(&e.def.directives, "rename", "oldName"),
            values: e.def.values.iter().map(|v| v.value.to_string()).collect(),
            span: name_span(e.file, &e.def.name),
        });
    }
    let mut relation_ids: HashMap<&str, RelationId> = HashMap::new();
    for (ti, o) in ast.objects.iter().enumerate() {
        let ty = TypeId(ti as u32);
        let mut fields = Vec::new();
        for (fi, f) in o.def.fields.iter().enumerate() {
            let shape = Shape::of(&f.ty);
            let kind = match ast.target(shape.name) {
                Target::Scalar(s) => FieldKind::Scalar(s),
                Target::Enum(i) => FieldKind::Enum(EnumId(i as u32)),
                Target::Object(target) => {
                    let name = relation_name(&f.directives).unwrap_or_default();
                    let end = RelationEnd { ty, field: fi };
                    let relation = match relation_ids.get(name) {
                        Some(&id) => {
                            if let Some(rel) = model.relations.get_mut(id.0 as usize) {
                                rel.b = end;
                                if rel.old_name.is_none() {
                                    rel.old_name =
                                        string_argument(&f.directives, "relation", "oldName");
                                }
                            }
                            id
                        }
                        None => {
                            let id = RelationId(model.relations.len() as u32);
                            relation_ids.insert(name, id);
                            model.relations.push(Relation {
                                name: name.to_owned(),
                                old_name: string_argument(&f.directives, "relation", "oldName"),
                                a: end,
                                b: end,
                            });
                            id
                        }
                    };
                    FieldKind::Relation {
                        relation,
                        target: TypeId(target as u32),
                    }
                }
                // Unreachable after validation; an unknown type degrades to a string column.
                Target::Unknown => FieldKind::Scalar(ScalarType::String),
            };
            let value_of = |directive: &str| {
                let arg = argument(f.directives.get(directive)?, "value")?;
                defaults::convert(ast, arg, kind, shape.list).ok()
            };
            fields.push(Field {
                name: f.name.to_string(),
                kind,
                required: shape.required(),
                list: shape.list,
                unique: f.directives.get("isUnique").is_some(),
                search: f.directives.get("search").is_some(),
                default: value_of("defaultValue"),
                migration_value: value_of("migrationValue"),
                old_name: string_argument(&f.directives, "rename", "oldName"),
                on_delete: match kind {
                    FieldKind::Relation { .. } => on_delete(&f.directives),
                    FieldKind::Scalar(_) | FieldKind::Enum(_) => OnDelete::SetNull,
                },
                span: node_span(o.file, f),
            });
        }
        model.types.push(TypeDef {
            name: o.def.name.to_string(),
            old_name: string_argument(&o.def.directives, "rename", "oldName"),
            fields,
            span: name_span(o.file, &o.def.name),
        });
    }
    model.root_tokens = config.root_tokens.iter().map(|t| t.value.clone()).collect();
    model.permissions = config
        .permissions
        .iter()
        .map(|p| Permission {
            operation: p.operation.value.clone(),
            authenticated: p.authenticated,
            query: p.query.as_ref().map(|q| q.value.clone()),
            fields: p.fields.iter().map(|f| f.value.clone()).collect(),
            span: p.span,
            // Resolved and compiled by the permissions' `compile`.
            target: PermissionTarget::All,
            compiled: None,
        })
        .collect();
    model
}
