//! The root `Query` type: `all<Plural>`, `_all<Plural>Meta` and `<Type>(unique args)` for every
//! model (in that order, as the reference generates them), then `node(id)`, plus the `Node`
//! interface.

use proc_macro2::TokenStream;
use quote::quote;

use super::{
    column_index, columns, field_ident, gql_crate, list_args, list_params, meta_ident, rt,
    type_ident, value_type,
};
use crate::model::{Model, TypeId};
use crate::naming;

pub(super) fn emit(model: &Model) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let ids: Vec<TypeId> = model.type_ids().map(|(id, _)| id).collect();
    let all = ids.iter().map(|&id| list_field(model, id, false));
    let meta = ids.iter().map(|&id| list_field(model, id, true));
    let single = ids.iter().map(|&id| single_field(model, id));
    let node = node_field(model);
    let user = user_field(model);
    let interface = node_interface(model);
    let permission_query = permission_query(model);
    quote! {
        /// The root query type of the Simple API.
        #[derive(::core::default::Default, ::core::fmt::Debug)]
        pub struct Query;

        // A root field takes one argument per GraphQL argument, however many the model needs.
        #[allow(clippy::too_many_arguments)]
        #[#rt::async_graphql::Object(crate = #krate, name = "Query")]
        impl Query {
            #(#all)*
            #(#meta)*
            #(#single)*
            #user
            #node
        }

        #interface
        #permission_query
    }
}

/// `user: User`, only when a model named `User` exists: the node of the request's node token.
fn user_field(model: &Model) -> TokenStream {
    let rt = rt();
    if !model.types.iter().any(|t| t.name == "User") {
        return TokenStream::new();
    }
    let record = type_ident("User");
    quote! {
        #[graphql(name = "user")]
        async fn user(&self, ctx: &#rt::Context<'_>) -> #rt::Result<::core::option::Option<#record>> {
            #rt::current_user::<#record>(ctx).await
        }
    }
}

/// The root of the permission schema (`/permissions`): `Some<Type>Exists(…): Boolean!` for every
/// model, with the reference's seven list arguments.
fn permission_query(model: &Model) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let fields = model.type_ids().map(|(_, def)| {
        let record = type_ident(&def.name);
        let gql = naming::some_exists_field(&def.name);
        let method = field_ident(&gql);
        quote! {
            #[graphql(name = #gql)]
            async fn #method(
                &self,
                ctx: &#rt::Context<'_>,
                #[graphql(name = "filter")] filter: ::core::option::Option<#rt::Filter<#record>>,
                #[graphql(name = "orderBy")] order_by: ::core::option::Option<#rt::OrderBy<#record>>,
                #[graphql(name = "skip")] skip: ::core::option::Option<i32>,
                #[graphql(name = "after")] after: ::core::option::Option<::std::string::String>,
                #[graphql(name = "before")] before: ::core::option::Option<::std::string::String>,
                #[graphql(name = "first")] first: ::core::option::Option<i32>,
                #[graphql(name = "last")] last: ::core::option::Option<i32>,
            ) -> #rt::Result<bool> {
                let order_by_list = ::core::option::Option::None;
                #rt::some_exists(ctx, #rt::ListArgs { filter, order_by, order_by_list, skip, after, before, first, last }).await
            }
        }
    });
    let body = if model.types.is_empty() {
        quote! {
            #[graphql(name = "_empty")]
            async fn empty(&self) -> bool {
                false
            }
        }
    } else {
        quote!(#(#fields)*)
    };
    quote! {
        /// The root query type of the permission schema served at `/permissions`.
        #[derive(::core::default::Default, ::core::fmt::Debug)]
        pub struct PermissionQuery;

        // A field takes one argument per GraphQL argument.
        #[allow(clippy::too_many_arguments)]
        #[#rt::async_graphql::Object(crate = #krate, name = "Query")]
        impl PermissionQuery {
            #body
        }
    }
}

/// `all<Plural>(…): [T!]!` or `_all<Plural>Meta(…): _QueryMeta!`.
fn list_field(model: &Model, ty: TypeId, meta: bool) -> TokenStream {
    let rt = rt();
    let name = &model.ty(ty).name;
    let record = type_ident(name);
    let (gql, output, call) = if meta {
        (
            naming::meta_field(name),
            quote!(#rt::QueryMeta),
            quote!(#rt::count),
        )
    } else {
        (
            naming::all_field(name),
            quote!(::std::vec::Vec<#record>),
            quote!(#rt::all),
        )
    };
    let method = field_ident(&gql);
    let params = list_params(&quote!(#record));
    let args = list_args();
    quote! {
        #[graphql(name = #gql)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #params
        ) -> #rt::Result<#output> {
            #call(ctx, #args).await
        }
    }
}

/// `<Type>(id: ID, <unique field>: T, …): T`.
fn single_field(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let def = model.ty(ty);
    let name = &def.name;
    let record = type_ident(name);
    let method = field_ident(&format!("node_{name}"));
    let cols = columns(model, ty);
    let uniques: Vec<_> = def
        .column_fields()
        .filter(|(_, f)| f.unique && !f.list)
        .map(|(_, f)| f)
        .collect();
    let args = uniques.iter().map(|f| {
        let gql = &f.name;
        let arg = field_ident(gql);
        let value = value_type(model, f);
        quote!(#[graphql(name = #gql)] #arg: ::core::option::Option<#value>)
    });
    let candidates = uniques.iter().map(|f| {
        let arg = field_ident(&f.name);
        let idx = column_index(&cols, &f.name);
        quote!((#idx, #arg.map(#rt::IntoVal::into_val)))
    });
    quote! {
        #[graphql(name = #name)]
        async fn #method(
            &self,
            ctx: &#rt::Context<'_>,
            #(#args,)*
        ) -> #rt::Result<::core::option::Option<#record>> {
            #rt::one(ctx, ::std::vec![#(#candidates),*]).await
        }
    }
}

/// `node(id: ID!): Node`: finds the model that has the id, then reads the typed node.
fn node_field(model: &Model) -> TokenStream {
    let rt = rt();
    if model.types.is_empty() {
        return TokenStream::new();
    }
    let metas = model.type_ids().map(|(id, _)| meta_ident(model, id));
    let arms = model.type_ids().enumerate().map(|(i, (_, def))| {
        let record = type_ident(&def.name);
        quote! {
            ::core::option::Option::Some(#i) => ::core::result::Result::Ok(
                #rt::by_id::<#record>(ctx, &id).await?.map(Node::#record)
            ),
        }
    });
    quote! {
        #[graphql(name = "node")]
        async fn node(
            &self,
            ctx: &#rt::Context<'_>,
            #[graphql(name = "id")] id: #rt::ID,
        ) -> #rt::Result<::core::option::Option<Node>> {
            match #rt::node_model(ctx, &id, &[#(&#metas),*]).await? {
                #(#arms)*
                _ => ::core::result::Result::Ok(::core::option::Option::None),
            }
        }
    }
}

/// `interface Node { id: ID! }`, implemented by every model.
fn node_interface(model: &Model) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    if model.types.is_empty() {
        return TokenStream::new();
    }
    let variants: Vec<_> = model.types.iter().map(|t| type_ident(&t.name)).collect();
    let id_ty = format!("&{}", quote!(#rt::ID)).replace(' ', "");
    // async-graphql's `Interface` derive expands `static_assertions`, which names `Sized` without
    // a path; the module restores the prelude for that expansion only, so the rest of the
    // generated code stays usable under `#![no_implicit_prelude]`.
    quote! {
        pub use self::__node::Node;

        #[doc(hidden)]
        pub mod __node {
            use ::core::prelude::rust_2024::*;

            /// Every node, whatever its model.
            #[derive(#rt::async_graphql::Interface)]
            #[graphql(crate = #krate, name = "Node", field(name = "id", ty = #id_ty))]
            pub enum Node {
                #( #variants(super::#variants), )*
            }
        }
    }
}
