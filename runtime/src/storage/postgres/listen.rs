//! PostgreSQL's notifications: `NOTIFY` through the service's connections, and `LISTEN` on a
//! connection of its own ([`Listener`]), which is opened again when it drops (notifications
//! sent while it was down are lost, as PostgreSQL does not keep them). The connection's
//! `application_name` is the service's with ` (events)` after it, so that it can be told apart
//! from the connections that serve requests.

use std::time::Duration;

use sea_orm::DbErr;
use sea_orm::sqlx;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgListener, PgPool};

/// The channel of the servers on one database schema: their events, their announcements, and
/// the word that the schema's model changed.
pub fn events_channel(schema: &str) -> String {
    let mut channel = format!("svc_events_{schema}");
    // Identifiers are at most 63 bytes; a schema name is too (channel names are compared
    // whole, so a cut keeps distinct schemas apart unless their names share 52 bytes).
    channel.truncate(63);
    channel
}

/// The key of the notification a migration sends on the events channel of its schema when it
/// changed the model (`{"schemaChanged":true}`).
pub const SCHEMA_CHANGED: &str = "schemaChanged";

/// The statement that sends it, inside the migration's transaction (so it is delivered at the
/// commit, and never for a migration rolled back); the channel as [`events_channel`] names it.
pub const NOTIFY_SCHEMA_CHANGED: &str =
    "SELECT pg_notify(left('svc_events_' || current_schema(), 63), '{\"schemaChanged\":true}')";

/// A connection listening to one notification channel.
pub struct Listener(PgListener);

impl Listener {
    /// Listens to `channel` on a new connection to `url`.
    pub(crate) async fn connect(url: &str, channel: &str) -> Result<Listener, DbErr> {
        let err = |e: sqlx::Error| DbErr::Conn(sea_orm::RuntimeErr::Internal(e.to_string()));
        let options: PgConnectOptions = url.parse().map_err(err)?;
        let name = format!(
            "{} (events)",
            options.get_application_name().unwrap_or("svc")
        );
        let pool = PgPool::connect_lazy_with(options.application_name(&name));
        let mut listener = PgListener::connect_with(&pool).await.map_err(err)?;
        listener.listen(channel).await.map_err(err)?;
        Ok(Listener(listener))
    }

    /// The payload of the next notification. A lost connection is opened again (sqlx does it
    /// on the next call), once a second while the database refuses.
    pub async fn recv(&mut self) -> String {
        loop {
            match self.0.recv().await {
                Ok(notification) => return notification.payload().to_owned(),
                Err(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    }
}
