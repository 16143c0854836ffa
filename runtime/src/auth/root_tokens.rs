//! The service's root tokens as stored in its database (reference §6.4), kept in step with
//! `rootTokens:` at every start.

use sea_orm::{ConnectionTrait, DbErr};

use super::{Auth, RootToken};
use crate::model::{cuid, format_datetime, get};
use crate::storage::bookkeeping::{ROOT_TOKEN_TABLE, setup_lock};
use crate::storage::{Counted, Counter, Db};

impl Auth {
    /// Makes the stored root tokens match `names` (reference §6.4): names not yet stored get a
    /// new permanent root token, stored names no longer listed are deleted (their tokens stop
    /// working at once). One transaction; on PostgreSQL serialised with other instances starting
    /// at the same time. Then the in-memory set is replaced by what is stored.
    pub async fn sync_root_tokens(&self, db: &Db, names: &[&str]) -> Result<(), DbErr> {
        let counter = Counter::new();
        let tx = db.begin().await?;
        if let Some(lock) = setup_lock(db.backend()) {
            tx.execute_unprepared(&lock).await?;
        }
        let statements = Counted {
            conn: &*tx,
            counter: &counter,
        };
        // A write first, so that SQLite takes the write lock (and waits for it) at once.
        let mut delete = db.sql();
        delete
            .push("DELETE FROM ")
            .ident(ROOT_TOKEN_TABLE)
            .push(" WHERE ")
            .ident("name")
            .push(" NOT");
        delete.id_in(names.iter().copied());
        statements.execute(delete).await?;
        let created_at = format_datetime(&chrono::Utc::now());
        for name in names {
            let id = cuid();
            let token = self
                .permanent_root_token(&id)
                .map_err(|e| DbErr::Custom(e.message()))?;
            let mut insert = db.sql();
            insert
                .push("INSERT INTO ")
                .ident(ROOT_TOKEN_TABLE)
                .push(" (\"id\", \"name\", \"token\", \"createdAt\") VALUES (")
                .bind(id.into())
                .push(", ")
                .bind((*name).into())
                .push(", ")
                .bind(token.into())
                .push(", ")
                .bind(created_at.clone().into())
                .push(") ON CONFLICT (\"name\") DO NOTHING");
            statements.execute(insert).await?;
        }
        let mut select = db.sql();
        select
            .push("SELECT \"id\", \"name\", \"token\", \"createdAt\" FROM ")
            .ident(ROOT_TOKEN_TABLE);
        let rows = statements.all(select).await?;
        tx.commit().await?;
        let mut tokens = Vec::with_capacity(rows.len());
        for row in rows {
            tokens.push(RootToken {
                id: get(&row, 0)?,
                name: get(&row, 1)?,
                token: get(&row, 2)?,
                created_at: get(&row, 3)?,
            });
        }
        tokens.sort_by_key(|t| names.iter().position(|n| *n == t.name));
        self.set_root_tokens(tokens);
        Ok(())
    }
}
