//! Permissions (reference §5): a whitelist compiled from `svc.yml` at build time (the model's
//! `PermissionMeta` tables), checked here.
//!
//! - Root and platform tokens bypass every check, and so does everybody while an applicable
//!   `operation: "*"` permission exists.
//! - Writes ([`Perms::check_write`], [`Perms::check_delete`]) and edges
//!   ([`Perms::check_relation`]) are checked inside the mutation's transaction, before the
//!   statement they guard, so a denied mutation writes nothing.
//! - Reads are checked per node and per scalar field by the field guard every model type carries
//!   (in the GraphQL layer), with the rules of [`rules`]; the permission queries of a model run
//!   once per batch of nodes (the engine's read batch).
//!
//! Permission queries never run per node: node-dependent variables become columns of an outer
//! row ([`eval`]), so one statement evaluates every query of a check for all its nodes.

pub mod eval;
pub mod rules;

use async_graphql::Value;

use crate::auth::Principal;
use crate::model::{
    ApiError, ApiResult, ModelMeta, Operation, PermissionMeta, PermissionQuery, PermissionTarget,
    RelFieldMeta, ServiceMeta, VarSource, Write,
};
use crate::storage::{Counted, Tx};
use eval::Bind;

pub use rules::{ReadRules, ReadTable};

const MUTATION_DENIED: &str = "Insufficient permissions for this mutation";
const CONNECT_DENIED: &str = "No CONNECT permissions";
const DISCONNECT_DENIED: &str = "No DISCONNECT permissions";

/// The permission view of one request: who asks, and the service's rules.
#[derive(Clone, Copy)]
pub struct Perms<'a> {
    principal: &'a Principal,
    service: &'static ServiceMeta,
}

/// The index of `meta` in `service.models` (what permission targets name).
pub fn model_index(service: &ServiceMeta, meta: &ModelMeta) -> Option<usize> {
    service.models.iter().position(|m| std::ptr::eq(*m, meta))
}

/// Whether a type permission covers `field` (no `fields` list: the whole type).
pub(crate) fn covers(p: &PermissionMeta, field: &str) -> bool {
    p.fields.is_none_or(|fields| fields.contains(&field))
}

impl<'a> Perms<'a> {
    /// The permissions of `service` as `principal` sees them.
    pub fn new(principal: &'a Principal, service: &'static ServiceMeta) -> Perms<'a> {
        Perms { principal, service }
    }

    /// Whether a permission applies to this request (`authenticated: true` needs a token).
    fn applies(&self, p: &PermissionMeta) -> bool {
        !p.authenticated || self.principal.is_authenticated()
    }

    /// Admins pass every check; so does everybody while an applicable `"*"` exists.
    pub fn bypass(&self) -> bool {
        self.principal.is_admin()
            || self
                .service
                .permissions
                .iter()
                .any(|p| p.target == PermissionTarget::All && self.applies(p))
    }

    /// The applicable permissions for `op` on `meta`.
    pub fn type_perms(&self, meta: &ModelMeta, op: Operation) -> Vec<&'static PermissionMeta> {
        let Some(model) = model_index(self.service, meta) else {
            return Vec::new();
        };
        self.service
            .permissions
            .iter()
            .filter(|p| p.target == PermissionTarget::Type { model, op } && self.applies(p))
            .collect()
    }

    fn user(&self) -> Value {
        Value::String(self.principal.user_id().to_owned())
    }

    /// A create (`nodes: None`) or an update of `nodes` (all must pass) with the arguments
    /// `write` (reference §5.3): allowed when query-less permissions cover every scalar given;
    /// otherwise every field given (scalars and nested creates) must be covered by a query-less
    /// permission or a permission whose query is true.
    pub async fn check_write(
        &self,
        tx: &Counted<'_, Tx>,
        meta: &'static ModelMeta,
        nodes: Option<&[&str]>,
        write: &Write,
    ) -> ApiResult<()> {
        if self.bypass() {
            return Ok(());
        }
        let op = if nodes.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        let perms = self.type_perms(meta, op);
        let free = |f: &str| perms.iter().any(|p| p.query.is_none() && covers(p, f));
        let scalars: Vec<&str> = write
            .values
            .iter()
            .filter(|(i, v)| v.is_some() && *i != meta.id)
            .map(|(i, _)| meta.fields[*i].name)
            .collect();
        if perms.iter().any(|p| p.query.is_none()) && scalars.iter().all(|f| free(f)) {
            return Ok(());
        }
        let nested = write
            .rels
            .iter()
            .filter(|r| r.nested.as_ref().is_some_and(|n| !n.is_empty()))
            .map(|r| meta.relations[r.field].name);
        let fields: Vec<&str> = scalars.into_iter().chain(nested).collect();
        if fields.is_empty() {
            return Err(ApiError::InsufficientPermissions(MUTATION_DENIED));
        }
        let pending: Vec<&str> = fields.into_iter().filter(|f| !free(f)).collect();
        let queries: Vec<&PermissionMeta> = perms
            .iter()
            .copied()
            .filter(|p| p.query.is_some() && pending.iter().any(|f| covers(p, f)))
            .collect();
        let texts: Vec<&PermissionQuery> = queries.iter().filter_map(|p| p.query).collect();
        let user = self.user();
        let bind = |src: VarSource| match src {
            VarSource::UserId => Bind::Const(user.clone()),
            VarSource::NodeId if nodes.is_some() => Bind::OuterId,
            VarSource::NodeId => Bind::Const(Value::String("not-the-id".into())),
            VarSource::NodeField(f) if nodes.is_some() => Bind::OuterField(f),
            VarSource::Input(f) => Bind::Const(input_value(write, f)),
            VarSource::InputRelationId(r) => Bind::Const(input_relation_id(write, r)),
            _ => Bind::Const(Value::Null),
        };
        let results: Vec<Vec<bool>> = match nodes {
            Some(ids) => {
                let mut found = if texts.is_empty() {
                    Default::default()
                } else {
                    eval::for_nodes(tx, self.service, &texts, meta, ids, &bind).await?
                };
                let mut out = Vec::with_capacity(ids.len());
                for id in ids {
                    match found.remove(*id) {
                        Some(flags) => out.push(flags),
                        None if texts.is_empty() => out.push(Vec::new()),
                        None => {
                            return Err(ApiError::DataItemDoesNotExist {
                                model: meta.name,
                                id: (*id).to_owned(),
                            });
                        }
                    }
                }
                out
            }
            None if texts.is_empty() => vec![Vec::new()],
            None => vec![eval::constant(tx, self.service, &texts, &bind).await?],
        };
        for flags in &results {
            let ok = pending.iter().all(|f| {
                queries
                    .iter()
                    .zip(flags)
                    .any(|(p, granted)| *granted && covers(p, f))
            });
            if !ok {
                return Err(ApiError::InsufficientPermissions(MUTATION_DENIED));
            }
        }
        Ok(())
    }

    /// A delete of `ids` (all must pass): a query-less delete permission, or one whose query is
    /// true for the node as stored.
    pub async fn check_delete(
        &self,
        tx: &Counted<'_, Tx>,
        meta: &'static ModelMeta,
        ids: &[&str],
    ) -> ApiResult<()> {
        if self.bypass() || ids.is_empty() {
            return Ok(());
        }
        let perms = self.type_perms(meta, Operation::Delete);
        let user = self.user();
        let bind = |src: VarSource| match src {
            VarSource::UserId => Bind::Const(user.clone()),
            VarSource::NodeId => Bind::OuterId,
            VarSource::NodeField(f) => Bind::OuterField(f),
            _ => Bind::Const(Value::Null),
        };
        self.grant_each(tx, &perms, meta, ids, &bind, MUTATION_DENIED)
            .await
    }

    /// Adding (`connect`) or removing edges between `this` (a node of the model that owns
    /// `field`) and each of `others` (reference §5.3): a query-less relation permission with the
    /// flag, or one whose query is true for the pair.
    pub async fn check_relation(
        &self,
        tx: &Counted<'_, Tx>,
        field: &RelFieldMeta,
        this: &str,
        others: &[&str],
        connect: bool,
    ) -> ApiResult<()> {
        if self.bypass() || others.is_empty() {
            return Ok(());
        }
        let denied = if connect {
            CONNECT_DENIED
        } else {
            DISCONNECT_DENIED
        };
        let perms: Vec<&PermissionMeta> = self
            .service
            .permissions
            .iter()
            .filter(|p| match p.target {
                PermissionTarget::Relation {
                    relation,
                    connect: c,
                    disconnect: d,
                } => relation == field.relation && if connect { c } else { d },
                _ => false,
            })
            .filter(|p| self.applies(p))
            .collect();
        let this_is_a = field.own == "A";
        let user = self.user();
        let this_value = Value::String(this.to_owned());
        let bind = |src: VarSource| match src {
            VarSource::UserId => Bind::Const(user.clone()),
            VarSource::SideA if this_is_a => Bind::Const(this_value.clone()),
            VarSource::SideB if !this_is_a => Bind::Const(this_value.clone()),
            VarSource::SideA | VarSource::SideB => Bind::OuterId,
            _ => Bind::Const(Value::Null),
        };
        self.grant_each(tx, &perms, field.target, others, &bind, denied)
            .await
    }

    /// Grants when one of `perms` has no query, or when for every node `ids` of `outer` one of
    /// their queries is true; otherwise 3008 with `denied`.
    async fn grant_each(
        &self,
        tx: &Counted<'_, Tx>,
        perms: &[&PermissionMeta],
        outer: &'static ModelMeta,
        ids: &[&str],
        bind: eval::Binder<'_>,
        denied: &'static str,
    ) -> ApiResult<()> {
        if perms.iter().any(|p| p.query.is_none()) {
            return Ok(());
        }
        let texts: Vec<&PermissionQuery> = perms.iter().filter_map(|p| p.query).collect();
        if !texts.is_empty() {
            let found = eval::for_nodes(tx, self.service, &texts, outer, ids, bind).await?;
            if ids
                .iter()
                .all(|id| found.get(*id).is_some_and(|flags| flags.iter().any(|g| *g)))
            {
                return Ok(());
            }
        }
        Err(ApiError::InsufficientPermissions(denied))
    }
}

/// `$input_<f>`: the value given for column `f`, null when absent.
fn input_value(write: &Write, field: usize) -> Value {
    write
        .values
        .iter()
        .find(|(i, _)| *i == field)
        .and_then(|(_, v)| v.as_ref())
        .map_or(Value::Null, |v| {
            Value::from_json(v.to_json()).unwrap_or(Value::Null)
        })
}

/// `$input_<f>Id`: the id given through `<f>Id` for relation field `r`, null otherwise.
fn input_relation_id(write: &Write, r: usize) -> Value {
    write
        .rels
        .iter()
        .find(|a| a.field == r)
        .and_then(|a| a.ids.as_ref()?.last().cloned())
        .map_or(Value::Null, Value::String)
}
