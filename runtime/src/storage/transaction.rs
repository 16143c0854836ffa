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

    pub async fn commit(self) -> Result<(), DbErr> {
        self.tx.commit().await
    }

    pub async fn rollback(self) -> Result<(), DbErr> {
        self.tx.rollback().await
    }
}

/// What a mutation writes in ([`super::Db::begin_write`]): a transaction, rolled back when dropped
/// uncommitted, or a single statement that is its own transaction.
pub enum Tx {
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
}
