//! The permission schema as SDL (reference §5.4, seed §2.4): the schema permission queries are
//! written against and validated with at build time.
//!
//! It must describe exactly what the runtime registers for `/permissions`: the generated
//! `PermissionQuery` root and the generic `Filter<T>` / `OrderBy<T>` input types of
//! `runtime/src/api/registry.rs`, which build their fields from the data tables. The rules mirrored here:
//! a filter has `AND`, `OR`, then per exposed (declared) non-list column field in declaration
//! order the suffixes of its kind, then per relation field `f` (to-one) or `f_every`, `f_some`,
//! `f_none` (to-many); an order enum has `<f>_ASC`, `<f>_DESC` per declared non-list scalar or
//! enum field. Undeclared `createdAt`/`updatedAt` columns are not exposed.

use std::fmt::Write as _;

use crate::model::{Field, FieldKind, Model, ScalarType, TypeId};
use crate::naming;

/// The permission schema of `model` as SDL: the `Query` root with one
/// `Some<Type>Exists(filter:, orderBy:, skip:, after:, before:, first:, last:): Boolean!` per
/// model, every `<Type>Filter` and `<Type>OrderBy`, and the project's enums and the scalars
/// `DateTime` and `Json` that a filter field refers to (the runtime registers nothing else).
/// Deterministic: everything is in model order.
pub fn permission_schema_sdl(model: &Model) -> String {
    // Enums and scalars exist in the served schema only when a filter field refers to them.
    let mut used = std::collections::BTreeSet::new();
    let mut out = String::from("type Query {\n");
    // `write!` into a `String` cannot fail; results are ignored for that reason.
    if model.types.is_empty() {
        // The runtime's placeholder, since an object type needs at least one field.
        out.push_str("  _empty: Boolean!\n");
    }
    for t in &model.types {
        let name = &t.name;
        let _ = writeln!(
            out,
            "  {}(filter: {}, orderBy: {}, skip: Int, after: String, before: String, first: Int, last: Int): Boolean!",
            naming::some_exists_field(name),
            naming::filter_type(name),
            naming::order_by_type(name),
        );
    }
    out.push_str("}\n");
    for (id, t) in model.type_ids() {
        let _ = writeln!(out, "\ninput {} {{", naming::filter_type(&t.name));
        for (key, ty) in filter_fields(model, id) {
            let _ = writeln!(out, "  {key}: {ty}");
            used.insert(ty.trim_matches(['[', ']', '!']).to_owned());
        }
        out.push_str("}\n");
        let _ = writeln!(out, "\nenum {} {{", naming::order_by_type(&t.name));
        for value in order_by_values(model, id) {
            let _ = writeln!(out, "  {value}");
        }
        out.push_str("}\n");
    }
    for e in model
        .enums
        .iter()
        .filter(|e| used.contains(e.name.as_str()))
    {
        let _ = writeln!(out, "\nenum {} {{", e.name);
        for v in &e.values {
            let _ = writeln!(out, "  {v}");
        }
        out.push_str("}\n");
    }
    for scalar in ["DateTime", "Json"] {
        if used.contains(scalar) {
            let _ = writeln!(out, "\nscalar {scalar}");
        }
    }
    out
}

/// The keys of `<Type>Filter` with their GraphQL types, in the runtime's order.
pub fn filter_fields(model: &Model, ty: TypeId) -> Vec<(String, String)> {
    let def = model.ty(ty);
    let filter = naming::filter_type(&def.name);
    let mut out = vec![
        ("AND".to_owned(), format!("[{filter}!]")),
        ("OR".to_owned(), format!("[{filter}!]")),
    ];
    for (_, f) in def.column_fields() {
        let Some(value) = value_type(model, f) else {
            continue;
        };
        for suffix in filter_suffixes(f) {
            let ty = if naming::filter_takes_list(suffix) {
                format!("[{value}!]")
            } else {
                value.clone()
            };
            out.push((naming::filter_key(&f.name, suffix), ty));
        }
    }
    for (_, f) in def.relation_fields() {
        let FieldKind::Relation { target, .. } = f.kind else {
            continue;
        };
        let ty = naming::filter_type(&model.ty(target).name);
        let suffixes: &[&str] = if f.list {
            naming::TO_MANY_FILTERS
        } else {
            &[""]
        };
        for suffix in suffixes {
            out.push((naming::filter_key(&f.name, suffix), ty.clone()));
        }
    }
    out
}

/// The values of `<Type>OrderBy`: `<f>_ASC`, `<f>_DESC` per declared non-list scalar or enum
/// field, in declaration order.
pub fn order_by_values(model: &Model, ty: TypeId) -> Vec<String> {
    model
        .ty(ty)
        .column_fields()
        .filter(|(_, f)| !f.list)
        .flat_map(|(_, f)| [false, true].map(|desc| naming::order_value(&f.name, desc)))
        .collect()
}

/// The named type of one value of a scalar or enum field.
fn value_type(model: &Model, f: &Field) -> Option<String> {
    match f.kind {
        FieldKind::Scalar(s) => Some(s.name().to_owned()),
        FieldKind::Enum(e) => Some(model.enum_def(e).name.clone()),
        FieldKind::Relation { .. } => None,
    }
}

/// The filter suffixes of a column field (the runtime registers the same ones).
fn filter_suffixes(f: &Field) -> &'static [&'static str] {
    if f.list {
        return &[];
    }
    match f.kind {
        FieldKind::Scalar(ScalarType::Id | ScalarType::String) => naming::TEXT_FILTERS,
        FieldKind::Scalar(ScalarType::Int | ScalarType::Float | ScalarType::DateTime) => {
            naming::ORDERED_FILTERS
        }
        FieldKind::Enum(_) => naming::ENUM_FILTERS,
        FieldKind::Scalar(ScalarType::Boolean) => naming::BOOLEAN_FILTERS,
        FieldKind::Scalar(ScalarType::Json) | FieldKind::Relation { .. } => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::frontend::model_from_sdl as model;

    #[test]
    fn sdl_of_a_small_model() {
        let model = model(
            r#"enum Mood { HAPPY SAD }
               type Post @model {
                 id: ID! @isUnique
                 updatedAt: DateTime!
                 title: String!
                 views: Int
                 score: Float
                 draft: Boolean
                 mood: Mood
                 tags: [String!]
                 meta: Json
                 author: User @relation(name: "UserPosts")
               }
               type User @model {
                 id: ID! @isUnique
                 posts: [Post!]! @relation(name: "UserPosts")
               }"#,
        );
        let expected = "\
type Query {
  SomePostExists(filter: PostFilter, orderBy: PostOrderBy, skip: Int, after: String, before: String, first: Int, last: Int): Boolean!
  SomeUserExists(filter: UserFilter, orderBy: UserOrderBy, skip: Int, after: String, before: String, first: Int, last: Int): Boolean!
  SomeFileExists(filter: FileFilter, orderBy: FileOrderBy, skip: Int, after: String, before: String, first: Int, last: Int): Boolean!
}

input PostFilter {
  AND: [PostFilter!]
  OR: [PostFilter!]
  id: ID
  id_not: ID
  id_in: [ID!]
  id_not_in: [ID!]
  id_lt: ID
  id_lte: ID
  id_gt: ID
  id_gte: ID
  id_contains: ID
  id_not_contains: ID
  id_starts_with: ID
  id_not_starts_with: ID
  id_ends_with: ID
  id_not_ends_with: ID
  updatedAt: DateTime
  updatedAt_not: DateTime
  updatedAt_in: [DateTime!]
  updatedAt_not_in: [DateTime!]
  updatedAt_lt: DateTime
  updatedAt_lte: DateTime
  updatedAt_gt: DateTime
  updatedAt_gte: DateTime
  title: String
  title_not: String
  title_in: [String!]
  title_not_in: [String!]
  title_lt: String
  title_lte: String
  title_gt: String
  title_gte: String
  title_contains: String
  title_not_contains: String
  title_starts_with: String
  title_not_starts_with: String
  title_ends_with: String
  title_not_ends_with: String
  views: Int
  views_not: Int
  views_in: [Int!]
  views_not_in: [Int!]
  views_lt: Int
  views_lte: Int
  views_gt: Int
  views_gte: Int
  score: Float
  score_not: Float
  score_in: [Float!]
  score_not_in: [Float!]
  score_lt: Float
  score_lte: Float
  score_gt: Float
  score_gte: Float
  draft: Boolean
  draft_not: Boolean
  mood: Mood
  mood_not: Mood
  mood_in: [Mood!]
  mood_not_in: [Mood!]
  author: UserFilter
}

enum PostOrderBy {
  id_ASC
  id_DESC
  updatedAt_ASC
  updatedAt_DESC
  title_ASC
  title_DESC
  views_ASC
  views_DESC
  score_ASC
  score_DESC
  draft_ASC
  draft_DESC
  mood_ASC
  mood_DESC
  meta_ASC
  meta_DESC
}

input UserFilter {
  AND: [UserFilter!]
  OR: [UserFilter!]
  id: ID
  id_not: ID
  id_in: [ID!]
  id_not_in: [ID!]
  id_lt: ID
  id_lte: ID
  id_gt: ID
  id_gte: ID
  id_contains: ID
  id_not_contains: ID
  id_starts_with: ID
  id_not_starts_with: ID
  id_ends_with: ID
  id_not_ends_with: ID
  posts_every: PostFilter
  posts_some: PostFilter
  posts_none: PostFilter
}

enum UserOrderBy {
  id_ASC
  id_DESC
}

input FileFilter {
  AND: [FileFilter!]
  OR: [FileFilter!]
  id: ID
  id_not: ID
  id_in: [ID!]
  id_not_in: [ID!]
  id_lt: ID
  id_lte: ID
  id_gt: ID
  id_gte: ID
  id_contains: ID
  id_not_contains: ID
  id_starts_with: ID
  id_not_starts_with: ID
  id_ends_with: ID
  id_not_ends_with: ID
  secret: String
  secret_not: String
  secret_in: [String!]
  secret_not_in: [String!]
  secret_lt: String
  secret_lte: String
  secret_gt: String
  secret_gte: String
  secret_contains: String
  secret_not_contains: String
  secret_starts_with: String
  secret_not_starts_with: String
  secret_ends_with: String
  secret_not_ends_with: String
  name: String
  name_not: String
  name_in: [String!]
  name_not_in: [String!]
  name_lt: String
  name_lte: String
  name_gt: String
  name_gte: String
  name_contains: String
  name_not_contains: String
  name_starts_with: String
  name_not_starts_with: String
  name_ends_with: String
  name_not_ends_with: String
  size: Int
  size_not: Int
  size_in: [Int!]
  size_not_in: [Int!]
  size_lt: Int
  size_lte: Int
  size_gt: Int
  size_gte: Int
  url: String
  url_not: String
  url_in: [String!]
  url_not_in: [String!]
  url_lt: String
  url_lte: String
  url_gt: String
  url_gte: String
  url_contains: String
  url_not_contains: String
  url_starts_with: String
  url_not_starts_with: String
  url_ends_with: String
  url_not_ends_with: String
  contentType: String
  contentType_not: String
  contentType_in: [String!]
  contentType_not_in: [String!]
  contentType_lt: String
  contentType_lte: String
  contentType_gt: String
  contentType_gte: String
  contentType_contains: String
  contentType_not_contains: String
  contentType_starts_with: String
  contentType_not_starts_with: String
  contentType_ends_with: String
  contentType_not_ends_with: String
  createdAt: DateTime
  createdAt_not: DateTime
  createdAt_in: [DateTime!]
  createdAt_not_in: [DateTime!]
  createdAt_lt: DateTime
  createdAt_lte: DateTime
  createdAt_gt: DateTime
  createdAt_gte: DateTime
  updatedAt: DateTime
  updatedAt_not: DateTime
  updatedAt_in: [DateTime!]
  updatedAt_not_in: [DateTime!]
  updatedAt_lt: DateTime
  updatedAt_lte: DateTime
  updatedAt_gt: DateTime
  updatedAt_gte: DateTime
}

enum FileOrderBy {
  id_ASC
  id_DESC
  secret_ASC
  secret_DESC
  name_ASC
  name_DESC
  size_ASC
  size_DESC
  url_ASC
  url_DESC
  contentType_ASC
  contentType_DESC
  createdAt_ASC
  createdAt_DESC
  updatedAt_ASC
  updatedAt_DESC
}

enum Mood {
  HAPPY
  SAD
}

scalar DateTime
";
        assert_eq!(permission_schema_sdl(&model), expected);
    }

    /// The SDL is a valid schema for apollo (every model kind, self relations, no models).
    #[test]
    fn sdl_is_a_valid_schema() {
        let model = model(
            r#"enum E { A }
               type A @model { id: ID! @isUnique createdAt: DateTime! e: [E!] f: E friends: [A!]! @relation(name: "F") b: B! @relation(name: "AB") }
               type B @model { id: ID! @isUnique a: A @relation(name: "AB") }"#,
        );
        for m in [model.into_inner(), Model::default()] {
            let sdl = permission_schema_sdl(&m);
            if let Err(e) =
                apollo_compiler::Schema::parse_and_validate(sdl.as_str(), "permissions.graphql")
            {
                panic!("{}\n{sdl}", e.errors);
            }
        }
    }
}
