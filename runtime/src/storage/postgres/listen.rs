//! PostgreSQL's notifications: `NOTIFY` through the service's connections, and `LISTEN` on a
//! connection of its own ([`Listener`]), which is opened again when it drops (notifications
//! sent while it was down are lost, as PostgreSQL does not keep them). The connection's
//! `application_name` is the service's with ` (events)` after it, so that it can be told apart
//! from the connections that serve requests.

use std::time::Duration;

use sea_orm::DbErr;
use sea_orm::sqlx;
use sea_orm::sqlx::postgres::{PgConnectOptions, PgListener, PgPool};

use crate::storage::bookkeeping::EVENT_TABLE;
use crate::storage::{Sql, Statements};

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

/// What a mutation sends to the listeners of a channel, in its transaction: PostgreSQL delivers
/// its notifications when the transaction commits, in commit order, and never those of a
/// transaction rolled back, so listeners hear of a mutation exactly when it committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A notification.
    Send {
        /// The channel to notify (for the servers' events, the one [`events_channel`] names).
        channel: String,
        /// The notification's text, small enough for PostgreSQL's limit (8000 bytes).
        payload: String,
    },
    /// A payload too large for a notification, kept in the event table under `id` for the
    /// listeners to read; a notification that names it follows.
    Keep {
        /// The event-table row's id (a cuid), which the notification names.
        id: String,
        /// The text kept, read by the listeners in place of a notification's.
        payload: String,
    },
}

/// Sends `notices` in the transaction `tx`: the kept payloads are written to the event table
/// (rows older than ten minutes go on the way), then the notifications, in order, in one
/// statement. Returns how many statements it ran.
pub async fn send(tx: &impl Statements, notices: &[Notice]) -> Result<u32, DbErr> {
    let mut kept = Sql::new(tx.backend());
    let mut sent = Sql::new(tx.backend());
    kept.push("INSERT INTO ")
        .ident(EVENT_TABLE)
        .push(" (\"id\", \"payload\") VALUES ");
    sent.push("SELECT ");
    let (mut keeps, mut sends) = (0, 0);
    for notice in notices {
        match notice {
            Notice::Keep { id, payload } => push_pair(&mut kept, &mut keeps, "", id, payload),
            Notice::Send { channel, payload } => {
                push_pair(&mut sent, &mut sends, "pg_notify", channel, payload)
            }
        }
    }
    let mut statements = 0;
    if keeps > 0 {
        tx.execute(kept).await?;
        let mut old = Sql::new(tx.backend());
        old.push("DELETE FROM ")
            .ident(EVENT_TABLE)
            .push(" WHERE \"createdAt\" < now() - interval '10 minutes'");
        tx.execute(old).await?;
        statements += 2;
    }
    if sends > 0 {
        // A select list is computed from left to right: the notifications keep their order.
        tx.one(sent).await?;
        statements += 1;
    }
    Ok(statements)
}

/// Appends `{function}($a, $b)` to the list in `sql`, after a comma unless it is the first.
fn push_pair(sql: &mut Sql, count: &mut usize, function: &str, a: &str, b: &str) {
    if *count > 0 {
        sql.push(", ");
    }
    sql.push(function)
        .push("(")
        .bind(a.into())
        .push(", ")
        .bind(b.into())
        .push(")");
    *count += 1;
}

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
