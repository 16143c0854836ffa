//! A readable, deterministic text form of a [`Model`], used by the front-end tests to compare the
//! lowered model with an expected file.

use std::fmt::Write as _;

use crate::model::{
    Cardinality, DefaultValue, Field, FieldKind, FunctionKind, Handler, Model, OnDelete,
    Permission, PermissionTarget, PermissionValue, PermissionVar, RelationEnd, ResolverField,
    TypeId, TypeOperation, VarSource,
};

/// Renders the model: enums, then types with one line per field, then relations, then the
/// `svc.yml` parts. Everything is in model order, so equal models give equal text.
pub fn dump(model: &Model) -> String {
    let mut out = String::new();
    // `write!` into a `String` cannot fail; results are ignored for that reason.
    for e in &model.enums {
        let _ = writeln!(out, "enum {}{}", e.name, renamed(&e.old_name));
        for v in &e.values {
            let _ = writeln!(out, "  {v}");
        }
        out.push('\n');
    }
    for (id, t) in model.type_ids() {
        let _ = writeln!(out, "type {}{}", t.name, renamed(&t.old_name));
        for (i, f) in t.fields.iter().enumerate() {
            let _ = writeln!(out, "  {}", field(model, id, i, f));
        }
        out.push('\n');
    }
    for (i, r) in model.relations.iter().enumerate() {
        let card = match model.cardinality(crate::model::RelationId(i as u32)) {
            Cardinality::OneToOne => "1:1",
            Cardinality::OneToMany => "1:n",
            Cardinality::ManyToMany => "n:m",
        };
        let sides = if r.is_single_field_self() {
            format!("{} (A = B)", end(model, r.a))
        } else {
            format!("{} (A) <-> {} (B)", end(model, r.a), end(model, r.b))
        };
        let _ = writeln!(
            out,
            "relation {}{}: {sides}, {card}",
            r.name,
            renamed(&r.old_name)
        );
    }
    if !model.relations.is_empty() {
        out.push('\n');
    }
    if !model.root_tokens.is_empty() {
        let _ = writeln!(out, "rootTokens: {}", model.root_tokens.join(", "));
    }
    for p in &model.permissions {
        let _ = write!(out, "permission {}", p.operation);
        if p.authenticated {
            out.push_str(" authenticated");
        }
        if let Some(q) = &p.query {
            let _ = write!(out, " query={q}");
        }
        if !p.fields.is_empty() {
            let _ = write!(out, " fields=[{}]", p.fields.join(", "));
        }
        out.push('\n');
        permission(&mut out, model, p);
    }
    for f in &model.functions {
        let _ = write!(out, "function {}: {}", f.name, f.kind.type_name());
        match &f.kind {
            FunctionKind::Resolver(r) => {
                let root = if r.mutation { "Mutation" } else { "Query" };
                let args: Vec<String> = r.args.iter().map(resolver_field).collect();
                let fields: Vec<String> = r.payload_fields.iter().map(resolver_field).collect();
                let ty = match (r.list, r.required) {
                    (false, false) => r.payload.clone(),
                    (false, true) => format!("{}!", r.payload),
                    (true, false) => format!("[{}!]", r.payload),
                    (true, true) => format!("[{}!]!", r.payload),
                };
                let _ = write!(
                    out,
                    " {root}.{}({}): {ty} {{ {} }}",
                    r.field,
                    args.join(", "),
                    fields.join(", ")
                );
            }
            FunctionKind::Hook { ty, op, .. } => {
                let _ = write!(out, " {}.{op:?}", model.ty(*ty).name);
            }
            FunctionKind::Subscription { query, ty, .. } => {
                let _ = write!(out, " query={query} on {}", model.ty(*ty).name);
            }
        }
        let handler = match &f.handler {
            Handler::Webhook { url, headers } => format!("webhook {url} headers={headers:?}"),
            Handler::Code {
                src, environment, ..
            } => format!("code {src} environment={environment:?}"),
            Handler::Rust { path } => format!("rust {path}"),
        };
        let _ = write!(out, " handler={handler}");
        if let Some(t) = f.timeout_ms {
            let _ = write!(out, " timeout={t}ms");
        }
        let _ = writeln!(out, " at={}", f.at);
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if out.is_empty() {
        out.push_str("(empty model)");
    }
    out.push('\n');
    out
}

/// The resolved target and the compiled query of a permission, indented under its line.
fn permission(out: &mut String, model: &Model, p: &Permission) {
    let target = match p.target {
        PermissionTarget::All => "everything".to_owned(),
        PermissionTarget::Type { ty, op } => {
            let op = match op {
                TypeOperation::Read => "read",
                TypeOperation::Create => "create",
                TypeOperation::Update => "update",
                TypeOperation::Delete => "delete",
            };
            format!("type {} {op}", model.ty(ty).name)
        }
        PermissionTarget::Relation {
            relation,
            connect,
            disconnect,
        } => {
            let ops: Vec<&str> = [(connect, "connect"), (disconnect, "disconnect")]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
            format!(
                "relation {} {}",
                model.relation(relation).name,
                ops.join("+")
            )
        }
    };
    let _ = writeln!(out, "  target: {target}");
    let Some(q) = &p.compiled else {
        return;
    };
    let _ = writeln!(out, "  query {}:", q.name);
    for line in q.text.trim_end().lines() {
        let _ = writeln!(out, "    |{}{line}", if line.is_empty() { "" } else { " " });
    }
    for c in &q.calls {
        let args: Vec<String> = c
            .args
            .iter()
            .map(|(name, v)| format!("{name}: {}", permission_value(v, &q.vars)))
            .collect();
        let _ = writeln!(
            out,
            "  call {} = exists {}({})",
            c.key,
            model.ty(c.ty).name,
            args.join(", ")
        );
    }
    let field_name = |i: usize| -> String {
        let PermissionTarget::Type { ty, .. } = p.target else {
            return format!("#{i}");
        };
        model
            .ty(ty)
            .fields
            .get(i)
            .map_or_else(|| format!("#{i}"), |f| f.name.clone())
    };
    for (i, v) in q.vars.iter().enumerate() {
        let source = match &v.source {
            VarSource::UserId => "user id".to_owned(),
            VarSource::NodeId => "node id".to_owned(),
            VarSource::NodeField(f) => format!("node field {}", field_name(*f)),
            VarSource::Input(f) => format!("input {}", field_name(*f)),
            VarSource::InputRelationId(f) => format!("input relation id {}", field_name(*f)),
            VarSource::SideA => "side A id".to_owned(),
            VarSource::SideB => "side B id".to_owned(),
        };
        let _ = writeln!(out, "  var {i} ${} = {source}", v.name);
    }
}

fn permission_value(v: &PermissionValue, vars: &[PermissionVar]) -> String {
    match v {
        PermissionValue::Null => "null".to_owned(),
        PermissionValue::Int(i) => i.to_string(),
        PermissionValue::Float(f) => format!("{f:?}"),
        PermissionValue::String(s) => quote(s),
        PermissionValue::Boolean(b) => b.to_string(),
        PermissionValue::Enum(e) => e.clone(),
        PermissionValue::List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|v| permission_value(v, vars))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        PermissionValue::Object(fields) => format!(
            "{{{}}}",
            fields
                .iter()
                .map(|(k, v)| format!("{k}: {}", permission_value(v, vars)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        PermissionValue::Var(i) => match vars.get(*i) {
            Some(var) => format!("var {i} (${})", var.name),
            None => format!("var {i} (missing)"),
        },
    }
}

fn renamed(old: &Option<String>) -> String {
    old.as_ref()
        .map(|o| format!(" (renamed from {o})"))
        .unwrap_or_default()
}

fn end(model: &Model, e: RelationEnd) -> String {
    format!("{}.{}", model.ty(e.ty).name, model.end_field(e).name)
}

fn field(model: &Model, ty: TypeId, index: usize, f: &Field) -> String {
    let base = match f.kind {
        FieldKind::Scalar(s) => s.name().to_owned(),
        FieldKind::Enum(e) => model.enum_def(e).name.clone(),
        FieldKind::Relation { target, .. } => model.ty(target).name.clone(),
    };
    let mut out = format!("{}: ", f.name);
    match (f.list, f.required) {
        (true, _) => {
            let _ = write!(out, "[{base}!]");
        }
        (false, true) => {
            let _ = write!(out, "{base}!");
        }
        (false, false) => out.push_str(&base),
    }
    match f.kind {
        FieldKind::Scalar(_) => out.push_str(" scalar"),
        FieldKind::Enum(_) => out.push_str(" enum"),
        FieldKind::Relation { relation, .. } => {
            let r = model.relation(relation);
            let me = RelationEnd { ty, field: index };
            let side = match (r.a == me, r.b == me) {
                (true, true) => "A+B",
                (true, false) => "A",
                _ => "B",
            };
            let _ = write!(out, " relation {} side {side}", r.name);
        }
    }
    if f.unique {
        out.push_str(" unique");
    }
    if f.search {
        out.push_str(" search");
    }
    if let Some(d) = &f.default {
        let _ = write!(out, " default={}", value(d));
    }
    if let Some(d) = &f.migration_value {
        let _ = write!(out, " migrationValue={}", value(d));
    }
    // Only the extension's non-default value is shown, so dumps of reference models stay as
    // they were.
    if f.on_delete != OnDelete::SetNull {
        let _ = write!(out, " onDelete={}", f.on_delete.name());
    }
    out.push_str(&renamed(&f.old_name));
    out
}

fn value(v: &DefaultValue) -> String {
    match v {
        DefaultValue::String(s) | DefaultValue::DateTime(s) => quote(s),
        DefaultValue::Int(i) => i.to_string(),
        DefaultValue::Float(f) => format!("{f:?}"),
        DefaultValue::Boolean(b) => b.to_string(),
        DefaultValue::Enum(e) => e.clone(),
        DefaultValue::Json(j) => format!("json {j}"),
        DefaultValue::List(items) => {
            format!(
                "[{}]",
                items.iter().map(value).collect::<Vec<_>>().join(", ")
            )
        }
    }
}

/// A string as a JSON literal, so escapes are unambiguous.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

fn resolver_field(f: &ResolverField) -> String {
    let scalar = format!("{:?}", f.scalar);
    match (f.list, f.required) {
        (false, false) => format!("{}: {scalar}", f.name),
        (false, true) => format!("{}: {scalar}!", f.name),
        (true, false) => format!("{}: [{scalar}!]", f.name),
        (true, true) => format!("{}: [{scalar}!]!", f.name),
    }
}
