//! The secret the service signs its tokens with.

use crate::storage::Db;
use crate::storage::bookkeeping::meta_value;

/// Key of the generated secret in the meta table.
const SECRET_KEY: &str = "secret";

/// Why the service has no signing secret, or no root tokens.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// `SVC_SECRET` is set to an empty (or blank) value.
    #[error(
        "SVC_SECRET is set but empty: set it to a long random value, or unset it to use the secret stored in the database"
    )]
    Empty,
    /// The operating system's random source failed while generating the secret.
    #[error("cannot generate the service secret: {0}")]
    Random(String),
    /// The secret could not be read from (or first stored in) the database's meta table.
    #[error("cannot read the service secret: {0}")]
    Stored(sea_orm::DbErr),
    /// The root tokens of `rootTokens:` could not be stored at start.
    #[error("cannot store the root tokens: {0}")]
    RootTokens(sea_orm::DbErr),
}

/// The signing secret: `configured` (from `SVC_SECRET`) when given, else the one stored in the
/// database, generated (32 random bytes from the operating system) at first start.
pub async fn service_secret(db: &Db, configured: Option<&str>) -> Result<Vec<u8>, SecretError> {
    if let Some(secret) = configured {
        if secret.trim().is_empty() {
            return Err(SecretError::Empty);
        }
        return Ok(secret.as_bytes().to_vec());
    }
    let candidate = random_secret()?;
    let stored = meta_value(db, SECRET_KEY, candidate)
        .await
        .map_err(SecretError::Stored)?;
    Ok(stored.into_bytes())
}

/// 64 hex digits from the operating system's random source.
fn random_secret() -> Result<String, SecretError> {
    use rand::TryRngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| SecretError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
