//! The parts of the GraphQL schema that follow from the data tables alone: the arguments of root
//! and relation fields, the write input objects, and the resolution of every field that returns
//! nodes. Generated code holds only what needs a Rust type per model (the typed record, its row
//! decoder, the enums) and the tables; everything else is registered and resolved here.
//!
//! A model's entry points are monomorphised once for its record type ([`Ops::of`]) and reached
//! through `ModelMeta::ops`, so code that only has a [`ModelMeta`] (a root field, a relation
//! field, a relation payload) can read and output typed nodes of that model.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::storage::Row;
use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{Deprecation, MetaField, MetaInputValue, MetaType, Registry};
use async_graphql::{
    CacheControl, Context, ID, InputType, InputValueResult, MaybeUndefined, Name, OutputType, Pos,
    ServerError, ServerResult, Value,
};

use crate::auth::current_user;
use crate::error::ApiError;
use crate::filter::{Cond, Filter, OrderBy, input_object, input_value, register_value_type};
use crate::meta::{FieldMeta, Kind, ModelMeta};
use crate::nested::{RelArg, Write, nested_name, parse_write, writable};
use crate::read::{ListArgs, Page, QueryMeta, all, by_id, count, one, some_exists};
use crate::record::{IntoVal, Record, opt};
use crate::related::{to_many, to_many_count, to_one, to_one_required};
use crate::state::State;
use crate::value::{DateTime, Json, Val};
use crate::write::{create, delete, delete_many, update, update_many, update_or_create};

/// The future of a field resolution: the field's value, `None` when the field is unknown.
pub type Resolved<'a> = Pin<Box<dyn Future<Output = ServerResult<Option<Value>>> + Send + 'a>>;

/// A model's entry points, monomorphised for its record type.
pub struct Ops {
    /// Registers the model's object type.
    pub register: fn(&mut Registry) -> String,
    /// Registers `<Type>Filter`.
    pub register_filter: fn(&mut Registry) -> String,
    /// Registers `<Type>OrderBy`.
    pub register_order_by: fn(&mut Registry) -> String,
    /// Resolves a field that returns nodes of this model (or facts about them).
    pub resolve: for<'a> fn(&'a Context<'a>, Call<'a>) -> Resolved<'a>,
    /// The checked page of a list field's arguments, for the direct executor; `None` when an
    /// argument does not parse or breaks a rule (the executor then reports it).
    pub(crate) page: fn(&ConstArgs) -> Option<Page>,
    /// The checked filter of a count's list arguments, for the direct executor; `None` as for
    /// `page`.
    pub(crate) count_filter: fn(&ConstArgs) -> Option<Option<Cond>>,
    /// The `filter` argument of a to-one relation field, not yet checked.
    pub(crate) filter: fn(&ConstArgs) -> Option<Option<Cond>>,
}

impl fmt::Debug for Ops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ops").finish_non_exhaustive()
    }
}

impl Ops {
    /// The entry points of the model whose record type is `R`.
    pub const fn of<R: Record + OutputType>() -> Ops {
        Ops {
            register: <R as OutputType>::create_type_info,
            register_filter: <Filter<R> as InputType>::create_type_info,
            register_order_by: <OrderBy<R> as InputType>::create_type_info,
            resolve: resolve::<R>,
            page: const_page::<R>,
            count_filter: const_count_filter::<R>,
            filter: const_filter::<R>,
        }
    }
}

/// A field's arguments with their variables resolved (the direct executor's view).
pub(crate) type ConstArgs = [(Name, Value)];

/// A typed argument of `args`; `None` when it does not parse.
fn const_arg<T: InputType>(args: &ConstArgs, name: &str) -> Option<T> {
    let value = args
        .iter()
        .find(|(n, _)| n.as_str() == name)
        .map(|(_, v)| v.clone());
    T::parse(value).ok()
}

/// The list arguments of `args` ([`list_args`]).
fn const_list<R: Record>(args: &ConstArgs) -> Option<ListArgs<R>> {
    Some(ListArgs {
        filter: const_arg(args, "filter")?,
        order_by: const_arg(args, "orderBy")?,
        order_by_list: const_arg(args, "orderByList")?,
        skip: const_arg(args, "skip")?,
        after: const_arg(args, "after")?,
        before: const_arg(args, "before")?,
        first: const_arg(args, "first")?,
        last: const_arg(args, "last")?,
    })
}

/// The list arguments of `args` as a checked page.
fn const_page<R: Record>(args: &ConstArgs) -> Option<Page> {
    const_list::<R>(args)?.page().ok()
}

/// The checked filter of a count's list arguments.
fn const_count_filter<R: Record>(args: &ConstArgs) -> Option<Option<Cond>> {
    const_list::<R>(args)?.count_filter().ok()
}

/// The `filter` argument of `args` (unchecked: it becomes a checked [`Page`]).
fn const_filter<R: Record>(args: &ConstArgs) -> Option<Option<Cond>> {
    Some(const_arg::<Option<Filter<R>>>(args, "filter")?.map(|f| f.cond))
}

/// A field that returns nodes of one model, with the context its arguments are read from.
#[derive(Debug, Clone, Copy)]
pub enum Call<'a> {
    /// `all<Plural>(…)`.
    All,
    /// `_all<Plural>Meta(…)`.
    Count,
    /// `<Type>(<unique field>: …)`.
    One,
    /// `Some<Type>Exists(…)` of the permission schema.
    SomeExists,
    /// `user`: the node of the request's node token.
    CurrentUser,
    Create,
    Update,
    UpdateOrCreate,
    Delete,
    /// `deleteMany<Plural>(filter)`.
    DeleteMany,
    /// `updateMany<Plural>(filter, data)`.
    UpdateMany,
    /// `node(id)`, once the model of the id is known.
    Node(&'a str),
    /// A node read earlier in the request (the nodes of a relation mutation's payload).
    Row(Option<&'a Row>),
    /// The relation field `field` of the node `id` of `parent`; `count` for its
    /// `_<field>Meta`.
    Related {
        parent: &'static ModelMeta,
        id: &'a str,
        field: usize,
        count: bool,
    },
}

fn resolve<'a, R: Record + OutputType>(ctx: &'a Context<'a>, call: Call<'a>) -> Resolved<'a> {
    Box::pin(async move {
        let meta = R::META;
        let gql = |e: async_graphql::Error| e.into_server_error(ctx.item.pos);
        match call {
            Call::All => {
                let value = async { all::<R>(ctx, list_args(ctx, true)?).await.map_err(gql) };
                output(ctx, value.await).await
            }
            Call::Count => {
                let value = async { count::<R>(ctx, list_args(ctx, true)?).await.map_err(gql) };
                output(ctx, value.await).await
            }
            Call::One => {
                let value = async {
                    let mut candidates = Vec::new();
                    for (i, f) in meta.unique_fields() {
                        candidates.push((i, value_arg(ctx, f.name, f)?));
                    }
                    one::<R>(ctx, candidates).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::SomeExists => {
                let value = async {
                    let args = list_args::<R>(ctx, false)?;
                    some_exists::<R>(ctx, args).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::CurrentUser => output(ctx, current_user::<R>(ctx).await.map_err(gql)).await,
            Call::Create => {
                let value = async {
                    let write = write_args(ctx, meta)?;
                    create::<R>(ctx, write).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::Update => {
                let value = async {
                    let id = arg::<ID>(ctx, "id")?;
                    let write = write_args(ctx, meta)?;
                    update::<R>(ctx, id, write).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::UpdateOrCreate => {
                let value = async {
                    let (id, update) = update_input(ctx, meta)?;
                    let create = match raw_arg(ctx, "create")? {
                        Some((pos, value)) => {
                            parse_input(meta, &value, None, pos, || format!("Create{}", meta.name))?
                        }
                        None => Write::default(),
                    };
                    update_or_create::<R>(ctx, id, update, create)
                        .await
                        .map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::Delete => {
                let value = async {
                    let id = arg::<ID>(ctx, "id")?;
                    delete::<R>(ctx, id).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::DeleteMany => {
                let value = async {
                    let filter = arg::<Option<Filter<R>>>(ctx, "filter")?;
                    delete_many::<R>(ctx, filter).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::UpdateMany => {
                let value = async {
                    let filter = arg::<Option<Filter<R>>>(ctx, "filter")?;
                    let data = match raw_arg(ctx, "data")? {
                        Some((pos, value)) => {
                            parse_input(meta, &value, None, pos, || update_many_data(meta))?.values
                        }
                        None => Vec::new(),
                    };
                    update_many::<R>(ctx, filter, data).await.map_err(gql)
                };
                output(ctx, value.await).await
            }
            Call::Node(id) => output(ctx, by_id::<R>(ctx, id).await.map_err(gql)).await,
            Call::Row(row) => {
                let backend = State::of(ctx).db.backend();
                let node = row
                    .map(|row| R::decode(row, backend))
                    .transpose()
                    .map_err(|e| gql(ApiError::from(e).into()));
                output(ctx, node).await
            }
            Call::Related {
                parent,
                id,
                field,
                count,
            } => {
                let rel = &parent.relations[field];
                if count {
                    let value = async {
                        let args = list_args::<R>(ctx, true)?;
                        to_many_count(ctx, parent, id, field, args)
                            .await
                            .map_err(gql)
                    };
                    output(ctx, value.await).await
                } else if rel.list {
                    let value = async {
                        let args = list_args::<R>(ctx, true)?;
                        to_many(ctx, parent, id, field, args).await.map_err(gql)
                    };
                    output(ctx, value.await).await
                } else if rel.required {
                    let value = async {
                        let filter = arg::<Option<Filter<R>>>(ctx, "filter")?;
                        to_one_required(ctx, parent, id, field, filter)
                            .await
                            .map_err(gql)
                    };
                    output(ctx, value.await).await
                } else {
                    let value = async {
                        let filter = arg::<Option<Filter<R>>>(ctx, "filter")?;
                        to_one(ctx, parent, id, field, filter).await.map_err(gql)
                    };
                    output(ctx, value.await).await
                }
            }
        }
    })
}

/// Outputs a field's value against the field's selection set, as derived resolvers do.
pub(crate) async fn output<T: OutputType>(
    ctx: &Context<'_>,
    value: ServerResult<T>,
) -> ServerResult<Option<Value>> {
    let value = value.map_err(|e| ctx.set_error_path(e))?;
    let ctx_obj = ctx.with_selection_set(&ctx.item.node.selection_set);
    OutputType::resolve(&value, &ctx_obj, ctx.item)
        .await
        .map(Some)
}

/// A typed argument of the current field.
pub(crate) fn arg<T: InputType>(ctx: &Context<'_>, name: &str) -> ServerResult<T> {
    ctx.param_value::<T>(name, None).map(|(_, v)| v)
}

/// The eight list arguments (`orderByList` only when `order_list`).
fn list_args<R: Record>(ctx: &Context<'_>, order_list: bool) -> ServerResult<ListArgs<R>> {
    Ok(ListArgs {
        filter: arg(ctx, "filter")?,
        order_by: arg(ctx, "orderBy")?,
        order_by_list: if order_list {
            arg(ctx, "orderByList")?
        } else {
            None
        },
        skip: arg(ctx, "skip")?,
        after: arg(ctx, "after")?,
        before: arg(ctx, "before")?,
        first: arg(ctx, "first")?,
        last: arg(ctx, "last")?,
    })
}

/// An argument as sent, variables resolved; validation has checked it against its registered
/// type, and the data tables say how to read it.
struct Raw(Value);

impl InputType for Raw {
    type RawValueType = Self;

    fn type_name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Raw")
    }

    fn create_type_info(_: &mut Registry) -> String {
        // Never registered: the argument's real type is registered from the data tables.
        Self::type_name().into_owned()
    }

    fn parse(value: Option<Value>) -> InputValueResult<Self> {
        Ok(Raw(value.unwrap_or(Value::Null)))
    }

    fn to_value(&self) -> Value {
        self.0.clone()
    }

    fn as_raw_value(&self) -> Option<&Self::RawValueType> {
        Some(self)
    }
}

/// The value of an argument and its position; `None` when absent or null.
fn raw_arg(ctx: &Context<'_>, name: &str) -> ServerResult<Option<(Pos, Value)>> {
    let (pos, value) = ctx.param_value::<MaybeUndefined<Raw>>(name, None)?;
    Ok(value.take().map(|raw| (pos, raw.0)))
}

/// One value of a scalar or enum field as an argument: `None` when absent, `Some(Val::Null)`
/// when explicitly null. Read with the field's Rust type so errors are those of the type (e.g.
/// an Int beyond 32 bits).
fn value_arg(ctx: &Context<'_>, name: &str, field: &FieldMeta) -> ServerResult<Option<Val>> {
    let (pos, value) = ctx.param_value::<MaybeUndefined<Raw>>(name, None)?;
    let value = match value {
        MaybeUndefined::Undefined => None,
        MaybeUndefined::Null => Some(Value::Null),
        MaybeUndefined::Value(raw) => Some(raw.0),
    };
    value_of(value, field, pos)
}

/// [`value_arg`] over an argument's value (`None` when absent), errors placed at `pos`.
pub(crate) fn value_of(
    value: Option<Value>,
    field: &FieldMeta,
    pos: Pos,
) -> ServerResult<Option<Val>> {
    fn typed<T: InputType + IntoVal>(value: Option<Value>, pos: Pos) -> ServerResult<Option<Val>> {
        MaybeUndefined::<T>::parse(value)
            .map(opt)
            .map_err(|e| e.into_server_error(pos))
    }
    match (field.kind, field.list) {
        (Kind::Id, false) => typed::<ID>(value, pos),
        (Kind::Id, true) => typed::<Vec<ID>>(value, pos),
        (Kind::Int, false) => typed::<i32>(value, pos),
        (Kind::Int, true) => typed::<Vec<i32>>(value, pos),
        (Kind::Float, false) => typed::<f64>(value, pos),
        (Kind::Float, true) => typed::<Vec<f64>>(value, pos),
        (Kind::Boolean, false) => typed::<bool>(value, pos),
        (Kind::Boolean, true) => typed::<Vec<bool>>(value, pos),
        (Kind::DateTime, false) => typed::<DateTime>(value, pos),
        (Kind::DateTime, true) => typed::<Vec<DateTime>>(value, pos),
        (Kind::Json, false) => typed::<Json>(value, pos),
        (Kind::Json, true) => typed::<Vec<Json>>(value, pos),
        (Kind::Enum, _) => match value {
            // Enum values are checked by validation against the registered enum type.
            None => Ok(None),
            Some(value) => Val::from_graphql(&value, Kind::Enum)
                .map(Some)
                .map_err(|e| ServerError::new(e, Some(pos))),
        },
        (_, false) => typed::<String>(value, pos),
        (_, true) => typed::<Vec<String>>(value, pos),
    }
}

/// The arguments of `create<T>` or `update<T>`: scalars, then `<f>Id(s)` and nested
/// creates per relation field.
fn write_args(ctx: &Context<'_>, meta: &'static ModelMeta) -> ServerResult<Write> {
    let mut write = Write::default();
    for (i, f) in meta.fields.iter().enumerate() {
        if writable(meta, i) {
            write.values.push((i, value_arg(ctx, f.name, f)?));
        }
    }
    for (i, f) in meta.relations.iter().enumerate() {
        let ids = if f.list {
            arg::<MaybeUndefined<Vec<ID>>>(ctx, &format!("{}Ids", f.name))?
                .take()
                .map(|ids| ids.into_iter().map(|id| id.0).collect())
        } else {
            arg::<MaybeUndefined<ID>>(ctx, &format!("{}Id", f.name))?
                .take()
                .map(|id| vec![id.0])
        };
        let nested = match raw_arg(ctx, f.name)? {
            Some((pos, value)) if f.nested => {
                let name = || nested_name(meta, f);
                let items = match (&value, f.list) {
                    (Value::List(items), true) => items.iter().collect(),
                    (_, _) => vec![&value],
                };
                let mut writes = Vec::with_capacity(items.len());
                for item in items {
                    writes.push(parse_write(f.target, item, Some(f.back)).map_err(|e| {
                        let mut message = format!(r#"Failed to parse "{}": {e}"#, name());
                        if f.list {
                            message
                                .push_str(&format!(r#" (occurred while parsing "[{}!]")"#, name()));
                        }
                        ServerError::new(message, Some(pos))
                    })?);
                }
                Some(writes)
            }
            _ => None,
        };
        write.rels.push(RelArg {
            field: i,
            ids,
            nested,
        });
    }
    Ok(write)
}

/// Reads an input object of `meta` (`Create<T>`, `UpdateMany<Plural>Data`) with the data tables.
fn parse_input(
    meta: &'static ModelMeta,
    value: &Value,
    skip: Option<usize>,
    pos: Pos,
    type_name: impl Fn() -> String,
) -> ServerResult<Write> {
    parse_write(meta, value, skip).map_err(|e| {
        ServerError::new(
            format!(r#"Failed to parse "{}": {e}"#, type_name()),
            Some(pos),
        )
    })
}

/// `update: Update<T>!` of `updateOrCreate<T>`: the node's id and the update.
fn update_input(ctx: &Context<'_>, meta: &'static ModelMeta) -> ServerResult<(ID, Write)> {
    let name = || format!("Update{}", meta.name);
    let Some((pos, Value::Object(mut fields))) = raw_arg(ctx, "update")? else {
        return Err(ServerError::new(
            format!(r#"Failed to parse "{}": expected an input object"#, name()),
            None,
        ));
    };
    let id = match fields.shift_remove("id") {
        Some(Value::String(id)) => ID(id),
        _ => {
            return Err(ServerError::new(
                format!(r#"Failed to parse "{}": `id` is required"#, name()),
                Some(pos),
            ));
        }
    };
    let write = parse_input(meta, &Value::Object(fields), None, pos, name)?;
    Ok((id, write))
}

/// The name of `UpdateMany<Plural>Data`.
fn update_many_data(meta: &ModelMeta) -> String {
    format!("UpdateMany{}Data", meta.plural)
}

// ---------------------------------------------------------------------------------------------
// Registration.

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

/// Registers an input object that has no Rust type of its own (its values are read with the
/// data tables); `fields` runs once, after a placeholder is in place so types may recurse.
pub(crate) fn register_input(
    registry: &mut Registry,
    name: String,
    fields: impl FnOnce(&mut Registry) -> IndexMap<String, MetaInputValue>,
) -> String {
    if !registry.types.contains_key(&name) {
        registry.types.insert(
            name.clone(),
            input_object::<Raw>(name.clone(), IndexMap::new()),
        );
        let fields = fields(registry);
        registry
            .types
            .insert(name.clone(), input_object::<Raw>(name.clone(), fields));
    }
    name
}

/// The named type of a GraphQL type string.
fn nullable(ty: String) -> String {
    match ty.strip_suffix('!') {
        Some(inner) => inner.to_owned(),
        None => ty,
    }
}

/// Registers one model's object type and returns its (nullable) name.
pub(crate) fn node_type(registry: &mut Registry, meta: &ModelMeta) -> String {
    nullable((meta.ops.register)(registry))
}

/// The eight list arguments over `meta` (`orderByList` only when `order_list`).
pub(crate) fn list_arguments(
    registry: &mut Registry,
    meta: &ModelMeta,
    order_list: bool,
) -> IndexMap<String, MetaInputValue> {
    let filter = nullable((meta.ops.register_filter)(registry));
    let order = nullable((meta.ops.register_order_by)(registry));
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
    meta: &ModelMeta,
) -> IndexMap<String, MetaInputValue> {
    let filter = nullable((meta.ops.register_filter)(registry));
    IndexMap::from([(
        "filter".to_owned(),
        input_value("filter".to_owned(), filter),
    )])
}

/// Which write a set of arguments is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteArgs {
    /// `create<T>`, `Create<T>`, and nested creates (without the relation field `skip`).
    Create { skip: Option<usize> },
    /// `update<T>`, `Update<T>`: every argument optional.
    Update,
    /// `UpdateMany<Plural>Data`: scalars only, every one optional.
    Data,
}

/// The arguments of a write of `meta`, in the reference's order: scalars, to-one relation
/// arguments, to-many relation arguments.
pub(crate) fn write_arguments(
    registry: &mut Registry,
    meta: &'static ModelMeta,
    which: WriteArgs,
) -> IndexMap<String, MetaInputValue> {
    let mut out = IndexMap::new();
    for (i, f) in meta.fields.iter().enumerate() {
        if !writable(meta, i) {
            continue;
        }
        let ty = register_value_type(registry, f);
        let ty = if f.list {
            format!("[{ty}!]")
        } else if f.required && f.default.is_none() && matches!(which, WriteArgs::Create { .. }) {
            format!("{ty}!")
        } else {
            ty
        };
        out.insert(f.name.to_owned(), input_value(f.name.to_owned(), ty));
    }
    let skip = match which {
        WriteArgs::Create { skip } => skip,
        WriteArgs::Update => None,
        WriteArgs::Data => return out,
    };
    let id = nullable(<ID as InputType>::create_type_info(registry));
    for list in [false, true] {
        for (i, f) in meta.relations.iter().enumerate() {
            if f.list != list || Some(i) == skip {
                continue;
            }
            let (key, ty) = if list {
                (format!("{}Ids", f.name), format!("[{id}!]"))
            } else {
                (format!("{}Id", f.name), id.clone())
            };
            out.insert(key.clone(), input_value(key, ty));
            if f.nested {
                let name = register_input(registry, nested_name(meta, f), |registry| {
                    write_arguments(registry, f.target, WriteArgs::Create { skip: Some(f.back) })
                });
                let ty = if list { format!("[{name}!]") } else { name };
                out.insert(f.name.to_owned(), input_value(f.name.to_owned(), ty));
            }
        }
    }
    out
}

/// `Create<T>`, `Update<T>` or `UpdateMany<Plural>Data` of `meta`.
pub(crate) fn write_input(
    registry: &mut Registry,
    meta: &'static ModelMeta,
    which: WriteArgs,
) -> String {
    let name = match which {
        WriteArgs::Create { .. } => format!("Create{}", meta.name),
        WriteArgs::Update => format!("Update{}", meta.name),
        WriteArgs::Data => update_many_data(meta),
    };
    register_input(registry, name, |registry| {
        let mut fields = IndexMap::new();
        if which == WriteArgs::Update {
            let id = <ID as InputType>::create_type_info(registry);
            fields.insert("id".to_owned(), input_value("id".to_owned(), id));
        }
        fields.extend(write_arguments(registry, meta, which));
        fields
    })
}

// ---------------------------------------------------------------------------------------------
// Relation fields of model types.

/// The relation fields of `meta`'s object type: `f(filter)` for to-one fields, `f(<list args>)`
/// and `_fMeta(<list args>)` for to-many ones. Called by the generated `ComplexObject` impl.
pub fn relation_fields(
    registry: &mut Registry,
    meta: &'static ModelMeta,
) -> Vec<(String, MetaField)> {
    let mut out = Vec::new();
    for rel in meta.relations {
        let target = node_type(registry, rel.target);
        if rel.list {
            let args = list_arguments(registry, rel.target, true);
            let ty = format!("[{target}!]");
            out.push((
                rel.name.to_owned(),
                meta_field(rel.name, ty, args.clone(), None),
            ));
            let count = format!("_{}Meta", rel.name);
            let ty = <QueryMeta as OutputType>::create_type_info(registry);
            out.push((count.clone(), meta_field(&count, ty, args, None)));
        } else {
            let args = filter_argument(registry, rel.target);
            let ty = if rel.required {
                format!("{target}!")
            } else {
                target
            };
            out.push((rel.name.to_owned(), meta_field(rel.name, ty, args, None)));
        }
    }
    out
}

/// Resolves a relation field of the node `id` of `meta` (batched per request by the runtime).
/// Called by the generated `ComplexObject` impl.
pub async fn relation_field(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    id: &str,
) -> ServerResult<Option<Value>> {
    let name = ctx.item.node.name.node.as_str();
    let count_of = name.strip_prefix('_').and_then(|n| n.strip_suffix("Meta"));
    for (field, rel) in meta.relations.iter().enumerate() {
        let count = if rel.name == name {
            false
        } else if rel.list && count_of == Some(rel.name) {
            true
        } else {
            continue;
        };
        let call = Call::Related {
            parent: meta,
            id,
            field,
            count,
        };
        return (rel.target.ops.resolve)(ctx, call).await;
    }
    Ok(None)
}
