//! Who a request acts for, and the tokens that say so (reference §6).
//!
//! The HTTP layer resolves the `Authorization: Bearer` header once per request with
//! [`Auth::resolve`] and hands the resulting [`Principal`] to every GraphQL request it runs.
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

mod root_tokens;
mod secret;
mod tokens;

use std::fmt;
use std::sync::{Arc, RwLock};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Validation};

use crate::model::{ModelMeta, ServiceMeta};
use crate::storage::{Counted, Counter, Db};

pub use secret::{SecretError, service_secret};

/// Default validity of a node token: 30 days.
pub const NODE_TOKEN_SECONDS: i64 = 2_592_000;
/// Validity of a temporary root token: 5 minutes.
pub const TEMPORARY_ROOT_TOKEN_SECONDS: i64 = 300;
/// The `clientId` of temporary root tokens.
pub const TEMPORARY_CLIENT_ID: &str = "_";
/// The `clientId` of the tokens this server issues for its operator: permanent root tokens and
/// platform tokens (a single-service server has one customer).
pub const LOCAL_CLIENT_ID: &str = "local";

/// The authenticated party of a request (reference §6.2).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
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
    /// Whether the request acts as an admin (a root or platform token): every permission passes.
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
        /// The node's id (`userId` claim).
        id: String,
        /// The node's model (named by the `modelName` claim).
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
    /// The token's id (a cuid), also its `permanentAuthTokenId` claim.
    pub id: String,
    /// Its name in `rootTokens:`, unique within the service.
    pub name: String,
    /// The signed token itself (it does not expire).
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
    ) -> Result<Auth, SecretError> {
        let secret = service_secret(db, configured_secret).await?;
        let auth = Auth::new(project_id, alias, service.models, &secret);
        auth.sync_root_tokens(db, service.root_tokens)
            .await
            .map_err(SecretError::RootTokens)?;
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
                let reads = Counted {
                    conn: db.reader(),
                    counter,
                };
                match reads.one(sql).await {
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
}
