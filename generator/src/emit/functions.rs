//! The `functions:` of `svc.yml`: a data table (`ServiceMeta::functions`) the runtime invokes
//! them from, and for Rust handlers (`rust:`) the types of their events and answers (module
//! `handlers`) and the glue that calls them, so that `cargo build` checks each handler's type.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::{columns, field_ident, rt};
use crate::model::{
    Field, FieldKind, Function, FunctionKind, Handler, Model, ResolverField, ScalarType, Selected,
    TypeId, TypeOperation,
};
use crate::naming::{function_type_prefix as pascal, identifier_text as sanitize};

/// `&[FunctionMeta, …]` for `ServiceMeta::functions`.
pub(super) fn table(model: &Model) -> TokenStream {
    let items = model.functions.iter().map(function);
    quote!(&[#(#items),*])
}

/// The module `handlers` (the types of the Rust handlers' events and answers) and the glue of
/// each Rust handler; nothing when no function has a Rust handler.
pub(super) fn rust_handlers(model: &Model) -> TokenStream {
    let rt = rt();
    let mut types = Vec::new();
    let mut glue = Vec::new();
    for f in &model.functions {
        let Handler::Rust { path } = &f.handler else {
            continue;
        };
        let Ok(path) = syn::parse_str::<syn::Path>(path) else {
            continue;
        };
        let pascal = pascal(&f.name);
        let marker = format_ident!(
            "Function_{}_declared_at_{}",
            sanitize(&f.name),
            sanitize(&f.at)
        );
        let event = format_ident!("{pascal}Event");
        let doc = format!("The function `{}` ({}).", f.name, f.at);
        let (data, out, items) = match &f.kind {
            FunctionKind::Resolver(r) => {
                let args = format_ident!("{pascal}Args");
                let payload = format_ident!("{}", super::type_ident(&r.payload));
                let arg_fields = r.args.iter().map(resolver_member);
                let payload_fields = r.payload_fields.iter().map(resolver_member);
                let items = quote! {
                    #[doc = "The arguments of the resolver's field."]
                    #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::serde::Serialize, #rt::serde::Deserialize)]
                    #[serde(crate = "::svc_runtime::__codegen::serde")]
                    pub struct #args { #(#arg_fields)* }
                    #[doc = "The resolver's payload."]
                    #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::default::Default, #rt::serde::Serialize, #rt::serde::Deserialize)]
                    #[serde(crate = "::svc_runtime::__codegen::serde")]
                    pub struct #payload { #(#payload_fields)* }
                };
                let out = if r.list {
                    quote!(#rt::Vec<handlers::#payload>)
                } else {
                    quote!(handlers::#payload)
                };
                (quote!(#args), out, items)
            }
            FunctionKind::Hook { before, ty, op } => {
                let data = format_ident!("{pascal}Data");
                let def = model.ty(*ty);
                let mut members = Vec::new();
                match (before, op) {
                    (true, TypeOperation::Delete) => {
                        members.push(quote!(pub id: #rt::String,));
                    }
                    (true, _) => {
                        members.push(quote!(pub id: #rt::String,));
                        for (_, field) in def.column_fields() {
                            if matches!(field.name.as_str(), "id" | "createdAt" | "updatedAt") {
                                continue;
                            }
                            members.push(optional_member(field));
                        }
                        members.push(quote! {
                            #[doc = "The relation arguments (`<f>Id`, `<f>Ids`, nested objects), as given."]
                            #[serde(flatten)]
                            pub relations: #rt::serde_json::Map<#rt::String, #rt::serde_json::Value>,
                        });
                    }
                    (false, _) => {
                        for column in columns(model, *ty) {
                            match column.field {
                                Some(field) if field.name == "id" => {
                                    members.push(quote!(pub id: #rt::String,));
                                }
                                Some(field) => members.push(optional_member(field)),
                                None => {
                                    let name = column.name;
                                    let ident = field_ident(name);
                                    members.push(quote! {
                                        #[serde(rename = #name, default, skip_serializing_if = "::core::option::Option::is_none")]
                                        pub #ident: #rt::Option<#rt::String>,
                                    });
                                }
                            }
                        }
                    }
                }
                let what = if *before {
                    "The write's arguments (a value that is `None` is not written)."
                } else {
                    "The node's values (a value that is `None` is left as it is)."
                };
                let items = quote! {
                    #[doc = #what]
                    #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::serde::Serialize, #rt::serde::Deserialize)]
                    #[serde(crate = "::svc_runtime::__codegen::serde")]
                    pub struct #data { #(#members)* }
                };
                let out = if matches!((before, op), (true, TypeOperation::Delete)) {
                    quote!(())
                } else {
                    quote!(handlers::#data)
                };
                (quote!(#data), out, items)
            }
            FunctionKind::Subscription {
                ty, key, selection, ..
            } => {
                let data = format_ident!("{pascal}Data");
                let items = match selection {
                    Some(selection) => {
                        let mut structs = Vec::new();
                        let payload =
                            subscription_payload(model, *ty, &pascal, selection, &mut structs);
                        let member = field_ident(key);
                        quote! {
                            #[doc = "The subscription query's result."]
                            #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::serde::Serialize, #rt::serde::Deserialize)]
                            #[serde(crate = "::svc_runtime::__codegen::serde")]
                            pub struct #data {
                                #[serde(rename = #key)]
                                pub #member: #payload,
                            }
                            #(#structs)*
                        }
                    }
                    // A query that spreads fragments: its result as JSON.
                    None => quote! {
                        #[doc = "The subscription query's result."]
                        pub type #data = #rt::serde_json::Value;
                    },
                };
                (quote!(#data), quote!(()), items)
            }
        };
        types.push(quote! {
            #[doc = #doc]
            #[allow(non_camel_case_types)]
            #[derive(::core::fmt::Debug)]
            pub struct #marker;
            #items
            #[doc = #doc]
            pub type #event = #rt::Event<#data>;
        });
        let glue_name = glue_ident(f);
        // The handler is bound to a name that says which function it is for and where `svc.yml`
        // declares it: a path that names nothing fails the build on this line, which the
        // compiler shows.
        let binding = format_ident!(
            "handler_of_{}_declared_at_{}",
            sanitize(&f.name),
            sanitize(&f.at)
        );
        glue.push(quote! {
            #[doc = #doc]
            fn #glue_name(data: #rt::serde_json::Value, context: #rt::FunctionContext) -> #rt::RustReply {
                #[allow(non_snake_case)]
                let #binding = #path;
                #rt::call_handler::<handlers::#marker, handlers::#data, #out, _>(data, context, #binding)
            }
        });
    }
    if glue.is_empty() {
        return TokenStream::new();
    }
    quote! {
        /// The types of the events and answers of the Rust handlers of `svc.yml`.
        pub mod handlers {
            use ::svc_runtime::__codegen as __rt;
            #(#types)*
        }
        #(#glue)*
    }
}

/// The struct of a subscription payload's selection (`<Prefix>Payload`), and those of its
/// nested selections into `structs`; its name.
fn subscription_payload(
    model: &Model,
    ty: TypeId,
    prefix: &str,
    selection: &[Selected],
    structs: &mut Vec<TokenStream>,
) -> proc_macro2::Ident {
    let rt = rt();
    let name = format_ident!("{prefix}Payload");
    let members: Vec<TokenStream> = selection
        .iter()
        .map(|s| {
            let key = &s.key;
            match s.name.as_str() {
                "mutation" | "__typename" => member(key, quote!(#rt::String)),
                "updatedFields" => optional(key, quote!(#rt::Vec<#rt::String>)),
                "node" | "previousValues" => {
                    let nested = format!("{prefix}{}", pascal(key));
                    let nested = node_struct(model, ty, &nested, &s.children, structs);
                    optional(key, quote!(#nested))
                }
                _ => optional(key, quote!(#rt::serde_json::Value)),
            }
        })
        .collect();
    structs.push(selection_struct(
        &name,
        "The subscription's payload.",
        &members,
    ));
    name
}

/// The struct `name` of a selection on a node of `ty`, and those of its nested selections into
/// `structs`; its name. A required scalar is a value, other scalars are `Option`s, a to-one
/// relation an `Option` of its struct, a to-many relation a `Vec`.
fn node_struct(
    model: &Model,
    ty: TypeId,
    name: &str,
    selection: &[Selected],
    structs: &mut Vec<TokenStream>,
) -> proc_macro2::Ident {
    let rt = rt();
    let members: Vec<TokenStream> = selection
        .iter()
        .map(|s| {
            let key = &s.key;
            let field = model.ty(ty).fields.iter().find(|f| f.name == s.name);
            let value = match field.map(|f| &f.kind) {
                Some(FieldKind::Scalar(scalar)) => scalar_type(*scalar),
                Some(FieldKind::Enum(_)) => quote!(#rt::String),
                Some(FieldKind::Relation { target, .. }) => {
                    let nested = format!("{name}{}", pascal(key));
                    let nested = node_struct(model, *target, &nested, &s.children, structs);
                    quote!(#nested)
                }
                None => {
                    return match s.name.as_str() {
                        "id" | "createdAt" | "updatedAt" | "__typename" => {
                            member(key, quote!(#rt::String))
                        }
                        _ => optional(key, quote!(#rt::serde_json::Value)),
                    };
                }
            };
            match field {
                Some(f) if f.list => defaulted(key, quote!(#rt::Vec<#value>)),
                Some(f)
                    if f.required
                        && matches!(f.kind, FieldKind::Scalar(_) | FieldKind::Enum(_)) =>
                {
                    member(key, value)
                }
                _ => optional(key, value),
            }
        })
        .collect();
    let name = format_ident!("{name}");
    structs.push(selection_struct(
        &name,
        "A node as the subscription selects it.",
        &members,
    ));
    name
}

/// A member `key` of type `ty`, which the answer always holds.
fn member(key: &str, ty: TokenStream) -> TokenStream {
    let ident = field_ident(key);
    quote!(#[serde(rename = #key)] pub #ident: #ty,)
}

/// A member `key` of type `ty`, its default when the answer lacks it.
fn defaulted(key: &str, ty: TokenStream) -> TokenStream {
    let ident = field_ident(key);
    quote!(#[serde(rename = #key, default)] pub #ident: #ty,)
}

/// A member `key` that may be null or absent.
fn optional(key: &str, ty: TokenStream) -> TokenStream {
    let rt = rt();
    defaulted(key, quote!(#rt::Option<#ty>))
}

fn selection_struct(name: &proc_macro2::Ident, doc: &str, members: &[TokenStream]) -> TokenStream {
    let rt = rt();
    quote! {
        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, #rt::serde::Serialize, #rt::serde::Deserialize)]
        #[serde(crate = "::svc_runtime::__codegen::serde")]
        pub struct #name { #(#members)* }
    }
}

fn glue_ident(f: &Function) -> proc_macro2::Ident {
    format_ident!("__function_{}", sanitize(&f.name))
}

/// The Rust type of one value of a scalar.
fn scalar_type(scalar: ScalarType) -> TokenStream {
    let rt = rt();
    match scalar {
        ScalarType::Id | ScalarType::String | ScalarType::DateTime => quote!(#rt::String),
        ScalarType::Int => quote!(i32),
        ScalarType::Float => quote!(f64),
        ScalarType::Boolean => quote!(bool),
        ScalarType::Json => quote!(#rt::serde_json::Value),
    }
}

/// A member of a resolver's argument or payload struct.
fn resolver_member(f: &ResolverField) -> TokenStream {
    let rt = rt();
    let name = &f.name;
    let ident = field_ident(name);
    let mut ty = scalar_type(f.scalar);
    if f.list {
        ty = quote!(#rt::Vec<#ty>);
    }
    if f.required {
        quote!(#[serde(rename = #name)] pub #ident: #ty,)
    } else {
        quote! {
            #[serde(rename = #name, default, skip_serializing_if = "::core::option::Option::is_none")]
            pub #ident: #rt::Option<#ty>,
        }
    }
}

/// A member for a model field, `None` when absent.
fn optional_member(field: &Field) -> TokenStream {
    let rt = rt();
    let name = &field.name;
    let ident = field_ident(name);
    let mut ty = match field.kind {
        FieldKind::Scalar(s) => scalar_type(s),
        _ => quote!(#rt::String),
    };
    if field.list {
        ty = quote!(#rt::Vec<#ty>);
    }
    quote! {
        #[serde(rename = #name, default, skip_serializing_if = "::core::option::Option::is_none")]
        pub #ident: #rt::Option<#ty>,
    }
}

fn function(f: &Function) -> TokenStream {
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
        FunctionKind::Subscription {
            query, text, ty, ..
        } => {
            let index = ty.0 as usize;
            quote!(#rt::FunctionKind::Subscription { query: #query, text: #text, model: #index })
        }
    };
    let handler = match &f.handler {
        Handler::Webhook { url, headers } => {
            let headers = headers.iter().map(|(k, v)| quote!((#k, #v)));
            quote!(#rt::HandlerMeta::Webhook { url: #url, headers: &[#(#headers),*] })
        }
        Handler::Code {
            src,
            environment,
            dir,
        } => {
            let env = environment.iter().map(|(k, v)| quote!((#k, #v)));
            quote!(#rt::HandlerMeta::Code { src: #src, environment: &[#(#env),*], dir: #dir })
        }
        Handler::Rust { .. } => {
            let glue = glue_ident(f);
            quote!(#rt::HandlerMeta::Rust(#glue))
        }
    };
    quote! {
        #rt::FunctionMeta {
            name: #name, kind: #kind, handler: #handler, timeout_ms: #timeout, at: #at,
        }
    }
}

fn resolver_field(f: &ResolverField) -> TokenStream {
    let rt = rt();
    let name = &f.name;
    let kind = super::scalar_kind(f.scalar);
    let (list, required) = (f.list, f.required);
    quote!(#rt::ResolverField { name: #name, kind: #rt::Kind::#kind, list: #list, required: #required })
}
