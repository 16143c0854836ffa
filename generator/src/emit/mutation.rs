//! The root `Mutation` type, in the reference's order: `create<T>` (except `User`), `update<T>`,
//! `updateOrCreate<T>`, `delete<T>` for every model, then `set<R>`, `unset<R>`, `addTo<R>`,
//! `removeFrom<R>` where the reference generates them, then `createUser`; after those the
//! extensions `deleteMany<Plural>` and `updateMany<Plural>`. Plus the input objects
//! (`Create<T>`, `Update<T>`, `UpdateMany<Plural>Data`) and the relation mutation payloads.
//!
//! Nested create inputs are not emitted as structs: `NestedCreate<Service, M, F>` builds them
//! from the data tables.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::{
    RelField, column_index, columns, field_ident, gql_crate, has_nested_create, nested_type,
    rel_fields, rt, type_ident, value_type,
};
use crate::model::{Cardinality, Field, Model, RelationId, TypeId};
use crate::naming;

pub(super) fn emit(model: &Model) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    if model.types.is_empty() {
        return quote! {
            /// The model has no types, so there are no mutations.
            pub type Mutation = #rt::async_graphql::EmptyMutation;
        };
    }
    let ids: Vec<TypeId> = model.type_ids().map(|(id, _)| id).collect();
    let is_user = |id: &TypeId| model.ty(*id).name == "User";
    let creates = ids
        .iter()
        .filter(|id| !is_user(id))
        .map(|&id| create(model, id));
    let updates = ids.iter().map(|&id| update(model, id));
    let upserts = ids.iter().map(|&id| update_or_create(model, id));
    let deletes = ids.iter().map(|&id| delete(model, id));
    let relation_ops = [RelOp::Set, RelOp::Unset, RelOp::AddTo, RelOp::RemoveFrom]
        .into_iter()
        .flat_map(|op| {
            (0..model.relations.len())
                .map(move |r| RelationId(r as u32))
                .filter(move |&r| op.exists(model, r))
                .map(move |r| (op, r))
        })
        .collect::<Vec<_>>();
    let relation_fields = relation_ops
        .iter()
        .map(|&(op, r)| relation_mutation(model, op, r));
    let payloads = relation_ops
        .iter()
        .map(|&(op, r)| relation_payload(model, op, r));
    let create_user = ids
        .iter()
        .filter(|id| is_user(id))
        .map(|&id| create(model, id));
    let many = ids.iter().map(|&id| many(model, id));
    let inputs = ids.iter().map(|&id| inputs(model, id));
    quote! {
        /// The root mutation type of the Simple API.
        #[derive(::core::default::Default, ::core::fmt::Debug)]
        pub struct Mutation;

        // A root field takes one argument per GraphQL argument, however many the model needs.
        #[allow(clippy::too_many_arguments)]
        #[#rt::async_graphql::Object(crate = #krate, name = "Mutation")]
        impl Mutation {
            #(#creates)*
            #(#updates)*
            #(#upserts)*
            #(#deletes)*
            #(#relation_fields)*
            #(#create_user)*
            #(#many)*
        }

        #(#inputs)*
        #(#payloads)*
    }
}

/// One argument of a mutation (or field of its input object).
struct Param {
    gql: String,
    ident: Ident,
    ty: TokenStream,
}

/// The writable scalar fields, in model order (system fields are read-only).
fn writable(model: &Model, ty: TypeId) -> Vec<&Field> {
    model
        .ty(ty)
        .column_fields()
        .map(|(_, f)| f)
        .filter(|f| f.is_writable())
        .collect()
}

/// Whether `create<T>` takes the field as non-null: required and without a default.
fn create_required(f: &Field) -> bool {
    f.required && !f.list && f.default.is_none()
}

/// The argument type of a scalar field: `T`, `MaybeUndefined<T>` or `MaybeUndefined<Vec<T>>`.
fn arg_type(model: &Model, f: &Field, non_null: bool) -> TokenStream {
    let rt = rt();
    let value = value_type(model, f);
    if f.list {
        quote!(#rt::MaybeUndefined<::std::vec::Vec<#value>>)
    } else if non_null {
        value
    } else {
        quote!(#rt::MaybeUndefined<#value>)
    }
}

/// Every argument of a create (`create`) or update, in the reference's order: scalars, then
/// `<f>Id`/`<f>` for to-one relation fields, then `<f>Ids`/`<f>` for to-many ones.
fn params(model: &Model, ty: TypeId, create: bool) -> Vec<Param> {
    let rt = rt();
    let mut out: Vec<Param> = writable(model, ty)
        .into_iter()
        .map(|f| Param {
            gql: f.name.clone(),
            ident: field_ident(&f.name),
            ty: arg_type(model, f, create && create_required(f)),
        })
        .collect();
    let rels = rel_fields(model, ty);
    for list in [false, true] {
        for rel in rels.iter().filter(|r| r.field.list == list) {
            let name = &rel.field.name;
            let (ids, ids_ty) = if list {
                (format!("{name}Ids"), quote!(::std::vec::Vec<#rt::ID>))
            } else {
                (format!("{name}Id"), quote!(#rt::ID))
            };
            out.push(Param {
                ident: field_ident(&ids),
                gql: ids,
                ty: quote!(#rt::MaybeUndefined<#ids_ty>),
            });
            if has_nested_create(model, rel) {
                let nested = nested_type(ty, rel);
                let nested = if list {
                    quote!(::std::vec::Vec<#nested>)
                } else {
                    nested
                };
                out.push(Param {
                    gql: name.clone(),
                    ident: field_ident(name),
                    ty: quote!(#rt::MaybeUndefined<#nested>),
                });
            }
        }
    }
    out
}

/// The `rt::Write` built from the arguments (read from `source`, e.g. `create.`).
fn write_value(model: &Model, ty: TypeId, source: &TokenStream, create: bool) -> TokenStream {
    let rt = rt();
    let cols = columns(model, ty);
    let values = writable(model, ty).into_iter().map(|f| {
        let idx = column_index(&cols, &f.name);
        let arg = field_ident(&f.name);
        if create && create_required(f) {
            quote!((#idx, #rt::req(#source #arg)))
        } else {
            quote!((#idx, #rt::opt(#source #arg)))
        }
    });
    let rels = rel_fields(model, ty);
    let rels = rels.iter().map(|rel| relation_value(model, rel, source));
    quote! {
        #rt::Write {
            values: ::std::vec![#(#values),*],
            rels: ::std::vec![#(#rels),*],
        }
    }
}

fn relation_value(model: &Model, rel: &RelField<'_>, source: &TokenStream) -> TokenStream {
    let rt = rt();
    let name = &rel.field.name;
    let index = rel.index;
    let suffix = if rel.field.list { "Ids" } else { "Id" };
    let ids = field_ident(&format!("{name}{suffix}"));
    if has_nested_create(model, rel) {
        let nested = field_ident(name);
        quote!(#rt::rel(#index, #source #ids, #source #nested))
    } else {
        quote!(#rt::rel_ids(#index, #source #ids))
    }
}

fn method_params(params: &[Param]) -> Vec<TokenStream> {
    params
        .iter()
        .map(|p| {
            let (gql, ident, ty) = (&p.gql, &p.ident, &p.ty);
            quote!(#[graphql(name = #gql)] #ident: #ty)
        })
        .collect()
}

fn create(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::create_field(name);
    let method = field_ident(&gql);
    let params = method_params(&params(model, ty, true));
    let write = write_value(model, ty, &TokenStream::new(), true);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #(#params,)*
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::create::<#record>(ctx, #write).await
        }
    }
}

fn update(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::update_field(name);
    let method = field_ident(&gql);
    let params = method_params(&params(model, ty, false));
    let write = write_value(model, ty, &TokenStream::new(), false);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "id")] id: #rt::ID,
            #(#params,)*
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::update::<#record>(ctx, id, #write).await
        }
    }
}

fn delete(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::delete_field(name);
    let method = field_ident(&gql);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "id")] id: #rt::ID,
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::delete::<#record>(ctx, id).await
        }
    }
}

/// `updateOrCreate<T>(update: Update<T>!, create: Create<T>!)`; without any create argument
/// `Create<T>` would be empty, so only `update` is taken.
fn update_or_create(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::update_or_create_field(name);
    let method = field_ident(&gql);
    let update_input = type_ident(&naming::update_input(name));
    let create_input = type_ident(&naming::create_input(name));
    let update_write = write_value(model, ty, &quote!(update.), false);
    if params(model, ty, true).is_empty() {
        return quote! {
            #[graphql(name = #gql)]
            async fn #method(
                &self,
                ctx: &#rt::Context<'_>,
                #[graphql(name = "update")] update: #update_input,
            ) -> #rt::Result<::core::option::Option<#record>> {
                #rt::update_or_create::<#record>(
                    ctx,
                    update.id,
                    #update_write,
                    ::core::default::Default::default(),
                )
                .await
            }
        };
    }
    let create_write = write_value(model, ty, &quote!(create.), true);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "update")] update: #update_input,
            #[graphql(name = "create")] create: #create_input,
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::update_or_create::<#record>(ctx, update.id, #update_write, #create_write).await
        }
    }
}

/// `deleteMany<Plural>(filter)` and, when the model has writable scalars,
/// `updateMany<Plural>(filter, data)` (extensions).
fn many(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let delete_gql = naming::delete_many_field(name);
    let delete_method = field_ident(&delete_gql);
    let delete = quote! {
        #[graphql(name = #delete_gql)]
        async fn #delete_method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "filter")] filter: ::core::option::Option<#rt::Filter<#record>>,
        ) -> #rt::Result<#rt::BatchPayload> {
            #rt::delete_many::<#record>(ctx, filter).await
        }
    };
    let fields = writable(model, ty);
    if fields.is_empty() {
        return delete;
    }
    let update_gql = naming::update_many_field(name);
    let update_method = field_ident(&update_gql);
    let data = type_ident(&naming::update_many_data(name));
    let cols = columns(model, ty);
    let values = fields.iter().map(|f| {
        let idx = column_index(&cols, &f.name);
        let arg = field_ident(&f.name);
        quote!((#idx, #rt::opt(data.#arg)))
    });
    quote! {
        #delete

        #[graphql(name = #update_gql)]
        async fn #update_method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "filter")] filter: ::core::option::Option<#rt::Filter<#record>>,
            #[graphql(name = "data")] data: #data,
        ) -> #rt::Result<#rt::BatchPayload> {
            #rt::update_many::<#record>(ctx, filter, ::std::vec![#(#values),*]).await
        }
    }
}

/// `Update<T>`, `Create<T>` and `UpdateMany<Plural>Data` input objects.
fn inputs(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let name = &model.ty(ty).name;
    let input_fields = |params: Vec<Param>| -> Vec<TokenStream> {
        params
            .into_iter()
            .map(|p| {
                let (gql, ident, ty) = (p.gql, p.ident, p.ty);
                quote!(#[graphql(name = #gql)] pub #ident: #ty)
            })
            .collect()
    };
    let update_name = naming::update_input(name);
    let update_ident = type_ident(&update_name);
    let update_fields = input_fields(params(model, ty, false));
    let mut out = quote! {
        #[doc(hidden)]
        #[derive(#rt::async_graphql::InputObject)]
        #[graphql(crate = #krate, name = #update_name)]
        pub struct #update_ident {
            #[graphql(name = "id")]
            pub id: #rt::ID,
            #(#update_fields,)*
        }
    };
    let create_params = params(model, ty, true);
    if !create_params.is_empty() {
        let create_name = naming::create_input(name);
        let create_ident = type_ident(&create_name);
        let create_fields = input_fields(create_params);
        out.extend(quote! {
            #[doc(hidden)]
            #[derive(#rt::async_graphql::InputObject)]
            #[graphql(crate = #krate, name = #create_name)]
            pub struct #create_ident {
                #(#create_fields,)*
            }
        });
    }
    let scalars = writable(model, ty);
    if !scalars.is_empty() {
        let data_name = naming::update_many_data(name);
        let data_ident = type_ident(&data_name);
        let data_fields = scalars.iter().map(|f| {
            let gql = &f.name;
            let ident = field_ident(gql);
            let ty = arg_type(model, f, false);
            quote!(#[graphql(name = #gql)] pub #ident: #ty)
        });
        out.extend(quote! {
            #[doc(hidden)]
            #[derive(#rt::async_graphql::InputObject)]
            #[graphql(crate = #krate, name = #data_name)]
            pub struct #data_ident {
                #(#data_fields,)*
            }
        });
    }
    out
}

/// A relation mutation.
#[derive(Debug, Clone, Copy)]
enum RelOp {
    Set,
    Unset,
    AddTo,
    RemoveFrom,
}

impl RelOp {
    /// Whether the reference generates this mutation for the relation: `set` for 1:1, `unset`
    /// for 1:1 with neither field required, `addTo` for 1:n and n:m, `removeFrom` for those
    /// with no required to-one field.
    fn exists(self, model: &Model, r: RelationId) -> bool {
        let rel = model.relation(r);
        let one = model.cardinality(r) == Cardinality::OneToOne;
        let any_required = [rel.a, rel.b].iter().any(|end| {
            let f = model.end_field(*end);
            f.required && !f.list
        });
        match self {
            RelOp::Set => one,
            RelOp::Unset => one && !any_required,
            RelOp::AddTo => !one,
            RelOp::RemoveFrom => !one && !any_required,
        }
    }

    fn field(self, relation: &str) -> String {
        match self {
            RelOp::Set => naming::set_field(relation),
            RelOp::Unset => naming::unset_field(relation),
            RelOp::AddTo => naming::add_to_field(relation),
            RelOp::RemoveFrom => naming::remove_from_field(relation),
        }
    }

    fn payload(self, relation: &str) -> String {
        match self {
            RelOp::Set => naming::set_payload(relation),
            RelOp::Unset => naming::unset_payload(relation),
            RelOp::AddTo => naming::add_to_payload(relation),
            RelOp::RemoveFrom => naming::remove_from_payload(relation),
        }
    }

    fn runtime(self) -> TokenStream {
        let rt = rt();
        match self {
            RelOp::Set => quote!(#rt::RelOp::Set),
            RelOp::Unset => quote!(#rt::RelOp::Unset),
            RelOp::AddTo => quote!(#rt::RelOp::AddTo),
            RelOp::RemoveFrom => quote!(#rt::RelOp::RemoveFrom),
        }
    }
}

/// `<op><R>(<aName>Id: ID!, <bName>Id: ID!): <Op><R>Payload`.
fn relation_mutation(model: &Model, op: RelOp, r: RelationId) -> TokenStream {
    let rt = rt();
    let rel = model.relation(r);
    let gql = op.field(&rel.name);
    let method = field_ident(&gql);
    let payload = type_ident(&op.payload(&rel.name));
    let a = type_ident(&model.ty(rel.a.ty).name);
    let b = type_ident(&model.ty(rel.b.ty).name);
    let a_field = model
        .ty(rel.a.ty)
        .relation_fields()
        .position(|(i, _)| i == rel.a.field)
        .unwrap_or(0);
    let a_name = naming::relation_id_argument(&naming::relation_a_name(model, r));
    let b_name = naming::relation_id_argument(&naming::relation_b_name(model, r));
    let op = op.runtime();
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = #a_name)] b_id: #rt::ID,
            #[graphql(name = #b_name)] a_id: #rt::ID,
        ) -> #rt::Result<::core::option::Option<#payload>> {
            let (a, b) = #rt::relate::<#a, #b>(ctx, #a_field, #op, b_id, a_id).await?;
            ::core::result::Result::Ok(::core::option::Option::Some(#payload { a, b }))
        }
    }
}

/// `<Op><R>Payload { <bName>: A, <aName>: B }`.
fn relation_payload(model: &Model, op: RelOp, r: RelationId) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let rel = model.relation(r);
    let name = op.payload(&rel.name);
    let ident = type_ident(&name);
    let a = type_ident(&model.ty(rel.a.ty).name);
    let b = type_ident(&model.ty(rel.b.ty).name);
    let a_name = naming::relation_a_name(model, r);
    let b_name = naming::relation_b_name(model, r);
    quote! {
        #[doc(hidden)]
        #[derive(#rt::async_graphql::SimpleObject)]
        #[graphql(crate = #krate, name = #name)]
        pub struct #ident {
            /// The node on side A.
            #[graphql(name = #b_name)]
            pub a: ::core::option::Option<#a>,
            /// The node on side B.
            #[graphql(name = #a_name)]
            pub b: ::core::option::Option<#b>,
        }
    }
}
