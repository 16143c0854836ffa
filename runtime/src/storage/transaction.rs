//! Transactions: [`OrmTx`] on sea-orm's connection (migrations, the service's own tables), and
//! [`Tx`], what a mutation writes in.

use sea_orm::{DatabaseTransaction, DbErr};

use super::db::Pool;
use super::sqlite::writer;

/// A transaction on sea-orm's connection, holding the write turn on SQLite ([`super::Db::begin`]).
pub struct OrmTx {
    tx: DatabaseTransaction,
    _turn: Option<writer::Turn>,
}

impl std::ops::Deref for OrmTx {
    type Target = DatabaseTransaction;
    fn deref(&self) -> &DatabaseTransaction {
        &self.tx
    }
}

impl OrmTx {
    pub(super) fn new(tx: DatabaseTransaction, turn: Option<writer::Turn>) -> OrmTx {
        OrmTx { tx, _turn: turn }
    }

    /// Commits the transaction, then gives up the write turn.
    pub async fn commit(self) -> Result<(), DbErr> {
        self.tx.commit().await
    }

    /// Rolls the transaction back, then gives up the write turn.
    pub async fn rollback(self) -> Result<(), DbErr> {
        self.tx.rollback().await
    }
}

/// What a mutation writes in ([`super::Db::begin_write`]): a transaction, rolled back when dropped
/// uncommitted, or a single statement that is its own transaction.
pub enum Tx {
    /// Through sqlx: PostgreSQL, and SQLite when the calling thread cannot take it (unbounded
    /// work, another process holding the write lock, a database that is not a file).
    Orm(OrmTx),
    /// SQLite, on the calling thread.
    Lite(writer::WriteTx),
    /// PostgreSQL: one statement on the single-statement connections, without `BEGIN`/`COMMIT`
    /// (`WriteUnit::Statement`). Its statement commits as it runs; the caller runs exactly one.
    Single(Pool),
}

impl Tx {
    /// Commits the transaction (nothing to do for a single statement, which committed as it ran).
    pub async fn commit(self) -> Result<(), DbErr> {
        match self {
            Tx::Orm(tx) => tx.commit().await,
            Tx::Lite(tx) => tx.commit(),
            Tx::Single(_) => Ok(()),
        }
    }

    /// Commits, and runs `after` once committed, in commit order. On SQLite's writer connection
    /// the commit is grouped with the mutations waiting for the turn
    /// ([`writer::WriteTx::commit_grouped`]): `after` may then run on the task of whichever
    /// commits the batch, and this returns when the batch committed.
    pub async fn commit_then(self, after: writer::After) -> Result<(), DbErr> {
        match self {
            Tx::Lite(tx) => tx.commit_grouped(after).await,
            other => {
                other.commit().await?;
                after();
                Ok(())
            }
        }
    }
}

impl Tx {
    /// Runs `work` with this transaction. On SQLite's writer connection, whose statements run
    /// synchronously when called (`sqlite/writer.rs`), `work` runs on a blocking thread, polled
    /// once to its end: a long bulk write (an NDF import) does not hold up the requests of the
    /// async thread it came from. Any other transaction runs it on the calling task. `work` must
    /// run its statements on this transaction only.
    pub async fn drive<T, F, Fut>(self, work: F) -> Result<T, DbErr>
    where
        T: Send + 'static,
        F: FnOnce(Tx) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, DbErr>>,
    {
        if !matches!(self, Tx::Lite(_)) {
            return work(self).await;
        }
        let blocking = tokio::task::spawn_blocking(move || {
            let future = std::pin::pin!(work(self));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match future.poll(&mut cx) {
                std::task::Poll::Ready(result) => result,
                std::task::Poll::Pending => Err(DbErr::Custom(
                    "a statement of the SQLite writer connection waited".into(),
                )),
            }
        });
        blocking
            .await
            .map_err(|e| DbErr::Custom(format!("the blocking write stopped: {e}")))?
    }
}
