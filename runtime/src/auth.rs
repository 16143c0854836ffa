//! Who a request acts for. The HTTP layer resolves the `Authorization: Bearer` header into a
//! [`Principal`] and puts it into the request data; everything else asks [`principal`].

use async_graphql::Context;

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
