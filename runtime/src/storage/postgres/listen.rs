//! PostgreSQL's notifications: `NOTIFY` through the service's connections, and `LISTEN` on a
//! connection of its own ([`Listener`]), which is opened again when it drops (notifications
//! sent while it was down are lost, as PostgreSQL does not keep them). The connection's
//! `application_name` is the service's with ` (events)` after it, so that it can be told apart
//! from the connections that serve requests.

use std::time::Duration;

use sea_orm::DbErr;
use sea_orm::sqlx;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgListener, PgPool};

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
