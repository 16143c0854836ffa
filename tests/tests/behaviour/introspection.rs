//! The generated schema seen through the full graphql-js introspection query (with
//! `specifiedByURL` and `isRepeatable`): root fields in generation order (§2.1), object types
//! (§2.3), argument shapes (§2.5), `PostFilter` (§2.8) and `PostOrderBy` (§2.9).

use serde_json::{Value, json};

/// graphql-js `getIntrospectionQuery({ specifiedByUrl: true, directiveIsRepeatable: true })`.
const INTROSPECTION: &str = r#"
query IntrospectionQuery {
  __schema {
    queryType { name }
    mutationType { name }
    subscriptionType { name }
    types { ...FullType }
    directives {
      name
      description
      isRepeatable
      locations
      args { ...InputValue }
    }
  }
}

fragment FullType on __Type {
  kind
  name
  description
  specifiedByURL
  fields(includeDeprecated: true) {
    name
    description
    args { ...InputValue }
    type { ...TypeRef }
    isDeprecated
    deprecationReason
  }
  inputFields { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) {
    name
    description
    isDeprecated
    deprecationReason
  }
  possibleTypes { ...TypeRef }
}

fragment InputValue on __InputValue {
  name
  description
  type { ...TypeRef }
  defaultValue
}

fragment TypeRef on __Type {
  kind
  name
  ofType {
    kind
    name
    ofType {
      kind
      name
      ofType {
        kind
        name
        ofType {
          kind
          name
          ofType {
            kind
            name
            ofType {
              kind
              name
              ofType {
                kind
                name
              }
            }
          }
        }
      }
    }
  }
}
"#;

/// A type reference in SDL notation: `[String!]!`.
fn sdl(ty: &Value) -> String {
    match ty["kind"].as_str() {
        Some("NON_NULL") => format!("{}!", sdl(&ty["ofType"])),
        Some("LIST") => format!("[{}]", sdl(&ty["ofType"])),
        _ => ty["name"].as_str().unwrap_or("?").to_owned(),
    }
}

/// `name: Type` for every entry of a `fields`/`args`/`inputFields` list.
fn signatures(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .map(|it| {
                    format!(
                        "{}: {}",
                        it["name"].as_str().unwrap_or("?"),
                        sdl(&it["type"])
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|it| it["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn find<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .and_then(|items| items.iter().find(|it| it["name"] == json!(name)))
        .unwrap_or_else(|| panic!("no `{name}` in {}", names(list).join(", ")))
}

db_tests! {
    /// The full introspection query succeeds and describes the generated API.
    async fn full_introspection_query(srv) {
        let res = srv.gql(INTROSPECTION).await;
        assert!(res.get("errors").is_none() && res.get("error").is_none(), "introspection failed: {res:#}");
        let schema = &res["data"]["__schema"];
        assert_eq!(schema["queryType"], json!({ "name": "Query" }));
        assert_eq!(schema["mutationType"], json!({ "name": "Mutation" }));
        let types = &schema["types"];
        let type_names = names(types);
        for expected in ["Query", "Mutation", "Post", "PostFilter", "PostOrderBy", "_QueryMeta", "Node", "DateTime", "Json", "PostStatus", "Role", "CreatePost", "UpdatePost", "ChildFilter", "CategoryOrderBy"] {
            assert!(type_names.iter().any(|n| n == expected), "no type `{expected}` in {type_names:?}");
        }
        for ty in types.as_array().into_iter().flatten() {
            assert!(ty.as_object().is_some_and(|o| o.contains_key("specifiedByURL")), "{ty}");
        }
        let directives = schema["directives"].as_array().expect("directives");
        assert!(directives.iter().all(|d| d["isRepeatable"].is_boolean()), "{directives:?}");
        assert!(directives.iter().any(|d| d["name"] == json!("skip")));

        // Query root fields in generation order (§2.1); `user` is covered elsewhere.
        let query = find(types, "Query");
        let fields: Vec<String> = names(&query["fields"]).into_iter().filter(|n| n != "user").collect();
        assert_eq!(fields, [
            "allUsers", "allPosts", "allCategories", "allChildren",
            "_allUsersMeta", "_allPostsMeta", "_allCategoriesMeta", "_allChildrenMeta",
            "User", "Post", "Category", "Child", "node",
        ]);
        let field = |name: &str| find(&query["fields"], name);
        assert_eq!(sdl(&field("allPosts")["type"]), "[Post!]!");
        assert_eq!(signatures(&field("allPosts")["args"]), [
            "filter: PostFilter", "orderBy: PostOrderBy", "skip: Int", "after: String",
            "before: String", "first: Int", "last: Int",
        ]);
        assert_eq!(sdl(&field("_allPostsMeta")["type"]), "_QueryMeta!");
        assert_eq!(signatures(&field("_allPostsMeta")["args"]), signatures(&field("allPosts")["args"]));
        assert_eq!(sdl(&field("Post")["type"]), "Post");
        assert_eq!(signatures(&field("Post")["args"]), ["id: ID", "slug: String", "externalId: ID"]);
        assert_eq!(signatures(&field("Category")["args"]), ["id: ID", "name: String"]);
        assert_eq!(sdl(&field("node")["type"]), "Node");
        assert_eq!(signatures(&field("node")["args"]), ["id: ID!"]);

        // Mutation root fields in generation order: `createUser` comes last.
        let mutation = find(types, "Mutation");
        assert_eq!(names(&mutation["fields"]), [
            "createPost", "createCategory", "createChild",
            "updateUser", "updatePost", "updateCategory", "updateChild",
            "updateOrCreateUser", "updateOrCreatePost", "updateOrCreateCategory", "updateOrCreateChild",
            "deleteUser", "deletePost", "deleteCategory", "deleteChild",
            "createUser",
        ]);
        let mfield = |name: &str| find(&mutation["fields"], name);
        assert_eq!(signatures(&mfield("createPost")["args"]), [
            "slug: String!", "title: String!", "body: String", "votes: Int", "rating: Float",
            "published: Boolean", "status: PostStatus", "publishedAt: DateTime", "metadata: Json",
            "tags: [String!]", "scores: [Int!]", "externalId: ID",
        ]);
        assert_eq!(sdl(&mfield("createPost")["type"]), "Post");
        assert_eq!(signatures(&mfield("updatePost")["args"]), [
            "id: ID!", "slug: String", "title: String", "body: String", "votes: Int",
            "rating: Float", "published: Boolean", "status: PostStatus", "publishedAt: DateTime",
            "metadata: Json", "tags: [String!]", "scores: [Int!]", "externalId: ID",
        ]);
        assert_eq!(signatures(&mfield("updateOrCreatePost")["args"]), ["update: UpdatePost!", "create: CreatePost!"]);
        assert_eq!(signatures(&find(types, "UpdatePost")["inputFields"]), signatures(&mfield("updatePost")["args"]));
        assert_eq!(signatures(&find(types, "CreatePost")["inputFields"]), signatures(&mfield("createPost")["args"]));
        assert_eq!(signatures(&mfield("deletePost")["args"]), ["id: ID!"]);
        assert_eq!(signatures(&mfield("createUser")["args"]), [
            "email: String!", "name: String!", "role: Role", "age: Int", "verified: Boolean",
            "nicknames: [String!]",
        ]);
        assert_eq!(signatures(&mfield("createChild")["args"]), [
            "name: String!", "birthday: DateTime", "weight: Float", "moods: [PostStatus!]",
            "settings: Json",
        ]);

        // Object types (§2.3): model field order, `!` only on required fields, lists `[S!]`.
        let post = find(types, "Post");
        assert_eq!(post["kind"], json!("OBJECT"));
        assert_eq!(names(&post["interfaces"]), ["Node"]);
        assert_eq!(signatures(&post["fields"]), [
            "id: ID!", "createdAt: DateTime!", "slug: String!", "title: String!", "body: String",
            "votes: Int!", "rating: Float", "published: Boolean", "status: PostStatus!",
            "publishedAt: DateTime", "metadata: Json", "tags: [String!]", "scores: [Int!]",
            "externalId: ID",
        ]);
        assert_eq!(signatures(&find(types, "User")["fields"]), [
            "id: ID!", "createdAt: DateTime!", "updatedAt: DateTime!", "email: String!",
            "name: String!", "role: Role!", "age: Int", "verified: Boolean!", "nicknames: [String!]",
        ]);
        assert_eq!(signatures(&find(types, "_QueryMeta")["fields"]), ["count: Int!"]);
        let node = find(types, "Node");
        assert_eq!(node["kind"], json!("INTERFACE"));
        assert_eq!(signatures(&node["fields"]), ["id: ID!"]);
        let mut implementors = names(&node["possibleTypes"]);
        implementors.sort();
        assert_eq!(implementors, ["Category", "Child", "Post", "User"]);
        assert_eq!(names(&find(types, "PostStatus")["enumValues"]), ["DRAFT", "PUBLISHED", "ARCHIVED"]);

        // `PostFilter` (§2.8): AND, OR, then each filterable field's suffixes in order.
        let text = ["", "_not", "_in", "_not_in", "_lt", "_lte", "_gt", "_gte", "_contains", "_not_contains", "_starts_with", "_not_starts_with", "_ends_with", "_not_ends_with"];
        let ordered = ["", "_not", "_in", "_not_in", "_lt", "_lte", "_gt", "_gte"];
        let mut expected = vec!["AND: [PostFilter!]".to_owned(), "OR: [PostFilter!]".to_owned()];
        let mut add = |field: &str, ty: &str, suffixes: &[&str]| {
            for s in suffixes {
                let ty = if *s == "_in" || *s == "_not_in" { format!("[{ty}!]") } else { ty.to_owned() };
                expected.push(format!("{field}{s}: {ty}"));
            }
        };
        add("id", "ID", &text);
        add("createdAt", "DateTime", &ordered);
        add("slug", "String", &text);
        add("title", "String", &text);
        add("body", "String", &text);
        add("votes", "Int", &ordered);
        add("rating", "Float", &ordered);
        add("published", "Boolean", &["", "_not"]);
        add("status", "PostStatus", &["", "_not", "_in", "_not_in"]);
        add("publishedAt", "DateTime", &ordered);
        add("externalId", "ID", &text);
        let filter = find(types, "PostFilter");
        assert_eq!(filter["kind"], json!("INPUT_OBJECT"));
        assert_eq!(signatures(&filter["inputFields"]), expected);

        // `PostOrderBy` (§2.9): `_ASC`/`_DESC` for every non-list scalar field. Whether `Json`
        // fields are orderable is not settled by the reference, so `metadata_*` is left out.
        let order = find(types, "PostOrderBy");
        assert_eq!(order["kind"], json!("ENUM"));
        let values: Vec<String> = names(&order["enumValues"]).into_iter().filter(|v| !v.starts_with("metadata_")).collect();
        let mut expected = Vec::new();
        for f in ["id", "createdAt", "slug", "title", "body", "votes", "rating", "published", "status", "publishedAt", "externalId"] {
            expected.push(format!("{f}_ASC"));
            expected.push(format!("{f}_DESC"));
        }
        assert_eq!(values, expected);
    }

    /// `GET /simple/v1/{id}/schema.json` serves the introspection result.
    async fn schema_json(srv) {
        let res = srv.client().get(srv.url("/simple/v1/example/schema.json")).send().await.expect("request");
        let body = crate::support::body_json(res).await;
        let types = &body["data"]["__schema"]["types"];
        assert_eq!(find(types, "_QueryMeta")["kind"], json!("OBJECT"));
        assert_eq!(find(types, "PostFilter")["kind"], json!("INPUT_OBJECT"));
    }
}
