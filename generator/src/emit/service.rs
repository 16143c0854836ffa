//! The service definition: the data table of the whole model and the `Service` type a binary
//! runs with `svc_runtime::run::<Service>()`.

use proc_macro2::TokenStream;
use quote::quote;

use super::{meta_ident, rt};
use crate::model::Model;

pub(super) fn emit(model: &Model) -> TokenStream {
    let rt = rt();
    let metas = model.type_ids().map(|(id, _)| meta_ident(model, id));
    let relations = model.relations.iter().map(|rel| {
        let name = &rel.name;
        let table = format!("_{name}");
        let a = &model.ty(rel.a.ty).name;
        let b = &model.ty(rel.b.ty).name;
        let a_list = model.end_field(rel.a).list;
        let b_list = model.end_field(rel.b).list;
        quote! {
            #rt::RelationMeta { name: #name, table: #table, a: #a, b: #b, a_list: #a_list, b_list: #b_list }
        }
    });
    let root_tokens = &model.root_tokens;
    let permissions = super::permissions::table(model);
    quote! {
        #[doc(hidden)]
        pub static __SERVICE_META: #rt::ServiceMeta = #rt::ServiceMeta {
            name: ::core::env!("CARGO_PKG_NAME"),
            models: &[#(&#metas),*],
            relations: &[#(#relations),*],
            root_tokens: &[#(#root_tokens),*],
            permissions: #permissions,
        };

        /// The service: run it with `svc_runtime::run::<Service>()`.
        #[derive(::core::fmt::Debug)]
        pub struct Service;

        impl #rt::ServiceDef for Service {
            type Query = Query;
            type Mutation = Mutation;
            type Permissions = PermissionQuery;
            const META: &'static #rt::ServiceMeta = &__SERVICE_META;
            const DIR: &'static str = ::core::env!("CARGO_MANIFEST_DIR");
        }
    }
}
