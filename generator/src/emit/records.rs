//! Model types: the data table the runtime reads (`__META_<Type>`), the typed record that is the
//! GraphQL object type, and its row decoder.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{
    Column, RelField, column_index, columns, field_ident, gql_crate, has_nested_create, list_args,
    list_params, meta_ident, nested_type, record_type, rel_fields, rt, type_ident,
};
use crate::model::{DefaultValue, FieldKind, Model, OnDelete, ScalarType, TypeId};
use crate::naming;

pub(super) fn emit(model: &Model) -> TokenStream {
    let items: TokenStream = model
        .type_ids()
        .map(|(id, _)| {
            let meta = emit_meta(model, id);
            let record = emit_record(model, id);
            quote!(#meta #record)
        })
        .collect();
    // async-graphql's `ComplexObject` support expands `Some`/`Ok` without a path; the module
    // restores the prelude for the records only, so the rest of the generated code stays usable
    // under `#![no_implicit_prelude]`.
    quote! {
        pub use self::__records::*;

        #[doc(hidden)]
        pub mod __records {
            use ::std::prelude::rust_2024::*;
            #[allow(unused_imports)]
            use super::*;

            #items
        }
    }
}

fn emit_meta(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let def = model.ty(ty);
    let name = &def.name;
    let plural = naming::plural(name);
    let filter = naming::filter_type(name);
    let order_by = naming::order_by_type(name);
    let meta = meta_ident(model, ty);
    let cols = columns(model, ty);
    let fields = cols.iter().map(|c| emit_field_meta(model, c));
    let id = column_index(&cols, "id");
    let created_at = column_index(&cols, "createdAt");
    let updated_at = column_index(&cols, "updatedAt");
    let relations = rel_fields(model, ty)
        .iter()
        .map(|r| emit_rel_meta(model, ty, r))
        .collect::<Vec<_>>();
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        pub static #meta: #rt::ModelMeta = #rt::ModelMeta {
            name: #name,
            plural: #plural,
            table: #name,
            filter_name: #filter,
            order_by_name: #order_by,
            fields: &[ #(#fields),* ],
            id: #id,
            created_at: #created_at,
            updated_at: #updated_at,
            relations: &[ #(#relations),* ],
        };
    }
}

fn emit_rel_meta(model: &Model, ty: TypeId, rel: &RelField<'_>) -> TokenStream {
    let rt = rt();
    let name = &rel.field.name;
    let relation = rel.relation.0 as usize;
    let table = format!("_{}", model.relation(rel.relation).name);
    let (own, other) = if rel.side_a { ("A", "B") } else { ("B", "A") };
    let symmetric = rel.symmetric;
    let target = meta_ident(model, rel.target);
    let target_record = type_ident(&model.ty(rel.target).name);
    let back = rel.back;
    let list = rel.field.list;
    let required = rel.field.required && !list;
    let cascade = rel.field.on_delete == OnDelete::Cascade;
    let nested = if has_nested_create(model, rel) {
        let ty = nested_type(ty, rel);
        quote!(::core::option::Option::Some(
            <#ty as #rt::async_graphql::InputType>::create_type_info
        ))
    } else {
        quote!(::core::option::Option::None)
    };
    quote! {
        #rt::RelFieldMeta {
            name: #name, relation: #relation, table: #table, own: #own, other: #other,
            symmetric: #symmetric, target: &#target, back: #back, list: #list,
            required: #required, cascade: #cascade,
            register_filter: <#rt::Filter<#target_record> as #rt::async_graphql::InputType>::create_type_info,
            register_nested: #nested,
        }
    }
}

fn emit_field_meta(model: &Model, col: &Column<'_>) -> TokenStream {
    let rt = rt();
    let name = col.name;
    let Some(f) = col.field else {
        // An undeclared `createdAt`/`updatedAt`: stored, never exposed.
        return quote! {
            #rt::FieldMeta {
                name: #name, kind: #rt::Kind::DateTime, list: false, required: true,
                unique: false, exposed: false, default: ::core::option::Option::None,
                enum_values: &[], register: ::core::option::Option::None,
            }
        };
    };
    let kind = match f.kind {
        FieldKind::Scalar(s) => match s {
            ScalarType::Id => quote!(Id),
            ScalarType::String => quote!(String),
            ScalarType::Int => quote!(Int),
            ScalarType::Float => quote!(Float),
            ScalarType::Boolean => quote!(Boolean),
            ScalarType::DateTime => quote!(DateTime),
            ScalarType::Json => quote!(Json),
        },
        FieldKind::Enum(_) => quote!(Enum),
        FieldKind::Relation { .. } => quote!(Relation),
    };
    let (enum_values, register) = match f.kind {
        FieldKind::Enum(id) => {
            let e = model.enum_def(id);
            let values = &e.values;
            let ident = type_ident(&e.name);
            (
                quote!(&[#(#values),*]),
                quote!(::core::option::Option::Some(
                    <#ident as #rt::async_graphql::InputType>::create_type_info
                )),
            )
        }
        _ => (quote!(&[]), quote!(::core::option::Option::None)),
    };
    let default = match &f.default {
        Some(d) => {
            let lit = emit_lit(d);
            quote!(::core::option::Option::Some(#lit))
        }
        None => quote!(::core::option::Option::None),
    };
    let (list, required, unique) = (f.list, f.required, f.unique);
    quote! {
        #rt::FieldMeta {
            name: #name, kind: #rt::Kind::#kind, list: #list, required: #required,
            unique: #unique, exposed: true, default: #default,
            enum_values: #enum_values, register: #register,
        }
    }
}

pub(super) fn emit_lit(value: &DefaultValue) -> TokenStream {
    let rt = rt();
    match value {
        DefaultValue::String(s) => quote!(#rt::Lit::String(#s)),
        DefaultValue::Int(i) => quote!(#rt::Lit::Int(#i)),
        DefaultValue::Float(f) => quote!(#rt::Lit::Float(#f)),
        DefaultValue::Boolean(b) => quote!(#rt::Lit::Boolean(#b)),
        DefaultValue::DateTime(s) => quote!(#rt::Lit::DateTime(#s)),
        DefaultValue::Enum(s) => quote!(#rt::Lit::Enum(#s)),
        DefaultValue::Json(s) => quote!(#rt::Lit::Json(#s)),
        DefaultValue::List(items) => {
            let items = items.iter().map(emit_lit);
            quote!(#rt::Lit::List(&[#(#items),*]))
        }
    }
}

fn emit_record(model: &Model, ty: TypeId) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let def = model.ty(ty);
    let name = &def.name;
    let ident = type_ident(name);
    let meta = meta_ident(model, ty);
    let cols = columns(model, ty);
    let declared: Vec<_> = cols
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.field.map(|f| (i, f)))
        .collect();
    let struct_fields = declared.iter().map(|(_, f)| {
        let gql = &f.name;
        let field = field_ident(gql);
        let ty = record_type(model, f);
        quote! {
            #[graphql(name = #gql)]
            pub #field: #ty
        }
    });
    let decoders = declared.iter().map(|(i, f)| {
        let field = field_ident(&f.name);
        let getter = if f.required && !f.list {
            quote!(#rt::get)
        } else {
            quote!(#rt::get_opt)
        };
        quote!(#field: #getter(row, #i, backend)?)
    });
    let doc = format!("A node of the model `{name}`.");
    let rels = rel_fields(model, ty);
    let complex = if rels.is_empty() {
        quote!()
    } else {
        quote!(complex,)
    };
    let resolvers = emit_relation_resolvers(model, ty, &rels);
    // Every scalar field is read-checked (reference §5.3); relation fields are not.
    let guard = format!("{}::ReadGuard(self)", rt).replace(' ', "");
    quote! {
        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::async_graphql::SimpleObject)]
        #[graphql(crate = #krate, name = #name, #complex guard = #guard)]
        pub struct #ident {
            #(#struct_fields,)*
        }

        #resolvers

        impl #rt::Record for #ident {
            const META: &'static #rt::ModelMeta = &#meta;

            fn id(&self) -> &str {
                &self.id
            }

            fn decode(
                row: &#rt::QueryResult,
                backend: #rt::Backend,
            ) -> ::core::result::Result<Self, #rt::DbErr> {
                ::core::result::Result::Ok(Self { #(#decoders,)* })
            }
        }
    }
}

/// The relation fields of a model type: `f(filter)` for to-one fields, `f(<list args>)` and
/// `_fMeta(<list args>)` for to-many fields, all batched by the runtime.
fn emit_relation_resolvers(model: &Model, ty: TypeId, rels: &[RelField<'_>]) -> TokenStream {
    if rels.is_empty() {
        return TokenStream::new();
    }
    let rt = rt();
    let krate = gql_crate();
    let ident = type_ident(&model.ty(ty).name);
    let methods = rels.iter().map(|rel| {
        let gql = &rel.field.name;
        let index = rel.index;
        let target = type_ident(&model.ty(rel.target).name);
        let method = format_ident!("rel_{}", naming::rust_ident(gql).trim_start_matches("r#"));
        if rel.field.list {
            let meta_gql = format!("_{gql}Meta");
            let meta_method = format_ident!("{}_meta", method);
            let params = list_params(&quote!(#target));
            let args = list_args();
            quote! {
                #[graphql(name = #gql)]
                async fn #method(
                    &self,
                    ctx: &#rt::Context<'_>,
                    #params
                ) -> #rt::Result<::core::option::Option<::std::vec::Vec<#target>>> {
                    #rt::to_many(ctx, self, #index, #args).await
                }

                #[graphql(name = #meta_gql)]
                async fn #meta_method(
                    &self,
                    ctx: &#rt::Context<'_>,
                    #params
                ) -> #rt::Result<#rt::QueryMeta> {
                    #rt::to_many_count(ctx, self, #index, #args).await
                }
            }
        } else if rel.field.required {
            quote! {
                #[graphql(name = #gql)]
                async fn #method(
                    &self,
                    ctx: &#rt::Context<'_>,
                    #[graphql(name = "filter")] filter: ::core::option::Option<#rt::Filter<#target>>,
                ) -> #rt::Result<#target> {
                    #rt::to_one_required(ctx, self, #index, filter).await
                }
            }
        } else {
            quote! {
                #[graphql(name = #gql)]
                async fn #method(
                    &self,
                    ctx: &#rt::Context<'_>,
                    #[graphql(name = "filter")] filter: ::core::option::Option<#rt::Filter<#target>>,
                ) -> #rt::Result<::core::option::Option<#target>> {
                    #rt::to_one(ctx, self, #index, filter).await
                }
            }
        }
    });
    quote! {
        // A relation field takes one argument per GraphQL argument.
        #[allow(clippy::too_many_arguments)]
        #[#rt::async_graphql::ComplexObject(crate = #krate)]
        impl #ident {
            #(#methods)*
        }
    }
}
