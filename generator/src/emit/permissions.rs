//! The compiled `permissions:` of `svc.yml`: a data table (`ServiceMeta::permissions`) the
//! runtime's permission engine reads. Field indices are translated from the model's declaration
//! order to the runtime's column and relation-field order.

use proc_macro2::TokenStream;
use quote::quote;

use super::{column_index, columns, rel_fields, rt};
use crate::model::{
    Model, Permission, PermissionQuery, PermissionTarget, PermissionValue, TypeId, TypeOperation,
    VarSource,
};

/// `&[PermissionMeta, …]` for `ServiceMeta::permissions`.
pub(super) fn table(model: &Model) -> TokenStream {
    let items = model.permissions.iter().map(|p| permission(model, p));
    quote!(&[#(#items),*])
}

fn permission(model: &Model, p: &Permission) -> TokenStream {
    let rt = rt();
    let (target, ty) = match p.target {
        PermissionTarget::All => (quote!(#rt::PermissionTarget::All), None),
        PermissionTarget::Type { ty, op } => {
            let index = ty.0 as usize;
            let op = match op {
                TypeOperation::Read => quote!(Read),
                TypeOperation::Create => quote!(Create),
                TypeOperation::Update => quote!(Update),
                TypeOperation::Delete => quote!(Delete),
            };
            (
                quote!(#rt::PermissionTarget::Type { model: #index, op: #rt::Operation::#op }),
                Some(ty),
            )
        }
        PermissionTarget::Relation {
            relation,
            connect,
            disconnect,
        } => {
            let index = relation.0 as usize;
            (
                quote!(#rt::PermissionTarget::Relation {
                    relation: #index, connect: #connect, disconnect: #disconnect
                }),
                None,
            )
        }
    };
    let authenticated = p.authenticated;
    let fields = if p.fields.is_empty() {
        quote!(#rt::None)
    } else {
        let names = &p.fields;
        quote!(#rt::Some(&[#(#names),*]))
    };
    let query = match &p.compiled {
        Some(q) => {
            let q = query(model, ty, q);
            quote!(#rt::Some(&#q))
        }
        None => quote!(#rt::None),
    };
    quote! {
        #rt::PermissionMeta { target: #target, authenticated: #authenticated, fields: #fields, query: #query }
    }
}

fn query(model: &Model, ty: Option<TypeId>, q: &PermissionQuery) -> TokenStream {
    let rt = rt();
    let name = &q.name;
    let calls = q.calls.iter().map(|c| {
        let index = c.ty.0 as usize;
        let args = c.args.iter().map(|(k, v)| {
            let v = value(v);
            quote!((#k, #v))
        });
        quote!(#rt::ExistsCall { model: #index, args: &[#(#args),*] })
    });
    let vars = q.vars.iter().map(|v| {
        let name = &v.name;
        let source = var_source(model, ty, &v.source);
        quote!((#name, #source))
    });
    quote! {
        #rt::PermissionQuery { name: #name, calls: &[#(#calls),*], vars: &[#(#vars),*] }
    }
}

/// The runtime's source of a variable; field indices become column (or relation-field) indices
/// of the permission's type.
fn var_source(model: &Model, ty: Option<TypeId>, source: &VarSource) -> TokenStream {
    let rt = rt();
    let column = |field: usize| {
        let ty = ty.unwrap_or(TypeId(0));
        let name = &model.ty(ty).fields[field].name;
        column_index(&columns(model, ty), name)
    };
    match *source {
        VarSource::UserId => quote!(#rt::VarSource::UserId),
        VarSource::NodeId => quote!(#rt::VarSource::NodeId),
        VarSource::NodeField(f) => {
            let i = column(f);
            quote!(#rt::VarSource::NodeField(#i))
        }
        VarSource::Input(f) => {
            let i = column(f);
            quote!(#rt::VarSource::Input(#i))
        }
        VarSource::InputRelationId(f) => {
            let ty = ty.unwrap_or(TypeId(0));
            let name = &model.ty(ty).fields[f].name;
            let i = rel_fields(model, ty)
                .iter()
                .position(|r| &r.field.name == name)
                .unwrap_or(0);
            quote!(#rt::VarSource::InputRelationId(#i))
        }
        VarSource::SideA => quote!(#rt::VarSource::SideA),
        VarSource::SideB => quote!(#rt::VarSource::SideB),
    }
}

fn value(v: &PermissionValue) -> TokenStream {
    let rt = rt();
    match v {
        PermissionValue::Null => quote!(#rt::PermValue::Null),
        PermissionValue::Int(i) => quote!(#rt::PermValue::Int(#i)),
        PermissionValue::Float(f) => quote!(#rt::PermValue::Float(#f)),
        PermissionValue::String(s) => quote!(#rt::PermValue::String(#s)),
        PermissionValue::Boolean(b) => quote!(#rt::PermValue::Boolean(#b)),
        PermissionValue::Enum(e) => quote!(#rt::PermValue::Enum(#e)),
        PermissionValue::List(items) => {
            let items = items.iter().map(value);
            quote!(#rt::PermValue::List(&[#(#items),*]))
        }
        PermissionValue::Object(fields) => {
            let fields = fields.iter().map(|(k, v)| {
                let v = value(v);
                quote!((#k, #v))
            });
            quote!(#rt::PermValue::Object(&[#(#fields),*]))
        }
        PermissionValue::Var(i) => quote!(#rt::PermValue::Var(#i)),
    }
}
