//! Model types: the data table the runtime reads (`__META_<Type>`), the typed record that is the
//! GraphQL object type, and its row decoder.

use proc_macro2::TokenStream;
use quote::quote;

use super::{
    Column, column_index, columns, field_ident, gql_crate, meta_ident, record_type, rt, type_ident,
};
use crate::model::{DefaultValue, FieldKind, Model, ScalarType, TypeId};
use crate::naming;

pub(super) fn emit(model: &Model) -> TokenStream {
    model
        .type_ids()
        .map(|(id, _)| {
            let meta = emit_meta(model, id);
            let record = emit_record(model, id);
            quote!(#meta #record)
        })
        .collect()
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
        };
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

fn emit_lit(value: &DefaultValue) -> TokenStream {
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
    quote! {
        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::async_graphql::SimpleObject)]
        #[graphql(crate = #krate, name = #name)]
        pub struct #ident {
            #(#struct_fields,)*
        }

        impl #rt::Record for #ident {
            const META: &'static #rt::ModelMeta = &#meta;

            fn decode(
                row: &#rt::QueryResult,
                backend: #rt::Backend,
            ) -> ::core::result::Result<Self, #rt::DbErr> {
                ::core::result::Result::Ok(Self { #(#decoders,)* })
            }
        }
    }
}
