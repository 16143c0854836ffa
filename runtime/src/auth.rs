//! Who a request acts for, and the tokens that say so (reference §6).
//!
//! The HTTP layer resolves the `Authorization: Bearer` header once per request with
//! [`Auth::resolve`] and puts the resulting [`Principal`] into the data of every GraphQL request
//! it runs; resolvers ask [`principal`].
//!
//! Tokens are HS256 JWTs signed with the service secret (`SVC_SECRET`, or a random secret
//! generated at first start and kept in the database, so every instance on one database shares
//! it). Four kinds exist, with the reference's claim names:
//!
//! | kind | claims | expiry |
//! |---|---|---|
//! | node token | `exp`, `iat`, `projectId`, `userId`, `modelName` | 30 days by default |
//! | permanent root token | `iat`, `clientId`, `projectId`, `permanentAuthTokenId` | none |
//! | temporary root token | as above with `clientId: "_"` and a fresh id | 300 s |
//! | platform token | `iat`, `clientId` (optionally `exp`) | none by default |
//!
//! Resolution order (first match wins): exact match with a stored root token of the service
//! (before any JWT decoding); then an HS256-only decode with signature and `exp` checked; a
//! temporary root token of this service; a platform token; a node token of this service whose
//! node exists. Everything else (bad signature, another algorithm or `alg: none`, expired,
//! malformed, another service's token, a deleted node, a root token that is no longer stored)
//! is [`Principal::Anonymous`], exactly as if no token was sent: never an error.

use std::fmt;
use std::sync::{Arc, RwLock};

use async_graphql::Context;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::meta::{ModelMeta, ServiceMeta};
use crate::storage::{Backend, Counter, Db, Exec, ddl, push_id_list};
use crate::value::{cuid, format_datetime};

/// Default validity of a node token: 30 days.
pub const NODE_TOKEN_SECONDS: i64 = 2_592_000;
/// Validity of a temporary root token: 5 minutes.
pub const TEMPORARY_ROOT_TOKEN_SECONDS: i64 = 300;
/// The `clientId` of temporary root tokens.
pub const TEMPORARY_CLIENT_ID: &str = "_";
/// The `clientId` of the tokens this server issues for its operator: permanent root tokens and
/// platform tokens (a single-service server has one customer).
pub const LOCAL_CLIENT_ID: &str = "local";
/// Key of the generated secret in the meta table.
const SECRET_KEY: &str = "secret";

/// The authenticated party of a request (reference §6.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Principal {
    /// No token, or a token that is invalid, expired, forged or malformed.
    #[default]
    Anonymous,
    /// A root token (permanent or temporary) or a platform token: every check passes.
    Admin,
    /// A node token whose node exists.
    User {
        /// The node's id (`userId` claim).
        id: String,
        /// The node's type (`modelName` claim).
        model: String,
    },
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        matches!(self, Principal::Admin)
    }

    /// Whether the request carries a valid token (the `authenticated: true` rule).
    pub fn is_authenticated(&self) -> bool {
        !matches!(self, Principal::Anonymous)
    }

    /// The id permission queries see as `$user_id`: the node token's node id, `""` otherwise.
    pub fn user_id(&self) -> &str {
        match self {
            Principal::User { id, .. } => id,
            _ => "",
        }
    }
}

static ANONYMOUS: Principal = Principal::Anonymous;

/// The principal of the current request; anonymous when the request carries none.
pub fn principal<'a>(ctx: &Context<'a>) -> &'a Principal {
    ctx.data_opt::<Principal>().unwrap_or(&ANONYMOUS)
}

/// `user: User`: the node of the request's node token, when the token is for the model `R`.
pub async fn current_user<R: crate::record::Record>(
    ctx: &Context<'_>,
) -> async_graphql::Result<Option<R>> {
    match principal(ctx) {
        Principal::User { id, model } if model == R::META.name => {
            crate::read::by_id::<R>(ctx, id).await
        }
        _ => Ok(None),
    }
}

/// What a token is, as far as it can be told without the database.
#[derive(Debug, Clone)]
pub enum Credential {
    /// A permanent root token stored for this service (matched by its exact text).
    RootToken {
        /// Its name in `rootTokens:`.
        name: String,
    },
    /// A valid temporary root token of this service.
    TemporaryRootToken,
    /// A valid platform token.
    PlatformToken,
    /// A valid node token of this service for one of its models; the node may not exist.
    NodeToken {
        id: String,
        model: &'static ModelMeta,
    },
}

impl PartialEq for Credential {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Credential::RootToken { name: a }, Credential::RootToken { name: b }) => a == b,
            (Credential::TemporaryRootToken, Credential::TemporaryRootToken)
            | (Credential::PlatformToken, Credential::PlatformToken) => true,
            (
                Credential::NodeToken { id: a, model: m },
                Credential::NodeToken { id: b, model: n },
            ) => a == b && m.name == n.name,
            _ => false,
        }
    }
}

impl Eq for Credential {}

impl Credential {
    /// Root tokens (permanent or temporary) and platform tokens: the credentials that may issue
    /// node tokens and bypass every permission.
    pub fn is_root(&self) -> bool {
        !matches!(self, Credential::NodeToken { .. })
    }
}

/// A root token stored for the service (reference §6.4).
#[derive(Clone, PartialEq, Eq)]
pub struct RootToken {
    pub id: String,
    pub name: String,
    pub token: String,
    /// `yyyy-MM-ddTHH:mm:ss.SSSZ`.
    pub created_at: String,
}

impl fmt::Debug for RootToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RootToken")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("token", &"<redacted>")
            .finish()
    }
}

/// The token machinery of one running service: its keys, its id and its stored root tokens.
pub struct Auth {
    project_id: String,
    alias: String,
    models: &'static [&'static ModelMeta],
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    root_tokens: RwLock<Arc<[RootToken]>>,
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("project_id", &self.project_id)
            .field("alias", &self.alias)
            .field("root_tokens", &self.root_tokens().len())
            .finish_non_exhaustive()
    }
}

/// Claims of every kind, as read from a token; which are present says what the token is.
#[derive(Deserialize)]
struct AnyClaims {
    #[serde(rename = "projectId")]
    project_id: Option<String>,
    #[serde(rename = "userId")]
    user_id: Option<String>,
    #[serde(rename = "modelName")]
    model_name: Option<String>,
    #[serde(rename = "clientId")]
    client_id: Option<String>,
    #[serde(rename = "permanentAuthTokenId")]
    root_token_id: Option<String>,
    exp: Option<u64>,
}

#[derive(Serialize)]
struct NodeClaims<'a> {
    exp: i64,
    iat: i64,
    #[serde(rename = "projectId")]
    project_id: &'a str,
    #[serde(rename = "userId")]
    user_id: &'a str,
    #[serde(rename = "modelName")]
    model_name: &'a str,
}

#[derive(Serialize)]
struct RootClaims<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
    iat: i64,
    #[serde(rename = "clientId")]
    client_id: &'a str,
    #[serde(rename = "projectId")]
    project_id: &'a str,
    #[serde(rename = "permanentAuthTokenId")]
    root_token_id: &'a str,
}

#[derive(Serialize)]
struct PlatformClaims<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    exp: Option<i64>,
    iat: i64,
    #[serde(rename = "clientId")]
    client_id: &'a str,
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

/// Compares two secrets in time that depends on their lengths only.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The token of an `Authorization` header value: what follows `Bearer `; `None` for anything
/// else (no header, another scheme, an empty token).
pub fn bearer(header: Option<&str>) -> Option<&str> {
    let token = header?.strip_prefix("Bearer ")?.trim();
    (!token.is_empty()).then_some(token)
}

impl Auth {
    /// Keys and identity only; no root tokens yet (see [`Auth::load`]).
    pub fn new(
        project_id: String,
        alias: String,
        models: &'static [&'static ModelMeta],
        secret: &[u8],
    ) -> Auth {
        // HS256 only: `alg: none` and every other algorithm fail before the signature check.
        // `exp` is checked when present (no leeway, as in the reference) but not required:
        // root and platform tokens have none.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.required_spec_claims.clear();
        validation.leeway = 0;
        validation.validate_aud = false;
        Auth {
            project_id,
            alias,
            models,
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            root_tokens: RwLock::new(Arc::from(Vec::new())),
        }
    }

    /// Reads (or creates) the secret, then makes the stored root tokens match
    /// `service.root_tokens` (see [`Auth::sync_root_tokens`]).
    pub async fn load(
        db: &Db,
        service: &'static ServiceMeta,
        project_id: String,
        alias: String,
        configured_secret: Option<&str>,
    ) -> Result<Auth, String> {
        let secret = service_secret(db, configured_secret).await?;
        let auth = Auth::new(project_id, alias, service.models, &secret);
        auth.sync_root_tokens(db, service.root_tokens)
            .await
            .map_err(|e| format!("cannot store the root tokens: {e}"))?;
        Ok(auth)
    }

    /// The service id (the `projectId` of its tokens).
    pub fn project_id(&self) -> &str {
        &self.project_id
    }

    /// The service's alias.
    pub fn alias(&self) -> &str {
        &self.alias
    }

    /// Whether `id` names this service (its id or its alias).
    pub fn is_service(&self, id: &str) -> bool {
        id == self.project_id || id == self.alias
    }

    /// The stored root tokens, in `rootTokens:` order.
    pub fn root_tokens(&self) -> Arc<[RootToken]> {
        match self.root_tokens.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the in-memory set of root tokens (the exact-match set).
    pub fn set_root_tokens(&self, tokens: Vec<RootToken>) {
        let tokens: Arc<[RootToken]> = Arc::from(tokens);
        match self.root_tokens.write() {
            Ok(mut guard) => *guard = tokens,
            Err(poisoned) => *poisoned.into_inner() = tokens,
        }
    }

    /// The stored root token named `name`.
    pub fn root_token(&self, name: &str) -> Option<RootToken> {
        self.root_tokens().iter().find(|t| t.name == name).cloned()
    }

    fn sign<T: Serialize>(&self, claims: &T) -> Result<String, ApiError> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|e| ApiError::Internal(format!("cannot sign a token: {e}")))
    }

    /// A node token for node `node_id` of type `model_name`, valid for `seconds` (default 30
    /// days). The node's existence is not checked.
    pub fn node_token(
        &self,
        node_id: &str,
        model_name: &str,
        seconds: Option<i64>,
    ) -> Result<String, ApiError> {
        let iat = now();
        self.sign(&NodeClaims {
            exp: iat.saturating_add(seconds.unwrap_or(NODE_TOKEN_SECONDS)),
            iat,
            project_id: &self.project_id,
            user_id: node_id,
            model_name,
        })
    }

    /// A temporary root token of this service: admin for 5 minutes (what functions receive as
    /// `context.svc.rootToken`).
    pub fn temporary_root_token(&self) -> Result<String, ApiError> {
        let iat = now();
        self.sign(&RootClaims {
            exp: Some(iat + TEMPORARY_ROOT_TOKEN_SECONDS),
            iat,
            client_id: TEMPORARY_CLIENT_ID,
            project_id: &self.project_id,
            root_token_id: &cuid(),
        })
    }

    /// A platform token (`clientId`, `iat`, and `exp` when `seconds` is given).
    pub fn platform_token(&self, seconds: Option<i64>) -> Result<String, ApiError> {
        let iat = now();
        self.sign(&PlatformClaims {
            exp: seconds.map(|s| iat.saturating_add(s)),
            iat,
            client_id: LOCAL_CLIENT_ID,
        })
    }

    /// A new permanent root token with id `id` (no expiry).
    fn permanent_root_token(&self, id: &str) -> Result<String, ApiError> {
        self.sign(&RootClaims {
            exp: None,
            iat: now(),
            client_id: LOCAL_CLIENT_ID,
            project_id: &self.project_id,
            root_token_id: id,
        })
    }

    /// What `token` is, without touching the database (a node token's node may not exist).
    /// `None` for anything that is not a valid token of this service.
    pub fn credential(&self, token: &str) -> Option<Credential> {
        // Stored root tokens are compared before any decoding.
        if let Some(stored) = self
            .root_tokens()
            .iter()
            .find(|t| same_secret(t.token.as_bytes(), token.as_bytes()))
        {
            return Some(Credential::RootToken {
                name: stored.name.clone(),
            });
        }
        let claims = jsonwebtoken::decode::<AnyClaims>(token, &self.decoding, &self.validation)
            .ok()?
            .claims;
        match claims.project_id {
            Some(project) if project != self.project_id => None,
            Some(_) => {
                if claims.root_token_id.is_some() {
                    // A permanent root token works only while it is stored, and then it matched
                    // above; a temporary one carries `clientId: "_"` and an expiry.
                    let temporary = claims.client_id.as_deref() == Some(TEMPORARY_CLIENT_ID)
                        && claims.exp.is_some();
                    return temporary.then_some(Credential::TemporaryRootToken);
                }
                let (id, model_name) = (claims.user_id?, claims.model_name?);
                let model = self.models.iter().copied().find(|m| m.name == model_name)?;
                (!id.is_empty()).then_some(Credential::NodeToken { id, model })
            }
            None => {
                let platform = claims.client_id.is_some_and(|c| !c.is_empty())
                    && claims.user_id.is_none()
                    && claims.root_token_id.is_none();
                platform.then_some(Credential::PlatformToken)
            }
        }
    }

    /// The principal of a request whose `Authorization` header is `header`. A node token costs
    /// one indexed `SELECT` (counted in `counter`) to check that its node exists.
    pub async fn resolve(&self, db: &Db, counter: &Counter, header: Option<&str>) -> Principal {
        let Some(token) = bearer(header) else {
            return Principal::Anonymous;
        };
        match self.credential(token) {
            None => Principal::Anonymous,
            Some(Credential::NodeToken { id, model }) => {
                let mut sql = db.sql();
                sql.push("SELECT 1 FROM ")
                    .ident(model.table)
                    .push(" WHERE ")
                    .ident("id")
                    .push(" = ")
                    .bind(sea_orm::Value::String(Some(id.clone())))
                    .push(" LIMIT 1");
                let exec = Exec {
                    conn: db.reader(),
                    counter,
                };
                match exec.one(sql).await {
                    Ok(Some(_)) => Principal::User {
                        id,
                        model: model.name.to_owned(),
                    },
                    Ok(None) => Principal::Anonymous,
                    Err(e) => {
                        eprintln!("svc: cannot check the node of a node token: {e}");
                        Principal::Anonymous
                    }
                }
            }
            Some(_) => Principal::Admin,
        }
    }

    /// Makes the stored root tokens match `names` (reference §6.4): names not yet stored get a
    /// new permanent root token, stored names no longer listed are deleted (their tokens stop
    /// working at once). One transaction; on PostgreSQL serialised with other instances starting
    /// at the same time. Then the in-memory set is replaced by what is stored.
    pub async fn sync_root_tokens(&self, db: &Db, names: &[&str]) -> Result<(), sea_orm::DbErr> {
        use sea_orm::ConnectionTrait;
        let counter = Counter::new();
        let tx = db.begin().await?;
        if db.backend() == Backend::Postgres {
            tx.execute_unprepared(&ddl::lock_statement()).await?;
        }
        let exec = Exec {
            conn: &*tx,
            counter: &counter,
        };
        // A write first, so that SQLite takes the write lock (and waits for it) at once.
        let mut delete = db.sql();
        delete
            .push("DELETE FROM ")
            .ident(ddl::ROOT_TOKEN_TABLE)
            .push(" WHERE ")
            .ident("name")
            .push(" NOT");
        push_id_list(&mut delete, names.iter().copied());
        exec.execute(delete).await?;
        let created_at = format_datetime(&chrono::Utc::now());
        for name in names {
            let id = cuid();
            let token = self
                .permanent_root_token(&id)
                .map_err(|e| sea_orm::DbErr::Custom(e.message()))?;
            let mut insert = db.sql();
            insert
                .push("INSERT INTO ")
                .ident(ddl::ROOT_TOKEN_TABLE)
                .push(" (\"id\", \"name\", \"token\", \"createdAt\") VALUES (")
                .bind(id.into())
                .push(", ")
                .bind((*name).into())
                .push(", ")
                .bind(token.into())
                .push(", ")
                .bind(created_at.clone().into())
                .push(") ON CONFLICT (\"name\") DO NOTHING");
            exec.execute(insert).await?;
        }
        let mut select = db.sql();
        select
            .push("SELECT \"id\", \"name\", \"token\", \"createdAt\" FROM ")
            .ident(ddl::ROOT_TOKEN_TABLE);
        let rows = exec.all(select).await?;
        tx.commit().await?;
        let mut tokens = Vec::with_capacity(rows.len());
        let backend = db.backend();
        for row in rows {
            tokens.push(RootToken {
                id: crate::record::get(&row, 0, backend)?,
                name: crate::record::get(&row, 1, backend)?,
                token: crate::record::get(&row, 2, backend)?,
                created_at: crate::record::get(&row, 3, backend)?,
            });
        }
        tokens.sort_by_key(|t| names.iter().position(|n| *n == t.name));
        self.set_root_tokens(tokens);
        Ok(())
    }
}

/// The signing secret: `configured` (from `SVC_SECRET`) when given, else the one stored in the
/// database, generated (32 random bytes from the operating system) at first start.
pub async fn service_secret(db: &Db, configured: Option<&str>) -> Result<Vec<u8>, String> {
    if let Some(secret) = configured {
        if secret.trim().is_empty() {
            return Err(
                "SVC_SECRET is set but empty: set it to a long random value, or \
                        unset it to use the secret stored in the database"
                    .to_owned(),
            );
        }
        return Ok(secret.as_bytes().to_vec());
    }
    let candidate = random_secret()?;
    let stored = ddl::meta_value(db, SECRET_KEY, candidate)
        .await
        .map_err(|e| format!("cannot read the service secret: {e}"))?;
    Ok(stored.into_bytes())
}

/// 64 hex digits from the operating system's random source.
fn random_secret() -> Result<String, String> {
    use rand::TryRngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| format!("cannot generate the service secret: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(secret: &str) -> Auth {
        Auth::new("svc1".into(), "example".into(), &[], secret.as_bytes())
    }

    fn forge(claims: &serde_json::Value, alg: Algorithm, secret: &str) -> String {
        jsonwebtoken::encode(
            &Header::new(alg),
            claims,
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }

    #[test]
    fn issued_tokens_are_recognised() {
        // Node tokens are checked against the models in the behaviour tests.
        let a = auth("k1");
        let temp = a.temporary_root_token().unwrap();
        assert_eq!(a.credential(&temp), Some(Credential::TemporaryRootToken));
        let platform = a.platform_token(None).unwrap();
        assert_eq!(a.credential(&platform), Some(Credential::PlatformToken));
        // Another service's key or id: nothing.
        assert_eq!(auth("k2").credential(&temp), None);
        assert_eq!(auth("k2").credential(&platform), None);
        let other = Auth::new("svc2".into(), "x".into(), &[], b"k1");
        assert_eq!(other.credential(&temp), None);
    }

    #[test]
    fn permanent_root_tokens_count_only_while_stored() {
        let a = auth("k1");
        let token = a.permanent_root_token("cid").unwrap();
        assert_eq!(a.credential(&token), None);
        a.set_root_tokens(vec![RootToken {
            id: "cid".into(),
            name: "admin".into(),
            token: token.clone(),
            created_at: String::new(),
        }]);
        assert_eq!(
            a.credential(&token),
            Some(Credential::RootToken {
                name: "admin".into()
            })
        );
        a.set_root_tokens(Vec::new());
        assert_eq!(a.credential(&token), None);
    }

    #[test]
    fn bad_tokens_are_nothing() {
        let a = auth("k1");
        let t = now();
        let claims = serde_json::json!({ "exp": t + 100, "iat": t, "projectId": "svc1", "clientId": "_", "permanentAuthTokenId": "c1" });
        assert!(
            a.credential(&forge(&claims, Algorithm::HS256, "k1"))
                .is_some()
        );
        assert_eq!(a.credential(&forge(&claims, Algorithm::HS384, "k1")), None);
        assert_eq!(a.credential(&forge(&claims, Algorithm::HS256, "k2")), None);
        let expired = serde_json::json!({ "exp": t - 1, "iat": t - 100, "projectId": "svc1", "clientId": "_", "permanentAuthTokenId": "c1" });
        assert_eq!(a.credential(&forge(&expired, Algorithm::HS256, "k1")), None);
        let unknown = serde_json::json!({ "exp": t + 100, "iat": t, "projectId": "svc1", "userId": "c1", "modelName": "Nope" });
        assert_eq!(a.credential(&forge(&unknown, Algorithm::HS256, "k1")), None);
        // `alg: none`, unsigned.
        let b64 = |v: &serde_json::Value| {
            use base64_url_free::encode;
            encode(v.to_string().as_bytes())
        };
        let none = format!(
            "{}.{}.",
            b64(&serde_json::json!({ "alg": "none", "typ": "JWT" })),
            b64(&claims)
        );
        assert_eq!(a.credential(&none), None);
        for junk in ["", "x", "a.b.c", "Bearer", "eyJ.eyJ.sig"] {
            assert_eq!(a.credential(junk), None, "{junk}");
        }
        let temp_without_exp = serde_json::json!({ "iat": t, "clientId": "_", "projectId": "svc1", "permanentAuthTokenId": "c1" });
        assert_eq!(
            a.credential(&forge(&temp_without_exp, Algorithm::HS256, "k1")),
            None
        );
    }

    #[test]
    fn bearer_header() {
        assert_eq!(bearer(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer(Some("bearer abc")), None);
        assert_eq!(bearer(Some("abc")), None);
        assert_eq!(bearer(Some("Bearer ")), None);
        assert_eq!(bearer(None), None);
    }

    /// Unpadded base64url, enough to forge an unsigned token.
    mod base64_url_free {
        pub fn encode(bytes: &[u8]) -> String {
            const A: &[u8; 64] =
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
            let mut out = String::new();
            for chunk in bytes.chunks(3) {
                let n = chunk
                    .iter()
                    .enumerate()
                    .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
                for i in 0..=chunk.len() {
                    out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
                }
            }
            out
        }
    }
}
