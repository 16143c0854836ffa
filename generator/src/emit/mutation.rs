//! The root `Mutation` type: `create<T>` (except `User`), `update<T>`, `updateOrCreate<T>`,
//! `delete<T>` for every model, then `createUser`, in the reference's order; plus the
//! `Create<T>`/`Update<T>` input objects of `updateOrCreate<T>`. Relation arguments and relation
//! mutations are not generated yet.

use proc_macro2::TokenStream;
use quote::quote;

use super::{column_index, columns, field_ident, gql_crate, rt, type_ident, value_type};
use crate::model::{Field, Model, TypeId};
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
    let create_user = ids
        .iter()
        .filter(|id| is_user(id))
        .map(|&id| create(model, id));
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
            #(#create_user)*
        }

        #(#inputs)*
    }
}

/// The fields mutations accept, in model order (system fields are read-only).
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

/// The argument type of a field: `T`, `MaybeUndefined<T>` or `MaybeUndefined<Vec<T>>`.
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

/// `(column index, rt::req(arg) | rt::opt(arg))` for every field, reading from `source`.
fn arg_values(
    model: &Model,
    ty: TypeId,
    fields: &[&Field],
    source: &TokenStream,
    create: bool,
) -> Vec<TokenStream> {
    let rt = rt();
    let cols = columns(model, ty);
    fields
        .iter()
        .map(|f| {
            let idx = column_index(&cols, &f.name);
            let arg = field_ident(&f.name);
            if create && create_required(f) {
                quote!((#idx, #rt::req(#source #arg)))
            } else {
                quote!((#idx, #rt::opt(#source #arg)))
            }
        })
        .collect()
}

fn params(model: &Model, fields: &[&Field], create: bool) -> Vec<TokenStream> {
    fields
        .iter()
        .map(|f| {
            let gql = &f.name;
            let arg = field_ident(gql);
            let ty = arg_type(model, f, create && create_required(f));
            quote!(#[graphql(name = #gql)] #arg: #ty)
        })
        .collect()
}

fn create(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::create_field(name);
    let method = field_ident(&gql);
    let fields = writable(model, ty);
    let params = params(model, &fields, true);
    let values = arg_values(model, ty, &fields, &TokenStream::new(), true);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #(#params,)*
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::create::<#record>(ctx, ::std::vec![#(#values),*]).await
        }
    }
}

fn update(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::update_field(name);
    let method = field_ident(&gql);
    let fields = writable(model, ty);
    let params = params(model, &fields, false);
    let values = arg_values(model, ty, &fields, &TokenStream::new(), false);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "id")] id: #rt::ID,
            #(#params,)*
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::update::<#record>(ctx, id, ::std::vec![#(#values),*]).await
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

/// `updateOrCreate<T>(update: Update<T>!, create: Create<T>!)`; without writable fields
/// `Create<T>` would be empty, so only `update` is taken.
fn update_or_create(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let gql = naming::update_or_create_field(name);
    let method = field_ident(&gql);
    let update_input = type_ident(&naming::update_input(name));
    let create_input = type_ident(&naming::create_input(name));
    let fields = writable(model, ty);
    let update_source = quote!(update.);
    let create_source = quote!(create.);
    let update_values = arg_values(model, ty, &fields, &update_source, false);
    if fields.is_empty() {
        return quote! {
            #[graphql(name = #gql)]
            async fn #method(
                &self,
                ctx: &#rt::Context<'_>,
                #[graphql(name = "update")] update: #update_input,
            ) -> #rt::Result<::core::option::Option<#record>> {
                #rt::update_or_create::<#record>(ctx, update.id, ::std::vec![], ::std::vec![]).await
            }
        };
    }
    let create_values = arg_values(model, ty, &fields, &create_source, true);
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "update")] update: #update_input,
            #[graphql(name = "create")] create: #create_input,
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::update_or_create::<#record>(
                ctx,
                update.id,
                ::std::vec![#(#update_values),*],
                ::std::vec![#(#create_values),*],
            )
            .await
        }
    }
}

/// `Update<T>` and `Create<T>` input objects.
fn inputs(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let name = &model.ty(ty).name;
    let fields = writable(model, ty);
    let update_name = naming::update_input(name);
    let update_ident = type_ident(&update_name);
    let update_fields = input_fields(model, &fields, false);
    let update = quote! {
        #[doc(hidden)]
        #[derive(#rt::async_graphql::InputObject)]
        #[graphql(crate = #krate, name = #update_name)]
        pub struct #update_ident {
            #[graphql(name = "id")]
            pub id: #rt::ID,
            #(#update_fields,)*
        }
    };
    if fields.is_empty() {
        return update;
    }
    let create_name = naming::create_input(name);
    let create_ident = type_ident(&create_name);
    let create_fields = input_fields(model, &fields, true);
    quote! {
        #update

        #[doc(hidden)]
        #[derive(#rt::async_graphql::InputObject)]
        #[graphql(crate = #krate, name = #create_name)]
        pub struct #create_ident {
            #(#create_fields,)*
        }
    }
}

fn input_fields(model: &Model, fields: &[&Field], create: bool) -> Vec<TokenStream> {
    fields
        .iter()
        .map(|f| {
            let gql = &f.name;
            let field = field_ident(gql);
            let ty = arg_type(model, f, create && create_required(f));
            quote!(#[graphql(name = #gql)] pub #field: #ty)
        })
        .collect()
}
