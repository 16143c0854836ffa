//! The System API at `POST /system` (reference §6.3, §6.5, §10.1): `generateNodeToken` as client
//! libraries send it, its credentials and errors (4028), `expirationInSeconds`, the legacy
//! `generateUserToken`, `authenticateCustomer` with the master token, reading root tokens through
//! `viewer.project` (platform tokens only), and the System API's HTTP 400 for unparsable bodies.

use serde_json::{Value, json};

use crate::support::{
    ALIAS, MASTER_TOKEN, REQUEST_ID, SERVICE_ID, Server, column_of, decode_claims, is_cuid, mint,
    node_token, platform_claims, unix_now,
};

const USER_QUERY: &str = "{ user { id } }";

/// Creates a user and returns its id.
async fn ann(srv: &Server) -> String {
    srv.create("User", r#"email: "ann@example.com", name: "Ann""#)
        .await
}

/// A temporary root token of the test service.
fn temporary_root_token() -> String {
    let now = unix_now();
    mint(
        &json!({ "clientId": "_", "projectId": SERVICE_ID, "permanentAuthTokenId": "ctemporary000000000000000", "iat": now, "exp": now + 300 }),
    )
}

/// `generateNodeToken` with every value inlined in the mutation text, no `Authorization`
/// header, `clientMutationId: "static"`: the way the client library sends it.
fn node_token_mutation(root: &str, service: &str, node: &str, model: &str, extra: &str) -> String {
    format!(
        r#"mutation {{ generateNodeToken(input: {{ rootToken: "{root}", serviceId: "{service}", nodeId: "{node}", modelName: "{model}"{extra}, clientMutationId: "static" }}) {{ token clientMutationId }} }}"#
    )
}

/// Runs a System API query without a token and returns its body.
async fn system(srv: &Server, query: &str) -> Value {
    srv.system_as(None, &json!({ "query": query })).await
}

/// The node token a `generateNodeToken` response carries.
fn token_of(res: &Value, field: &str) -> String {
    res["data"][field]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("no token: {res}"))
        .to_owned()
}

/// A one-field error response of the System API.
fn system_error(query: &str, field: &str, code: u32, message: &str) -> Value {
    json!({
        "data": { field: null },
        "errors": [{
            "locations": [{ "line": 1, "column": column_of(query, field) }],
            "path": [field],
            "code": code,
            "message": message,
            "requestId": REQUEST_ID,
        }],
    })
}

/// Asserts that a node token is for `id` of type `User`, valid for `seconds`.
fn assert_node_claims(token: &str, id: &str, seconds: i64) {
    let claims = decode_claims(token);
    let mut keys: Vec<&String> = claims.as_object().expect("an object").keys().collect();
    keys.sort();
    assert_eq!(keys, ["exp", "iat", "modelName", "projectId", "userId"]);
    assert_eq!(claims["projectId"], json!(SERVICE_ID));
    assert_eq!(claims["userId"], json!(id));
    assert_eq!(claims["modelName"], json!("User"));
    let (iat, exp) = (
        claims["iat"].as_i64().unwrap_or(0),
        claims["exp"].as_i64().unwrap_or(0),
    );
    assert_eq!(exp - iat, seconds, "{claims}");
    assert!((iat - unix_now()).abs() <= 5, "iat is now: {claims}");
}

db_tests! {
    /// `generateNodeToken` sent as a client library sends it returns a 30-day node token with the
    /// reference's claims, and that token reads `user`.
    async fn generate_node_token_like_a_client(srv) {
        let id = ann(srv).await;
        let res = system(srv, &node_token_mutation(srv.root_token(), SERVICE_ID, &id, "User", "")).await;
        let token = token_of(&res, "generateNodeToken");
        assert_eq!(res, json!({ "data": { "generateNodeToken": { "token": token, "clientMutationId": "static" } } }));
        assert_node_claims(&token, &id, 2_592_000);
        assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, json!({ "data": { "user": { "id": id } } }));
        // With variables, by alias, without clientMutationId.
        let res = srv
            .system_as(None, &json!({
                "query": "mutation ($input: GenerateNodeTokenInput!) { generateNodeToken(input: $input) { token clientMutationId } }",
                "variables": { "input": { "rootToken": srv.root_token(), "serviceId": ALIAS, "nodeId": id, "modelName": "User" } },
            }))
            .await;
        let token = token_of(&res, "generateNodeToken");
        assert_eq!(res["data"]["generateNodeToken"]["clientMutationId"], Value::Null);
        assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, json!({ "data": { "user": { "id": id } } }));
    }

    /// The credential may be a stored root token, a temporary root token of this service or a
    /// platform token; the node's existence is not checked.
    async fn generate_node_token_credentials(srv) {
        let id = ann(srv).await;
        for (what, credential) in [("temporary", temporary_root_token()), ("platform", mint(&platform_claims()))] {
            let res = system(srv, &node_token_mutation(&credential, SERVICE_ID, &id, "User", "")).await;
            let token = token_of(&res, "generateNodeToken");
            assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, json!({ "data": { "user": { "id": id } } }), "{what}");
        }
        let res = system(srv, &node_token_mutation(srv.root_token(), SERVICE_ID, "cnotthere0000000000000000", "User", "")).await;
        let token = token_of(&res, "generateNodeToken");
        assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, json!({ "data": { "user": null } }));
    }

    /// Anything else is 4028 `The provided pat is not valid for project '<serviceId>'`: a wrong
    /// or forged credential, a node token, an expired temporary root token, a service id that
    /// is not this service's. An `Authorization` header does not replace the credential.
    async fn generate_node_token_4028(srv) {
        let id = ann(srv).await;
        let now = unix_now();
        let expired = mint(&json!({ "clientId": "_", "projectId": SERVICE_ID, "permanentAuthTokenId": "ctemporary000000000000000", "iat": now - 600, "exp": now - 300 }));
        let cases = [
            ("wrong", "not-a-root-token".to_owned(), SERVICE_ID),
            ("node token", node_token(&id, "User"), SERVICE_ID),
            ("expired temporary", expired, SERVICE_ID),
            ("other service", srv.root_token().to_owned(), "other-service"),
            ("empty", String::new(), SERVICE_ID),
        ];
        for (what, credential, service) in cases {
            let query = node_token_mutation(&credential, service, &id, "User", "");
            let expected = system_error(&query, "generateNodeToken", 4028, &format!("The provided pat is not valid for project '{service}'"));
            assert_eq!(system(srv, &query).await, expected, "{what}");
            let with_header = srv.system_as(Some(srv.root_token()), &json!({ "query": query })).await;
            assert_eq!(with_header, expected, "{what} (with a root token in the header)");
        }
    }

    /// `expirationInSeconds` sets the validity; a token past it is anonymous. Values below 1,
    /// a missing or unknown `modelName` and an empty `nodeId` are errors (3000) after the
    /// credential check.
    async fn expiration_and_model_name(srv) {
        let id = ann(srv).await;
        let root = srv.root_token();
        let res = system(srv, &node_token_mutation(root, SERVICE_ID, &id, "User", ", expirationInSeconds: 864000")).await;
        assert_node_claims(&token_of(&res, "generateNodeToken"), &id, 864_000);

        let res = system(srv, &node_token_mutation(root, SERVICE_ID, &id, "User", ", expirationInSeconds: 1")).await;
        let short = token_of(&res, "generateNodeToken");
        assert_node_claims(&short, &id, 1);
        tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
        assert_eq!(srv.gql_as(Some(&short), USER_QUERY).await, json!({ "data": { "user": null } }));

        for seconds in [0, -5] {
            let query = node_token_mutation(root, SERVICE_ID, &id, "User", &format!(", expirationInSeconds: {seconds}"));
            assert_eq!(
                system(srv, &query).await,
                system_error(&query, "generateNodeToken", 3000, &format!("expirationInSeconds must be at least 1, got {seconds}"))
            );
        }
        let types = "'User', 'Post', 'Category', 'Child', 'Profile', 'Comment', 'File'";
        let query = node_token_mutation(root, SERVICE_ID, &id, "Nope", "");
        assert_eq!(
            system(srv, &query).await,
            system_error(&query, "generateNodeToken", 3000, &format!("'Nope' is not a type of this service; modelName must be one of {types}"))
        );
        let query = format!(r#"mutation {{ generateNodeToken(input: {{ rootToken: "{root}", serviceId: "{SERVICE_ID}", nodeId: "{id}" }}) {{ token }} }}"#);
        assert_eq!(
            system(srv, &query).await,
            system_error(&query, "generateNodeToken", 3000, &format!("The argument 'modelName' is required: the type of node '{id}', one of {types}"))
        );
        let query = node_token_mutation(root, SERVICE_ID, "", "User", "");
        assert_eq!(system(srv, &query).await, system_error(&query, "generateNodeToken", 3000, "nodeId must not be empty"));
        // The credential is checked first.
        let query = node_token_mutation("bad", SERVICE_ID, &id, "Nope", ", expirationInSeconds: 0");
        assert_eq!(
            system(srv, &query).await,
            system_error(&query, "generateNodeToken", 4028, &format!("The provided pat is not valid for project '{SERVICE_ID}'"))
        );
    }

    /// The legacy `generateUserToken(input: {pat, projectId, userId, modelName,
    /// expirationInSeconds})` shares the logic.
    async fn generate_user_token(srv) {
        let id = ann(srv).await;
        let root = srv.root_token();
        let query = format!(r#"mutation {{ generateUserToken(input: {{ pat: "{root}", projectId: "{SERVICE_ID}", userId: "{id}", modelName: "User", expirationInSeconds: 600, clientMutationId: "m1" }}) {{ token clientMutationId }} }}"#);
        let res = system(srv, &query).await;
        let token = token_of(&res, "generateUserToken");
        assert_eq!(res["data"]["generateUserToken"]["clientMutationId"], json!("m1"));
        assert_node_claims(&token, &id, 600);
        assert_eq!(srv.gql_as(Some(&token), USER_QUERY).await, json!({ "data": { "user": { "id": id } } }));
        let query = format!(r#"mutation {{ generateUserToken(input: {{ pat: "nope", projectId: "{SERVICE_ID}", userId: "{id}", modelName: "User" }}) {{ token }} }}"#);
        assert_eq!(
            system(srv, &query).await,
            system_error(&query, "generateUserToken", 4028, &format!("The provided pat is not valid for project '{SERVICE_ID}'"))
        );
    }

    /// `authenticateCustomer` exchanges the master token for a platform token; anything else is
    /// `Invalid token for local env`.
    async fn authenticate_customer(srv) {
        let query = format!(r#"mutation {{ authenticateCustomer(input: {{ auth0IdToken: "{MASTER_TOKEN}" }}) {{ token user {{ id }} }} }}"#);
        let res = system(srv, &query).await;
        let token = token_of(&res, "authenticateCustomer");
        assert_eq!(res, json!({ "data": { "authenticateCustomer": { "token": token, "user": { "id": "local" } } } }));
        let claims = decode_claims(&token);
        let mut keys: Vec<&String> = claims.as_object().expect("an object").keys().collect();
        keys.sort();
        assert_eq!(keys, ["clientId", "iat"]);
        // It is a platform token: it reads root tokens and passes `/permissions`.
        let tokens = srv.root_tokens_as(Some(&token)).await;
        assert_eq!(tokens.len(), 2);
        assert_eq!(
            srv.permissions_as(Some(&token), "{ SomeUserExists }").await,
            json!({ "data": { "SomeUserExists": false } })
        );
        for wrong in ["wrong", "", &MASTER_TOKEN[1..]] {
            let query = format!(r#"mutation {{ authenticateCustomer(input: {{ auth0IdToken: "{wrong}" }}) {{ token }} }}"#);
            assert_eq!(
                system(srv, &query).await,
                system_error(&query, "authenticateCustomer", 3015, "Invalid token for local env"),
                "{wrong:?}"
            );
        }
    }

    /// `viewer.project(id)` (id or alias) lists the root tokens for platform tokens only; others
    /// get 3008, and an unknown id 4000.
    async fn viewer_project_root_tokens(srv) {
        let platform = mint(&platform_claims());
        for id in [SERVICE_ID, ALIAS] {
            let query = format!(r#"{{ viewer {{ project(id: "{id}") {{ id name alias permanentAuthTokens {{ edges {{ node {{ id name token }} }} }} }} }} }}"#);
            let res = srv.system_as(Some(&platform), &json!({ "query": query })).await;
            let project = &res["data"]["viewer"]["project"];
            assert_eq!(project["id"], json!(SERVICE_ID), "{res}");
            assert_eq!(project["name"], json!("example-model"));
            assert_eq!(project["alias"], json!(ALIAS));
            let edges = project["permanentAuthTokens"]["edges"].as_array().expect("edges");
            let names: Vec<&Value> = edges.iter().map(|e| &e["node"]["name"]).collect();
            assert_eq!(names, [&json!("admin"), &json!("backup")]);
            for edge in edges {
                assert!(is_cuid(edge["node"]["id"].as_str().unwrap_or_default()), "{edge}");
            }
            assert_eq!(edges[0]["node"]["token"], json!(srv.root_token()));
            assert_ne!(edges[0]["node"]["token"], edges[1]["node"]["token"]);
        }
        let query = format!(r#"{{ viewer {{ project(id: "{ALIAS}") {{ id }} }} }}"#);
        let denied = json!({
            "data": { "viewer": { "project": null } },
            "errors": [{
                "locations": [{ "line": 1, "column": column_of(&query, "project") }],
                "path": ["viewer", "project"],
                "code": 3008,
                "message": "Insufficient permissions for this query",
                "requestId": REQUEST_ID,
            }],
        });
        let id = ann(srv).await;
        for token in [None, Some(srv.root_token().to_owned()), Some(temporary_root_token()), Some(node_token(&id, "User")), Some("junk".to_owned())] {
            assert_eq!(srv.system_as(token.as_deref(), &json!({ "query": query })).await, denied, "{token:?}");
        }
        let query = r#"{ viewer { project(id: "nope") { id } } }"#;
        let res = srv.system_as(Some(&platform), &json!({ "query": query })).await;
        assert_eq!(res["errors"][0]["code"], json!(4000), "{res}");
        assert_eq!(res["errors"][0]["message"], json!("No service with id 'nope'"));
        assert_eq!(res["data"], json!({ "viewer": { "project": null } }));
    }

    /// A body that is not a JSON request object, and a query that does not parse, are HTTP 400
    /// `{"error": …}`; validation errors have the client APIs' shape.
    async fn system_parse_errors(srv) {
        let (status, body) = srv.system_raw(None, b"{not json".to_vec()).await;
        assert_eq!((status, body), (400, json!({ "error": "input could not be parsed: '{not json'" })));
        let (status, body) = srv.system_raw(None, b"[]".to_vec()).await;
        assert_eq!((status, body), (400, json!({ "error": "input could not be parsed: '[]'" })));
        let (status, body) = srv.system_raw(None, json!({ "query": "mutation {" }).to_string().into_bytes()).await;
        assert_eq!(status, 400);
        let message = body["error"].as_str().unwrap_or_default();
        assert!(message.starts_with("Syntax error while parsing GraphQL query."), "{body}");
        let res = system(srv, "{ viewer { nope } }").await;
        assert_eq!(res.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()), Some(vec!["errors".to_owned()]), "{res}");
        // The Simple API has no System fields, and the System API no Simple fields.
        assert_eq!(system(srv, "{ viewer { id } }").await, json!({ "data": { "viewer": { "id": "viewer" } } }));
    }
}
