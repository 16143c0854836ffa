//! Authentication (reference §6.1, §6.2, §6.4, §5.5): every kind of token is accepted, and every
//! way a token can be bad is treated exactly as no token. Until permissions are enforced the
//! observable differences are: `/permissions` answers admins only (root, temporary root and
//! platform tokens), and `user` returns the node of a node token.

use serde_json::{Value, json};

use crate::support::{
    ALIAS, REQUEST_ID, SECRET, SERVICE_ID, Server, decode_claims, is_cuid, mint, mint_alg,
    mint_with, node_claims, node_token, platform_claims, unix_now,
};

const USER_QUERY: &str = "{ user { id email } }";
const PERMISSION_QUERY: &str = "{ SomeUserExists SomePostExists(filter: { slug: \"x\" }) }";

fn denied() -> Value {
    json!({ "code": 3008, "requestId": REQUEST_ID, "error": "Insufficient permissions for this query" })
}

fn allowed() -> Value {
    json!({ "data": { "SomeUserExists": true, "SomePostExists": false } })
}

fn no_user() -> Value {
    json!({ "data": { "user": null } })
}

/// Creates a user and returns its id.
async fn ann(srv: &Server) -> String {
    srv.create("User", r#"email: "ann@example.com", name: "Ann""#)
        .await
}

/// Claims of a temporary root token of the test service.
fn temporary_claims() -> Value {
    let now = unix_now();
    json!({ "clientId": "_", "projectId": SERVICE_ID, "permanentAuthTokenId": "ctemporary000000000000000", "iat": now, "exp": now + 300 })
}

/// Asserts that `token` is treated exactly as no token: `user` is null and `/permissions`
/// refuses, on every endpoint that reads a token.
async fn assert_anonymous(srv: &Server, token: &str, what: &str) {
    assert_eq!(
        srv.gql_as(Some(token), USER_QUERY).await,
        no_user(),
        "{what}: user"
    );
    assert_eq!(
        srv.gql_as(None, USER_QUERY).await,
        no_user(),
        "{what}: anonymous user"
    );
    assert_eq!(
        srv.permissions_as(Some(token), PERMISSION_QUERY).await,
        denied(),
        "{what}: /permissions"
    );
}

/// Asserts that `token` is an admin credential.
async fn assert_admin(srv: &Server, token: &str, what: &str) {
    assert_eq!(
        srv.permissions_as(Some(token), PERMISSION_QUERY).await,
        allowed(),
        "{what}"
    );
    // Admins are not a node: `user` stays null.
    assert_eq!(
        srv.gql_as(Some(token), USER_QUERY).await,
        no_user(),
        "{what}: user"
    );
}

db_tests! {
    /// Root tokens from `rootTokens:` (admin and backup) are admin by their exact value;
    /// `/permissions` refuses anonymous requests with the request-level 3008 shape.
    async fn root_tokens_by_exact_value(srv) {
        ann(srv).await;
        let tokens = srv.root_tokens_as(Some(&mint(&platform_claims()))).await;
        let names: Vec<&str> = tokens.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["admin", "backup"]);
        for (name, token) in &tokens {
            assert_admin(srv, token, name).await;
        }
        assert_eq!(tokens[0].1, srv.root_token());
        assert_eq!(srv.permissions_as(None, PERMISSION_QUERY).await, denied());
        // The id works as well as the alias; an unknown id is 3016 before anything else.
        let url = srv.url(&format!("/simple/v1/{SERVICE_ID}/permissions"));
        assert_eq!(srv.post_url_as(&url, Some(srv.root_token()), &json!({ "query": PERMISSION_QUERY })).await, allowed());
        let url = srv.url("/simple/v1/nope/permissions");
        assert_eq!(
            srv.post_url_as(&url, Some(srv.root_token()), &json!({ "query": PERMISSION_QUERY })).await,
            json!({ "code": 3016, "requestId": REQUEST_ID, "error": "Project not found: 'nope'" })
        );
    }

    /// A stored root token's claims are the reference's: `clientId`, `projectId`,
    /// `permanentAuthTokenId` (its id, a cuid), `iat`, and no `exp`.
    async fn root_token_claims(srv) {
        let claims = decode_claims(srv.root_token());
        let mut keys: Vec<&String> = claims.as_object().expect("an object").keys().collect();
        keys.sort();
        assert_eq!(keys, ["clientId", "iat", "permanentAuthTokenId", "projectId"]);
        assert_eq!(claims["projectId"], json!(SERVICE_ID));
        assert!(is_cuid(claims["permanentAuthTokenId"].as_str().unwrap_or_default()), "{claims}");
        assert_ne!(claims["clientId"], json!("_"));
    }

    /// Temporary root tokens (`clientId: "_"`, an expiry) of this service are admin.
    async fn temporary_root_token(srv) {
        ann(srv).await;
        assert_admin(srv, &mint(&temporary_claims()), "temporary root token").await;
    }

    /// Platform tokens (`clientId`, `iat`, optionally `exp`) are admin.
    async fn platform_token(srv) {
        ann(srv).await;
        assert_admin(srv, &mint(&platform_claims()), "platform token").await;
        let now = unix_now();
        let expiring = json!({ "clientId": "svc-tests", "iat": now, "exp": now + 60 });
        assert_admin(srv, &mint(&expiring), "platform token with exp").await;
    }

    /// A node token of an existing node authenticates as that node: `user` returns it (for a
    /// `User`), and it is not an admin.
    async fn node_token_reads_user(srv) {
        let id = ann(srv).await;
        let token = node_token(&id, "User");
        assert_eq!(
            srv.gql_as(Some(&token), USER_QUERY).await,
            json!({ "data": { "user": { "id": id, "email": "ann@example.com" } } })
        );
        assert_eq!(srv.permissions_as(Some(&token), PERMISSION_QUERY).await, denied());
        let res = srv.anonymous().post(srv.api()).json(&json!({ "query": USER_QUERY })).send().await.expect("request");
        assert_eq!(crate::support::body_json(res).await, no_user());
        // In a batch, every request of the envelope acts for the token's node.
        let batch = json!([{ "query": USER_QUERY }, { "query": "{ me: user { name } }" }]);
        assert_eq!(
            srv.post_as(Some(&token), &batch).await,
            json!([
                { "data": { "user": { "id": id, "email": "ann@example.com" } } },
                { "data": { "me": { "name": "Ann" } } },
            ])
        );
        // A node token of another type is valid too, but `user` is only for `User` nodes.
        let post = srv.create("Post", r#"slug: "p", title: "P""#).await;
        assert_eq!(srv.gql_as(Some(&node_token(&post, "Post")), USER_QUERY).await, no_user());
    }

    /// Every bad token is exactly no token: signed with another key, `alg: none`, another HMAC
    /// algorithm, expired, malformed, another service's id, an unknown type, a node that does
    /// not exist (or was deleted), a permanent root token that is not stored, a temporary root
    /// token without expiry, and a header that is not `Bearer <token>`.
    async fn bad_tokens_are_anonymous(srv) {
        let id = ann(srv).await;
        let user = json!({ "data": { "user": { "id": id, "email": "ann@example.com" } } });
        // The good token these are variations of.
        assert_eq!(srv.gql_as(Some(&node_token(&id, "User")), USER_QUERY).await, user);
        let now = unix_now();
        let with = |key: &str, value: Value| {
            let mut claims = node_claims(&id, "User");
            claims[key] = value;
            claims
        };
        let header = b64(&json!({ "alg": "none", "typ": "JWT" }).to_string());
        let unsigned = format!("{header}.{}.", b64(&node_claims(&id, "User").to_string()));
        let mut permanent = temporary_claims();
        permanent["clientId"] = json!("local");
        permanent.as_object_mut().expect("claims").remove("exp");
        let mut temporary_forever = temporary_claims();
        temporary_forever.as_object_mut().expect("claims").remove("exp");
        let mut temporary_elsewhere = temporary_claims();
        temporary_elsewhere["projectId"] = json!("other-service");
        let mut without_model = node_claims(&id, "User");
        without_model.as_object_mut().expect("claims").remove("modelName");
        let cases: Vec<(&str, String)> = vec![
            ("another key", mint_with("another-secret", &node_claims(&id, "User"))),
            ("alg none", unsigned),
            ("HS384", mint_alg(jsonwebtoken::Algorithm::HS384, SECRET, &node_claims(&id, "User"))),
            ("expired", mint(&with("exp", json!(now - 5)))),
            ("exp not a number", mint(&with("exp", json!("tomorrow")))),
            ("another projectId", mint(&with("projectId", json!("other-service")))),
            ("the alias as projectId", mint(&with("projectId", json!(ALIAS)))),
            ("unknown modelName", mint(&with("modelName", json!("Nope")))),
            ("no modelName", mint(&without_model)),
            ("userId of another type", mint(&with("modelName", json!("Post")))),
            ("missing node", node_token("cnotthere0000000000000000", "User")),
            ("userId not a string", mint(&with("userId", json!(42)))),
            ("permanent root token that is not stored", mint(&permanent)),
            ("temporary root token without exp", mint(&temporary_forever)),
            ("temporary root token of another service", mint(&temporary_elsewhere)),
            ("empty claims", mint(&json!({}))),
            ("malformed", "not-a-token".to_owned()),
            ("three garbage parts", "eyJhbGciOi.eyJwcm9qZWN0.c2ln".to_owned()),
            ("truncated", node_token(&id, "User")[..40].to_owned()),
        ];
        for (what, token) in &cases {
            assert_anonymous(srv, token, what).await;
        }
        // The header must be `Bearer <token>`.
        let good = node_token(&id, "User");
        let body = json!({ "query": USER_QUERY });
        for value in [good.clone(), format!("bearer {good}"), format!("Token {good}"), format!("Basic {good}"), "Bearer".to_owned(), "Bearer ".to_owned()] {
            assert_eq!(srv.post_authorization(&srv.api(), &value, &body).await, no_user(), "Authorization: {value}");
        }
        // A deleted node's token stops working at once.
        assert_eq!(srv.gql_as(Some(&good), USER_QUERY).await, user);
        srv.data(&format!(r#"mutation {{ deleteUser(id: "{id}") {{ id }} }}"#)).await;
        assert_anonymous(srv, &good, "deleted node").await;
    }
}

db_cases! {
    /// Root tokens follow `rootTokens:` at every start: a stored token whose name is no longer
    /// listed is deleted and stops working at once; listed ones keep their values.
    async fn removed_root_token_stops_working(db) {
        let Some(mut srv) = Server::start(db).await else { return };
        let platform = mint(&platform_claims());
        let before = srv.root_tokens_as(Some(&platform)).await;
        srv.stop();
        let old = mint(&json!({ "clientId": "local", "projectId": SERVICE_ID, "permanentAuthTokenId": "cold000000000000000000000", "iat": unix_now() }));
        srv.database()
            .execute(&[format!(
                "INSERT INTO \"_svc_root_token\" (\"id\", \"name\", \"token\", \"createdAt\") \
                 VALUES ('cold000000000000000000000', 'old', '{old}', '2020-01-01T00:00:00.000Z')"
            )])
            .await;
        srv.restart(Some(SECRET)).await;
        let after = srv.root_tokens_as(Some(&platform)).await;
        assert_eq!(after, before, "`old` is gone, `admin` and `backup` are unchanged");
        assert_eq!(srv.permissions_as(Some(&old), "{ SomeUserExists }").await, denied());
        assert_eq!(
            srv.permissions_as(Some(srv.root_token()), "{ SomeUserExists }").await,
            json!({ "data": { "SomeUserExists": false } })
        );
    }
}

/// Unpadded base64url.
fn b64(text: &str) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}
