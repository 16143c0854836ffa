//! Registering GraphQL types built from the data tables: object and input object types with no
//! Rust type of their own, the arguments of list fields, and the `<Type>Filter` and
//! `<Type>OrderBy` input types of every model.

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{
    Deprecation, MetaEnumValue, MetaField, MetaInputValue, MetaType, Registry,
};
use async_graphql::{CacheControl, ID, InputType};

use crate::model::{DateTime, FieldMeta, Json, Kind, ModelMeta};
use crate::query::filter::suffixes;
use crate::query::order::order_fields;

/// A field of an object type registered from the data tables.
pub(crate) fn meta_field(
    name: &str,
    ty: String,
    args: IndexMap<String, MetaInputValue>,
    description: Option<&str>,
) -> MetaField {
    MetaField {
        name: name.to_owned(),
        description: description.map(str::to_owned),
        args,
        ty,
        deprecation: Deprecation::NoDeprecated,
        cache_control: CacheControl::default(),
        external: false,
        requires: None,
        provides: None,
        visible: None,
        shareable: false,
        inaccessible: false,
        tags: Vec::new(),
        override_from: None,
        compute_complexity: None,
        directive_invocations: Vec::new(),
        requires_scopes: Vec::new(),
    }
}

/// An object type registered from the data tables.
pub(crate) fn object<T>(name: String, fields: IndexMap<String, MetaField>) -> MetaType {
    MetaType::Object {
        name,
        description: None,
        fields,
        cache_control: CacheControl::default(),
        extends: false,
        shareable: false,
        resolvable: true,
        keys: None,
        visible: None,
        inaccessible: false,
        interface_object: false,
        tags: Vec::new(),
        is_subscription: false,
        rust_typename: Some(std::any::type_name::<T>()),
        directive_invocations: Vec::new(),
        requires_scopes: Vec::new(),
    }
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

/// The Rust type named as the `rust_typename` of the types registered here, which have none of
/// their own (their values are read with the data tables).
struct FromTables;

/// Registers a type built from the data tables under `name`, once: `ty` runs after a
/// placeholder is in place, so types may refer to themselves.
fn register_once(
    registry: &mut Registry,
    name: String,
    placeholder: MetaType,
    ty: impl FnOnce(&mut Registry) -> MetaType,
) -> String {
    if !registry.types.contains_key(&name) {
        registry.types.insert(name.clone(), placeholder);
        let ty = ty(registry);
        registry.types.insert(name.clone(), ty);
    }
    name
}

/// Registers an object type with no Rust type of its own; `fields` runs once.
pub(crate) fn register_object(
    registry: &mut Registry,
    name: String,
    fields: impl FnOnce(&mut Registry) -> IndexMap<String, MetaField>,
) -> String {
    let placeholder = object::<FromTables>(name.clone(), IndexMap::new());
    register_once(registry, name.clone(), placeholder, |registry| {
        object::<FromTables>(name, fields(registry))
    })
}

/// Registers an input object with no Rust type of its own; `fields` runs once.
pub(crate) fn register_input(
    registry: &mut Registry,
    name: String,
    fields: impl FnOnce(&mut Registry) -> IndexMap<String, MetaInputValue>,
) -> String {
    let placeholder = input_object(name.clone(), IndexMap::new());
    register_once(registry, name.clone(), placeholder, |registry| {
        input_object(name, fields(registry))
    })
}

/// The registry entry of an input object type built from the data tables.
fn input_object(name: String, fields: IndexMap<String, MetaInputValue>) -> MetaType {
    MetaType::InputObject {
        name,
        description: None,
        input_fields: fields,
        visible: None,
        inaccessible: false,
        tags: Vec::new(),
        rust_typename: Some(std::any::type_name::<FromTables>()),
        oneof: false,
        directive_invocations: Vec::new(),
    }
}

/// The named type of a GraphQL type string.
pub(crate) fn nullable(ty: String) -> String {
    match ty.strip_suffix('!') {
        Some(inner) => inner.to_owned(),
        None => ty,
    }
}

/// Registers the GraphQL type of one value of `field` and returns its (nullable) name.
pub(crate) fn register_value_type(registry: &mut Registry, field: &FieldMeta) -> String {
    match field.register {
        Some(register) => nullable(register(registry)),
        None => register_scalar(registry, field.kind),
    }
}

/// Registers the GraphQL scalar of `kind` and returns its (nullable) name (`String` for kinds
/// that are not scalars).
pub(crate) fn register_scalar(registry: &mut Registry, kind: Kind) -> String {
    let named = match kind {
        Kind::Id => <ID as InputType>::create_type_info(registry),
        Kind::Int => <i32 as InputType>::create_type_info(registry),
        Kind::Float => <f64 as InputType>::create_type_info(registry),
        Kind::Boolean => <bool as InputType>::create_type_info(registry),
        Kind::DateTime => <DateTime as InputType>::create_type_info(registry),
        Kind::Json => <Json as InputType>::create_type_info(registry),
        _ => <String as InputType>::create_type_info(registry),
    };
    nullable(named)
}

/// Registers `<Type>Filter` of `meta` (and, through its relation filters, those of the models it
/// reaches) and returns its name.
pub(crate) fn register_filter(registry: &mut Registry, meta: &'static ModelMeta) -> String {
    register_input(registry, meta.filter_name.to_owned(), |registry| {
        let list_of_self = format!("[{}!]", meta.filter_name);
        let mut fields = IndexMap::new();
        for name in ["AND", "OR"] {
            fields.insert(
                name.to_owned(),
                input_value(name.to_owned(), list_of_self.clone()),
            );
        }
        fields.extend(filter_fields(registry, meta));
        fields
    })
}

/// Registers `<Type>SubscriptionFilterNode` of `meta`: `<Type>Filter` without `AND` and `OR`
/// (reference §4.3); its name.
pub(crate) fn register_node_filter(registry: &mut Registry, meta: &'static ModelMeta) -> String {
    let name = svc_names::subscription_filter_node(meta.name);
    register_input(registry, name, |registry| filter_fields(registry, meta))
}

/// The fields of `<Type>Filter` after `AND` and `OR`: the scalar conditions, then the relation
/// filters.
fn filter_fields(
    registry: &mut Registry,
    meta: &'static ModelMeta,
) -> IndexMap<String, MetaInputValue> {
    let mut fields = IndexMap::new();
    for field in meta.fields {
        let suffixes = suffixes(field);
        if suffixes.is_empty() {
            continue;
        }
        let ty = register_value_type(registry, field);
        for suffix in suffixes {
            let key = svc_names::filter_key(field.name, suffix);
            let ty = if svc_names::filter_takes_list(suffix) {
                format!("[{ty}!]")
            } else {
                ty.clone()
            };
            fields.insert(key.clone(), input_value(key, ty));
        }
    }
    for rel in meta.relations {
        let ty = register_filter(registry, rel.target);
        let suffixes: &[&str] = if rel.list {
            svc_names::TO_MANY_FILTERS
        } else {
            &[""]
        };
        for suffix in suffixes {
            let key = svc_names::filter_key(rel.name, suffix);
            fields.insert(key.clone(), input_value(key, ty.clone()));
        }
    }
    fields
}

/// Registers `<Type>OrderBy` of `meta` (`{field}_ASC`, `{field}_DESC` for every field it orders
/// by) and returns its name.
pub(crate) fn register_order_by(registry: &mut Registry, meta: &'static ModelMeta) -> String {
    let enumeration = |values: IndexMap<String, MetaEnumValue>| MetaType::Enum {
        name: meta.order_by_name.to_owned(),
        description: None,
        enum_values: values,
        visible: None,
        inaccessible: false,
        tags: Vec::new(),
        rust_typename: Some(std::any::type_name::<FromTables>()),
        directive_invocations: Vec::new(),
        requires_scopes: Vec::new(),
    };
    let placeholder = enumeration(IndexMap::new());
    register_once(registry, meta.order_by_name.to_owned(), placeholder, |_| {
        enumeration(
            order_fields(meta)
                .flat_map(|(_, field)| {
                    [false, true].map(|desc| svc_names::order_value(field, desc))
                })
                .map(|name| {
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
        )
    })
}

/// The eight list arguments over `meta` (`orderByList` only when `order_list`).
pub(crate) fn list_arguments(
    registry: &mut Registry,
    meta: &'static ModelMeta,
    order_list: bool,
) -> IndexMap<String, MetaInputValue> {
    let filter = register_filter(registry, meta);
    let order = register_order_by(registry, meta);
    let int = nullable(<i32 as InputType>::create_type_info(registry));
    let string = nullable(<String as InputType>::create_type_info(registry));
    let mut args = IndexMap::new();
    let mut add = |name: &str, ty: String| {
        args.insert(name.to_owned(), input_value(name.to_owned(), ty));
    };
    add("filter", filter);
    add("orderBy", order.clone());
    if order_list {
        add("orderByList", format!("[{order}!]"));
    }
    add("skip", int.clone());
    add("after", string.clone());
    add("before", string);
    add("first", int.clone());
    add("last", int);
    args
}

/// The `filter` argument of a to-one relation field or a `*Many` mutation.
pub(crate) fn filter_argument(
    registry: &mut Registry,
    meta: &'static ModelMeta,
) -> IndexMap<String, MetaInputValue> {
    let filter = register_filter(registry, meta);
    IndexMap::from([(
        "filter".to_owned(),
        input_value("filter".to_owned(), filter),
    )])
}

/// The field every root needs when the model has no types (an object type needs a field).
pub(crate) fn empty_field() -> (String, MetaField) {
    let ty = "Boolean!".to_owned();
    (
        "_empty".to_owned(),
        meta_field("_empty", ty, IndexMap::new(), None),
    )
}

/// Implements `OutputType` and `ObjectType` for an object type whose fields are registered from
/// the data tables (`$fields`, given the registry) and resolved by its `ContainerType` impl;
/// `$name` is its GraphQL name, a `Cow<'static, str>`.
macro_rules! table_object {
    (impl[$($generics:tt)*] $ty:ty, name: $name:expr, fields: |$registry:ident| $fields:expr) => {
        impl<$($generics)*> async_graphql::OutputType for $ty {
            fn type_name() -> std::borrow::Cow<'static, str> {
                $name
            }

            fn create_type_info(registry: &mut async_graphql::registry::Registry) -> String {
                registry.create_output_type::<Self, _>(
                    async_graphql::registry::MetaTypeId::Object,
                    |$registry| {
                        let name = <Self as async_graphql::OutputType>::type_name().into_owned();
                        $crate::api::registry::object::<Self>(name, $fields)
                    },
                )
            }

            async fn resolve(
                &self,
                ctx: &async_graphql::ContextSelectionSet<'_>,
                _field: &async_graphql::Positioned<async_graphql::parser::types::Field>,
            ) -> async_graphql::ServerResult<async_graphql::Value> {
                async_graphql::resolver_utils::resolve_container(ctx, self).await
            }
        }

        impl<$($generics)*> async_graphql::ObjectType for $ty {}
    };
}
pub(crate) use table_object;

/// Implements `OutputType` and `ObjectType` for an object type registered by name from the data
/// tables elsewhere (with the root that returns it), whose GraphQL name each value knows
/// (`name: |this| …`, an owned `String`), resolved by its `ContainerType` impl. `type_name()` is
/// only a placeholder: values of one Rust type stand for several GraphQL types.
macro_rules! named_object {
    (impl[$($generics:tt)*] $ty:ty, name: |$this:ident| $name:expr) => {
        impl<$($generics)*> async_graphql::OutputType for $ty {
            fn type_name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(std::any::type_name::<Self>())
            }

            fn introspection_type_name(&self) -> std::borrow::Cow<'static, str> {
                let $this = self;
                std::borrow::Cow::Owned($name)
            }

            fn create_type_info(_registry: &mut async_graphql::registry::Registry) -> String {
                <Self as async_graphql::OutputType>::type_name().into_owned()
            }

            async fn resolve(
                &self,
                ctx: &async_graphql::ContextSelectionSet<'_>,
                _field: &async_graphql::Positioned<async_graphql::parser::types::Field>,
            ) -> async_graphql::ServerResult<async_graphql::Value> {
                async_graphql::resolver_utils::resolve_container(ctx, self).await
            }
        }

        impl<$($generics)*> async_graphql::ObjectType for $ty {}
    };
}
pub(crate) use named_object;
