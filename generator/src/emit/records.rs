//! Model types: the data table the runtime reads (`__META_<Type>`), the typed record that is the
//! GraphQL object type, and its row decoder.

use proc_macro2::TokenStream;
use quote::quote;

use super::{
    Column, RelField, column_index, columns, field_ident, gql_crate, has_nested_create, meta_ident,
    record_type, rel_fields, rt, type_ident,
};
use crate::model::{DefaultValue, FieldKind, Model, OnDelete, TypeId};
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
    let interface = node_interface(model);
    // async-graphql's derives expand some prelude names without a path; the module restores the
    // prelude for the records only, so the rest of the generated code stays usable under
    // `#![no_implicit_prelude]`.
    quote! {
        pub use self::__records::*;

        #[doc(hidden)]
        pub mod __records {
            use ::std::prelude::rust_2024::*;
            #[allow(unused_imports)]
            use super::*;
            use ::svc_runtime::__codegen as __rt;

            #items
        }

        #interface
    }
}

/// `interface Node { id: ID! }`, implemented by every model (`ServiceDef::Node`).
fn node_interface(model: &Model) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    if model.types.is_empty() {
        return TokenStream::new();
    }
    let variants: Vec<_> = model.types.iter().map(|t| type_ident(&t.name)).collect();
    let id_ty = format!("&{}::ID", gql_crate().trim_end_matches("::async_graphql"));
    // async-graphql's `Interface` derive expands `static_assertions`, which names `Sized` without
    // a path; the module restores the prelude for that expansion only.
    quote! {
        pub use self::__node::Node;

        #[doc(hidden)]
        pub mod __node {
            use ::core::prelude::rust_2024::*;
            use ::svc_runtime::__codegen as __rt;

            /// Every node, whatever its model.
            #[derive(#rt::async_graphql::Interface)]
            #[graphql(crate = #krate, name = "Node", field(name = "id", ty = #id_ty))]
            pub enum Node {
                #( #variants(super::#variants), )*
            }
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
        .map(|r| emit_rel_meta(model, r))
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

/// `RelFieldMeta::new(name, relation, table, target, back)` refined with the field's flags.
fn emit_rel_meta(model: &Model, rel: &RelField<'_>) -> TokenStream {
    let rt = rt();
    let name = &rel.field.name;
    let relation = rel.relation.0 as usize;
    let table = format!("_{}", model.relation(rel.relation).name);
    let target = meta_ident(model, rel.target);
    let back = rel.back;
    let list = rel.field.list;
    let flags = [
        (!rel.side_a, quote!(side_b)),
        (rel.symmetric, quote!(symmetric)),
        (list, quote!(list)),
        (rel.field.required && !list, quote!(required)),
        (rel.field.on_delete == OnDelete::Cascade, quote!(cascade)),
        (has_nested_create(model, rel), quote!(nested)),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, flag)| quote!(.#flag()));
    quote! {
        #rt::RelFieldMeta::new(#name, #relation, #table, &#target, #back) #(#flags)*
    }
}

/// `FieldMeta::new(name, kind)` refined with the field's flags, default and enum.
fn emit_field_meta(model: &Model, col: &Column<'_>) -> TokenStream {
    let rt = rt();
    let name = col.name;
    let Some(f) = col.field else {
        // An undeclared `createdAt`/`updatedAt`: stored, never exposed.
        return quote!(#rt::FieldMeta::new(#name, #rt::Kind::DateTime).required().hidden());
    };
    let kind = match f.kind {
        FieldKind::Scalar(s) => super::scalar_kind(s),
        FieldKind::Enum(_) => quote!(Enum),
        FieldKind::Relation { .. } => quote!(Relation),
    };
    let mut refine = TokenStream::new();
    for (on, flag) in [
        (f.list, quote!(list)),
        (f.required, quote!(required)),
        (f.unique, quote!(unique)),
        (f.search, quote!(search)),
    ] {
        if on {
            refine.extend(quote!(.#flag()));
        }
    }
    if let Some(d) = &f.default {
        let lit = emit_lit(d);
        refine.extend(quote!(.default(#lit)));
    }
    if let FieldKind::Enum(id) = f.kind {
        let e = model.enum_def(id);
        let values = &e.values;
        let ident = type_ident(&e.name);
        refine.extend(
            quote!(.enumeration(&[#(#values),*], <#ident as #rt::InputType>::create_type_info)),
        );
    }
    quote!(#rt::FieldMeta::new(#name, #rt::Kind::#kind) #refine)
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
        quote!(#field: #getter(row, #i)?)
    });
    let doc = format!("A node of the model `{name}`.");
    let has_relations = !rel_fields(model, ty).is_empty();
    let complex = if has_relations {
        quote!(complex,)
    } else {
        quote!()
    };
    // The relation fields are registered and resolved by the runtime from the data table.
    let relations = if has_relations {
        quote! {
            impl #rt::ComplexObject for #ident {
                fn fields(registry: &mut #rt::Registry) -> #rt::Vec<(#rt::String, #rt::MetaField)> {
                    #rt::relation_fields(registry, &#meta)
                }

                async fn resolve_field(
                    &self,
                    ctx: &#rt::Context<'_>,
                ) -> #rt::ServerResult<#rt::Option<#rt::Value>> {
                    #rt::relation_field(ctx, &#meta, &self.id).await
                }
            }
        }
    } else {
        TokenStream::new()
    };
    // Every scalar field is read-checked (reference §5.3); relation fields are not.
    let guard = format!("{}::ReadGuard(self)", rt).replace(' ', "");
    quote! {
        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::async_graphql::SimpleObject)]
        #[graphql(crate = #krate, name = #name, #complex guard = #guard)]
        pub struct #ident {
            #(#struct_fields,)*
        }

        #relations

        impl #rt::Record for #ident {
            const META: &'static #rt::ModelMeta = &#meta;

            fn id(&self) -> &str {
                &self.id
            }

            fn decode(row: &dyn #rt::Cells) -> #rt::Result<Self, #rt::DbErr> {
                #rt::Ok(Self { #(#decoders,)* })
            }
        }
    }
}
