//! The System API (`POST /system`, reference §10.1): node tokens for root-token holders
//! (`generateNodeToken`, its legacy twin `generateUserToken`), platform tokens for the operator
//! (`authenticateCustomer` with the master token), and what the CLI reads (`viewer.project`
//! with the service's root tokens, platform tokens only).
//!
//! A separate schema, built once at start; the HTTP layer (`http/routes.rs`) resolves the
//! request's `Authorization: Bearer` token into a [`Caller`] and renders errors in the
//! reference's shapes.

use std::fmt;
use std::sync::Arc;

use async_graphql::{
    Context, EmptySubscription, ErrorExtensions, ID, InputObject, Object, Schema, SchemaBuilder,
    SimpleObject,
};

use crate::auth::{Credential, LOCAL_CLIENT_ID};
use crate::engine::State;
use crate::model::ApiError;

/// The System API schema.
pub type SystemSchema = Schema<SystemQuery, SystemMutation, EmptySubscription>;

/// The builder of the System API schema (built once at start, and once more as its
/// validator).
pub fn schema(
    state: Arc<State>,
    master_token: Option<String>,
) -> SchemaBuilder<SystemQuery, SystemMutation, EmptySubscription> {
    Schema::build(SystemQuery, SystemMutation, EmptySubscription)
        .data(state)
        .data(MasterToken(master_token.filter(|t| !t.is_empty())))
        .limit_depth(16)
        .limit_complexity(1_000)
}

/// The valid credential of a System API request (its bearer token), if any.
#[derive(Debug, Clone, Default)]
pub struct Caller(pub Option<Credential>);

/// `SVC_MASTER_TOKEN`, which `authenticateCustomer` exchanges for a platform token.
struct MasterToken(Option<String>);

impl fmt::Debug for MasterToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterToken(<redacted>)")
    }
}

/// The service's state, in the schema's data.
fn state<'a>(ctx: &Context<'a>) -> &'a State {
    ctx.data_unchecked::<Arc<State>>()
}

fn caller<'a>(ctx: &Context<'a>) -> Option<&'a Credential> {
    ctx.data_opt::<Caller>().and_then(|c| c.0.as_ref())
}

/// An error with a reference code.
fn coded(code: u32, message: String) -> async_graphql::Error {
    async_graphql::Error::new(message).extend_with(|_, e| e.set("code", code))
}

/// The System API's root query type: `viewer`.
#[derive(Debug, Default)]
pub struct SystemQuery;

#[Object(name = "Query")]
impl SystemQuery {
    #[graphql(name = "viewer")]
    async fn viewer(&self) -> Viewer {
        Viewer
    }
}

/// The caller's view of the platform.
#[derive(Debug)]
pub struct Viewer;

#[Object(name = "Viewer")]
impl Viewer {
    #[graphql(name = "id")]
    async fn id(&self) -> ID {
        ID("viewer".to_owned())
    }

    /// The service with this id or alias. Needs a platform token: anyone else gets 3008, and an
    /// id that is not this service's id or alias gets 4000.
    #[graphql(name = "project")]
    async fn project(
        &self,
        ctx: &Context<'_>,
        #[graphql(name = "id")] id: ID,
    ) -> async_graphql::Result<Option<Project>> {
        if !matches!(caller(ctx), Some(Credential::PlatformToken)) {
            return Err(ApiError::InsufficientPermissions(
                "Insufficient permissions for this query",
            )
            .into());
        }
        let state = state(ctx);
        let auth = &state.auth;
        if !auth.is_service(&id) {
            return Err(coded(4000, format!("No service with id '{}'", id.as_str())));
        }
        let edges = auth
            .root_tokens()
            .iter()
            .map(|t| PermanentAuthTokenEdge {
                cursor: t.id.clone(),
                node: PermanentAuthToken {
                    id: ID(t.id.clone()),
                    name: t.name.clone(),
                    token: t.token.clone(),
                },
            })
            .collect();
        Ok(Some(Project {
            id: ID(auth.project_id().to_owned()),
            name: state.service.name.to_owned(),
            alias: Some(auth.alias().to_owned()),
            permanent_auth_tokens: PermanentAuthTokenConnection { edges },
        }))
    }
}

/// The service as the CLI reads it: its id, name, alias and root tokens.
#[derive(Debug, SimpleObject)]
#[graphql(name = "Project")]
pub struct Project {
    #[graphql(name = "id")]
    id: ID,
    #[graphql(name = "name")]
    name: String,
    #[graphql(name = "alias")]
    alias: Option<String>,
    #[graphql(name = "permanentAuthTokens")]
    permanent_auth_tokens: PermanentAuthTokenConnection,
}

/// The service's root tokens, all in one page.
#[derive(Debug, SimpleObject)]
#[graphql(name = "PermanentAuthTokenConnection")]
pub struct PermanentAuthTokenConnection {
    #[graphql(name = "edges")]
    edges: Vec<PermanentAuthTokenEdge>,
}

/// One root token; its cursor is the token's id.
#[derive(Debug, SimpleObject)]
#[graphql(name = "PermanentAuthTokenEdge")]
pub struct PermanentAuthTokenEdge {
    #[graphql(name = "cursor")]
    cursor: String,
    #[graphql(name = "node")]
    node: PermanentAuthToken,
}

/// A root token (`rootTokens:` in `svc.yml`).
#[derive(SimpleObject)]
#[graphql(name = "PermanentAuthToken")]
pub struct PermanentAuthToken {
    #[graphql(name = "id")]
    id: ID,
    #[graphql(name = "name")]
    name: String,
    #[graphql(name = "token")]
    token: String,
}

impl fmt::Debug for PermanentAuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PermanentAuthToken")
            .field("id", &self.id)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The System API's root mutation type: `generateNodeToken`, `generateUserToken` and
/// `authenticateCustomer`.
#[derive(Debug, Default)]
pub struct SystemMutation;

/// The input of `generateNodeToken`.
#[derive(InputObject)]
#[graphql(name = "GenerateNodeTokenInput")]
pub struct GenerateNodeTokenInput {
    /// A root token of the service (permanent or temporary) or a platform token.
    #[graphql(name = "rootToken")]
    root_token: String,
    /// The service's id or alias.
    #[graphql(name = "serviceId")]
    service_id: ID,
    /// The node the token acts for; its existence is not checked.
    #[graphql(name = "nodeId")]
    node_id: ID,
    /// The node's type; must be a type of the service.
    #[graphql(name = "modelName")]
    model_name: Option<String>,
    /// Validity in seconds (at least 1); default 30 days.
    #[graphql(name = "expirationInSeconds")]
    expiration_in_seconds: Option<i32>,
    #[graphql(name = "clientMutationId")]
    client_mutation_id: Option<String>,
}

/// The answer of `generateNodeToken`: the node token.
#[derive(Debug, SimpleObject)]
#[graphql(name = "GenerateNodeTokenPayload")]
pub struct GenerateNodeTokenPayload {
    #[graphql(name = "token")]
    token: String,
    #[graphql(name = "clientMutationId")]
    client_mutation_id: Option<String>,
}

/// The legacy input of `generateUserToken`: the same as `generateNodeToken` with older names.
#[derive(InputObject)]
#[graphql(name = "GenerateUserTokenInput")]
pub struct GenerateUserTokenInput {
    #[graphql(name = "pat")]
    pat: String,
    #[graphql(name = "projectId")]
    project_id: ID,
    #[graphql(name = "userId")]
    user_id: ID,
    #[graphql(name = "modelName")]
    model_name: Option<String>,
    #[graphql(name = "expirationInSeconds")]
    expiration_in_seconds: Option<i32>,
    #[graphql(name = "clientMutationId")]
    client_mutation_id: Option<String>,
}

/// The answer of `generateUserToken`: the node token.
#[derive(Debug, SimpleObject)]
#[graphql(name = "GenerateUserTokenPayload")]
pub struct GenerateUserTokenPayload {
    #[graphql(name = "token")]
    token: String,
    #[graphql(name = "clientMutationId")]
    client_mutation_id: Option<String>,
}

/// The input of `authenticateCustomer`.
#[derive(InputObject)]
#[graphql(name = "AuthenticateCustomerInput")]
pub struct AuthenticateCustomerInput {
    /// The server's master token (`SVC_MASTER_TOKEN`).
    #[graphql(name = "auth0IdToken")]
    auth0_id_token: String,
    #[graphql(name = "clientMutationId")]
    client_mutation_id: Option<String>,
}

/// The answer of `authenticateCustomer`: a platform token and the operator it acts for.
#[derive(Debug, SimpleObject)]
#[graphql(name = "AuthenticateCustomerPayload")]
pub struct AuthenticateCustomerPayload {
    /// A platform token.
    #[graphql(name = "token")]
    token: String,
    #[graphql(name = "user")]
    user: Customer,
    #[graphql(name = "clientMutationId")]
    client_mutation_id: Option<String>,
}

/// The operator of the server.
#[derive(Debug, SimpleObject)]
#[graphql(name = "Customer")]
pub struct Customer {
    #[graphql(name = "id")]
    id: ID,
}

#[Object(name = "Mutation")]
impl SystemMutation {
    /// A node token for `nodeId` (reference §6.3).
    #[graphql(name = "generateNodeToken")]
    async fn generate_node_token(
        &self,
        ctx: &Context<'_>,
        #[graphql(name = "input")] input: GenerateNodeTokenInput,
    ) -> async_graphql::Result<Option<GenerateNodeTokenPayload>> {
        let token = issue_node_token(
            ctx,
            &input.root_token,
            &input.service_id,
            &input.node_id,
            input.model_name.as_deref(),
            input.expiration_in_seconds,
        )?;
        Ok(Some(GenerateNodeTokenPayload {
            token,
            client_mutation_id: input.client_mutation_id,
        }))
    }

    /// The legacy name of `generateNodeToken`.
    #[graphql(name = "generateUserToken")]
    async fn generate_user_token(
        &self,
        ctx: &Context<'_>,
        #[graphql(name = "input")] input: GenerateUserTokenInput,
    ) -> async_graphql::Result<Option<GenerateUserTokenPayload>> {
        let token = issue_node_token(
            ctx,
            &input.pat,
            &input.project_id,
            &input.user_id,
            input.model_name.as_deref(),
            input.expiration_in_seconds,
        )?;
        Ok(Some(GenerateUserTokenPayload {
            token,
            client_mutation_id: input.client_mutation_id,
        }))
    }

    /// A platform token in exchange for the master token (reference §6.5).
    #[graphql(name = "authenticateCustomer")]
    async fn authenticate_customer(
        &self,
        ctx: &Context<'_>,
        #[graphql(name = "input")] input: AuthenticateCustomerInput,
    ) -> async_graphql::Result<Option<AuthenticateCustomerPayload>> {
        let master = ctx.data_opt::<MasterToken>().and_then(|m| m.0.as_deref());
        let matches = master.is_some_and(|m| {
            let (a, b) = (m.as_bytes(), input.auth0_id_token.as_bytes());
            a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
        });
        if !matches {
            return Err(coded(3015, "Invalid token for local env".to_owned()));
        }
        let token = state(ctx).auth.platform_token(None)?;
        Ok(Some(AuthenticateCustomerPayload {
            token,
            user: Customer {
                id: ID(LOCAL_CLIENT_ID.to_owned()),
            },
            client_mutation_id: input.client_mutation_id,
        }))
    }
}

/// The shared logic of `generateNodeToken` and `generateUserToken`.
fn issue_node_token(
    ctx: &Context<'_>,
    credential: &str,
    service: &str,
    node_id: &str,
    model_name: Option<&str>,
    seconds: Option<i32>,
) -> async_graphql::Result<String> {
    let state = state(ctx);
    let auth = &state.auth;
    let valid =
        auth.is_service(service) && auth.credential(credential).is_some_and(|c| c.is_root());
    if !valid {
        return Err(ApiError::InvalidRootToken(service.to_owned()).into());
    }
    if node_id.is_empty() {
        return Err(coded(3000, "nodeId must not be empty".to_owned()));
    }
    let types = || {
        state
            .service
            .models
            .iter()
            .map(|m| format!("'{}'", m.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let model = match model_name {
        None => {
            return Err(coded(
                3000,
                format!(
                    "The argument 'modelName' is required: the type of node '{node_id}', one of {}",
                    types()
                ),
            ));
        }
        Some(name) => match state.service.models.iter().find(|m| m.name == name) {
            Some(model) => model,
            None => {
                return Err(coded(
                    3000,
                    format!(
                        "'{name}' is not a type of this service; modelName must be one of {}",
                        types()
                    ),
                ));
            }
        },
    };
    if let Some(s) = seconds
        && s < 1
    {
        return Err(coded(
            3000,
            format!("expirationInSeconds must be at least 1, got {s}"),
        ));
    }
    Ok(auth.node_token(node_id, model.name, seconds.map(i64::from))?)
}
