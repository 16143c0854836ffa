//! The permission schema has two sources: the generator writes it as SDL and validates every
//! permission query file against it at build time, and the runtime registers the schema
//! `/permissions` serves from the generic filter and order types. Both must agree exactly, or a
//! query that passed the build would fail (or mean something else) when it runs. This module
//! compares them type by type, field by field, in order.

use std::collections::BTreeMap;
use std::path::Path;

use apollo_compiler::schema::ExtendedType;
use serde_json::Value;

use crate::simple::introspection::{INTROSPECTION, sdl};

/// The generator's permission schema of the example model, parsed.
fn generated() -> apollo_compiler::Schema {
    let svc_yml = Path::new(env!("CARGO_MANIFEST_DIR")).join("../example-model/svc.yml");
    let loaded = svc_generator::frontend::load(&svc_yml)
        .unwrap_or_else(|_| panic!("the example model does not load"));
    let text = svc_generator::permissions::schema::permission_schema_sdl(&loaded.model);
    apollo_compiler::Schema::parse_and_validate(text, "permissions.graphql")
        .unwrap_or_else(|e| panic!("the generated permission schema is invalid: {e}"))
        .into_inner()
}

/// What a type declares, one line per member in order: `field(arg: T, …): T` for objects,
/// `field: T` for input objects, the value names for enums, nothing for scalars.
fn members_of_sdl(ty: &ExtendedType) -> (String, Vec<String>) {
    match ty {
        ExtendedType::Object(o) => (
            "OBJECT".into(),
            o.fields
                .values()
                .map(|f| {
                    let args: Vec<String> = f
                        .arguments
                        .iter()
                        .map(|a| format!("{}: {}", a.name, a.ty))
                        .collect();
                    format!("{}({}): {}", f.name, args.join(", "), f.ty)
                })
                .collect(),
        ),
        ExtendedType::InputObject(o) => (
            "INPUT_OBJECT".into(),
            o.fields
                .values()
                .map(|f| format!("{}: {}", f.name, f.ty))
                .collect(),
        ),
        ExtendedType::Enum(e) => (
            "ENUM".into(),
            e.values.keys().map(ToString::to_string).collect(),
        ),
        ExtendedType::Scalar(_) => ("SCALAR".into(), Vec::new()),
        ExtendedType::Interface(_) => ("INTERFACE".into(), Vec::new()),
        ExtendedType::Union(_) => ("UNION".into(), Vec::new()),
    }
}

/// The same description of an introspected type.
fn members_of_introspection(ty: &Value) -> (String, Vec<String>) {
    let kind = ty["kind"].as_str().unwrap_or("?").to_owned();
    let list = |key: &str| ty[key].as_array().cloned().unwrap_or_default();
    let members = match kind.as_str() {
        "OBJECT" => list("fields")
            .iter()
            .map(|f| {
                let args: Vec<String> = f["args"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| format!("{}: {}", a["name"].as_str().unwrap_or("?"), sdl(&a["type"])))
                    .collect();
                format!(
                    "{}({}): {}",
                    f["name"].as_str().unwrap_or("?"),
                    args.join(", "),
                    sdl(&f["type"])
                )
            })
            .collect(),
        "INPUT_OBJECT" => list("inputFields")
            .iter()
            .map(|f| format!("{}: {}", f["name"].as_str().unwrap_or("?"), sdl(&f["type"])))
            .collect(),
        "ENUM" => list("enumValues")
            .iter()
            .map(|v| v["name"].as_str().unwrap_or("?").to_owned())
            .collect(),
        _ => Vec::new(),
    };
    (kind, members)
}

db_tests! {
    /// Every type of the generated permission schema is served by `/permissions` with the same
    /// kind and the same members in the same order, and the endpoint serves no type the
    /// generated schema lacks (the built-in scalars and introspection types aside).
    async fn generated_permission_schema_is_what_the_endpoint_serves(srv) {
        let schema = generated();
        let res = srv.permissions_as(Some(srv.root_token()), INTROSPECTION).await;
        let served: BTreeMap<String, Value> = res["data"]["__schema"]["types"]
            .as_array()
            .unwrap_or_else(|| panic!("no introspection result: {res}"))
            .iter()
            .map(|t| (t["name"].as_str().unwrap_or("?").to_owned(), t.clone()))
            .collect();
        assert_eq!(res["data"]["__schema"]["queryType"]["name"], "Query");
        let mut compared = 0;
        for (name, ty) in &schema.types {
            if ty.is_built_in() {
                continue;
            }
            let Some(introspected) = served.get(name.as_str()) else {
                panic!("`{name}` is in the generated permission schema but not served");
            };
            assert_eq!(
                members_of_introspection(introspected),
                members_of_sdl(ty),
                "`{name}`: served (left) and generated (right) differ"
            );
            compared += 1;
        }
        for name in served.keys() {
            let built_in = name.starts_with("__")
                || ["String", "Int", "Float", "Boolean", "ID"].contains(&name.as_str());
            assert!(
                built_in || schema.types.contains_key(name.as_str()),
                "`{name}` is served but not in the generated permission schema"
            );
        }
        // The example model's six types: a filter and an order per type, plus the root and
        // the project enums and scalars.
        assert!(compared > 6 * 2, "only {compared} types compared");
    }
}
