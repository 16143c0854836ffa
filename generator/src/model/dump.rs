//! A readable, deterministic text form of a [`Model`], used by the front-end tests to compare the
//! lowered model with an expected file.

use std::fmt::Write as _;

use crate::model::{
    Cardinality, DefaultValue, Field, FieldKind, Model, OnDelete, RelationEnd, TypeId,
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
    }
    for f in &model.functions {
        let _ = writeln!(out, "function {}: {}", f.name, f.kind);
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    if out.is_empty() {
        out.push_str("(empty model)");
    }
    out.push('\n');
    out
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
