//! Tokens: signing the four kinds the service issues, and telling what a presented token is
//! (reference §6.2).

use jsonwebtoken::{Algorithm, Header};
use serde::{Deserialize, Serialize};

use super::{
    Auth, Credential, LOCAL_CLIENT_ID, NODE_TOKEN_SECONDS, TEMPORARY_CLIENT_ID,
    TEMPORARY_ROOT_TOKEN_SECONDS,
};
use crate::model::{ApiError, cuid};

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

impl Auth {
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
    pub(super) fn permanent_root_token(&self, id: &str) -> Result<String, ApiError> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::{RootToken, bearer};
    use jsonwebtoken::EncodingKey;

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
