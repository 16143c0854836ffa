//! Project enums: a Rust enum per `enum` with the GraphQL enum derive and the runtime's
//! conversions.

use proc_macro2::TokenStream;
use quote::quote;

use super::{gql_crate, rt, type_ident};
use crate::model::{EnumDef, Model};

pub(super) fn emit(model: &Model) -> TokenStream {
    model.enums.iter().map(emit_enum).collect()
}

fn emit_enum(e: &EnumDef) -> TokenStream {
    let rt = rt();
    let krate = gql_crate();
    let name = &e.name;
    let ident = type_ident(name);
    let variants: Vec<_> = e.values.iter().map(|v| type_ident(v)).collect();
    let values = &e.values;
    let doc = format!("The enum `{name}` of the data model.");
    quote! {
        #[doc = #doc]
        #[derive(
            ::core::fmt::Debug,
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::cmp::PartialEq,
            ::core::cmp::Eq,
            #rt::async_graphql::Enum
        )]
        #[graphql(crate = #krate, name = #name)]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        pub enum #ident {
            #( #[graphql(name = #values)] #variants, )*
        }

        impl #rt::EnumValue for #ident {
            const VALUES: &'static [(&'static str, Self)] = &[ #( (#values, Self::#variants), )* ];

            fn name(self) -> &'static str {
                match self {
                    #( Self::#variants => #values, )*
                }
            }
        }

        #rt::enum_conversions!(#ident);
    }
}
