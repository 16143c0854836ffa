//! The `functions:` of `svc.yml`: a data table (`ServiceMeta::functions`) the runtime invokes
//! them from. Rust handlers (`rust:`) are not run by this version: the generator refuses them
//! (`crate::functions`), so they never reach this table.

use proc_macro2::TokenStream;
use quote::quote;

use super::rt;
use crate::model::{
    Function, FunctionKind, Handler, Model, ResolverField, ScalarType, TypeOperation,
};

/// `&[FunctionMeta, …]` for `ServiceMeta::functions`.
pub(super) fn table(model: &Model) -> TokenStream {
    let items = model.functions.iter().filter_map(function);
    quote!(&[#(#items),*])
}

fn function(f: &Function) -> Option<TokenStream> {
    let rt = rt();
    let name = &f.name;
    let at = &f.at;
    let timeout = f.timeout_ms.unwrap_or(0);
    let kind = match &f.kind {
        FunctionKind::Resolver(r) => {
            let (mutation, field, payload, list, required) =
                (r.mutation, &r.field, &r.payload, r.list, r.required);
            let args = r.args.iter().map(resolver_field);
            let fields = r.payload_fields.iter().map(resolver_field);
            quote!(#rt::FunctionKind::Resolver(#rt::ResolverMeta {
                mutation: #mutation, field: #field, args: &[#(#args),*], payload: #payload,
                fields: &[#(#fields),*], list: #list, required: #required,
            }))
        }
        FunctionKind::Hook { before, ty, op } => {
            let index = ty.0 as usize;
            let op = match op {
                TypeOperation::Create => quote!(Create),
                TypeOperation::Update => quote!(Update),
                TypeOperation::Delete => quote!(Delete),
                TypeOperation::Read => quote!(Read),
            };
            quote!(#rt::FunctionKind::Hook { before: #before, model: #index, op: #rt::Operation::#op })
        }
        FunctionKind::Subscription { query } => {
            quote!(#rt::FunctionKind::Subscription { query: #query })
        }
    };
    let handler = match &f.handler {
        Handler::Webhook { url, headers } => {
            let headers = headers.iter().map(|(k, v)| quote!((#k, #v)));
            quote!(#rt::HandlerMeta::Webhook { url: #url, headers: &[#(#headers),*] })
        }
        Handler::Code { src, environment } => {
            let env = environment.iter().map(|(k, v)| quote!((#k, #v)));
            quote!(#rt::HandlerMeta::Code { src: #src, environment: &[#(#env),*] })
        }
        Handler::Rust { .. } => return None,
    };
    Some(quote! {
        #rt::FunctionMeta {
            name: #name, kind: #kind, handler: #handler, timeout_ms: #timeout, at: #at,
        }
    })
}

fn resolver_field(f: &ResolverField) -> TokenStream {
    let rt = rt();
    let name = &f.name;
    let kind = match f.scalar {
        ScalarType::Id => quote!(Id),
        ScalarType::String => quote!(String),
        ScalarType::Int => quote!(Int),
        ScalarType::Float => quote!(Float),
        ScalarType::Boolean => quote!(Boolean),
        ScalarType::DateTime => quote!(DateTime),
        ScalarType::Json => quote!(Json),
    };
    let (list, required) = (f.list, f.required);
    quote!(#rt::ResolverField { name: #name, kind: #rt::Kind::#kind, list: #list, required: #required })
}
