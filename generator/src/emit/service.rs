//! The service definition: the data table of the whole model and the `Service` type a binary
//! runs with `svc_runtime::run::<Service>()`.

use proc_macro2::TokenStream;
use quote::quote;

use super::{meta_ident, rt};
use crate::model::{Model, RelationId};

pub(super) fn emit(model: &Model) -> TokenStream {
    let rt = rt();
    let metas = model.type_ids().map(|(id, _)| meta_ident(model, id));
    let relations = model.relations.iter().enumerate().map(|(r, rel)| {
        let name = &rel.name;
        let table = format!("_{name}");
        let a = &model.ty(rel.a.ty).name;
        let b = &model.ty(rel.b.ty).name;
        let a_list = model.end_field(rel.a).list;
        let b_list = model.end_field(rel.b).list;
        let a_name = model.relation_a_name(RelationId(r as u32));
        let b_name = model.relation_b_name(RelationId(r as u32));
        quote! {
            #rt::RelationMeta {
                name: #name, table: #table, a: #a, b: #b, a_list: #a_list, b_list: #b_list,
                a_name: #a_name, b_name: #b_name,
            }
        }
    });
    // `node(id)` needs the interface over every model; without models there is no `node`.
    let node = if model.types.is_empty() {
        quote!(#rt::QueryMeta)
    } else {
        quote!(Node)
    };
    // The record types in the order of the tables, then the relations by index.
    let records = model.type_ids().map(|(_, ty)| super::type_ident(&ty.name));
    let relation_indices = 0..model.relations.len();
    let visits = if model.types.is_empty() && model.relations.is_empty() {
        quote!(let _ = visitor;)
    } else {
        quote! {
            #(visitor.record::<#records>();)*
            #(visitor.relation::<#relation_indices>();)*
        }
    };
    let root_tokens = &model.root_tokens;
    let permissions = super::permissions::table(model);
    let hints = migration_hints(model);
    let functions = super::functions::table(model);
    let enums = model.enums.iter().map(|e| {
        let (name, values) = (&e.name, &e.values);
        quote!(#rt::EnumMeta { name: #name, values: &[#(#values),*] })
    });
    quote! {
        #[doc(hidden)]
        pub static __SERVICE_META: #rt::ServiceMeta = #rt::ServiceMeta {
            name: ::core::env!("CARGO_PKG_NAME"),
            models: &[#(&#metas),*],
            relations: &[#(#relations),*],
            root_tokens: &[#(#root_tokens),*],
            permissions: #permissions,
            migration_hints: &[#(#hints),*],
            enums: &[#(#enums),*],
            functions: #functions,
        };

        /// The service: run it with `svc_runtime::run::<Service>()`.
        #[derive(::core::fmt::Debug)]
        pub struct Service;

        impl #rt::ServiceDef for Service {
            type Node = #node;
            const META: &'static #rt::ServiceMeta = &__SERVICE_META;
            const DIR: &'static str = ::core::env!("CARGO_MANIFEST_DIR");
            fn visit<V: #rt::Visitor>(visitor: &mut V) {
                #visits
            }
        }
    }
}

/// The temporary migration directives: renames of types, fields and relations, and migration
/// values.
fn migration_hints(model: &Model) -> Vec<TokenStream> {
    let rt = rt();
    let mut out = Vec::new();
    for (_, ty) in model.type_ids() {
        let name = &ty.name;
        if let Some(from) = &ty.old_name {
            out.push(quote!(#rt::MigrationHint::RenamedModel { model: #name, from: #from }));
        }
        for f in &ty.fields {
            let field = &f.name;
            if let Some(from) = &f.old_name {
                out.push(quote!(#rt::MigrationHint::RenamedField { model: #name, field: #field, from: #from }));
            }
            if let Some(value) = &f.migration_value {
                let value = super::records::emit_lit(value);
                out.push(quote!(#rt::MigrationHint::Value { model: #name, field: #field, value: #value }));
            }
        }
    }
    for rel in &model.relations {
        if let Some(from) = &rel.old_name {
            let relation = &rel.name;
            out.push(
                quote!(#rt::MigrationHint::RenamedRelation { relation: #relation, from: #from }),
            );
        }
    }
    out
}
