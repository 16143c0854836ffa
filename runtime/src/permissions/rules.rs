//! Read permissions, per node and per scalar field (reference §5.3 "read"): which fields a kind
//! of requester may read without a permission query, which a query could grant, and how read
//! queries bind their variables. The rules per model are worked out once at start
//! ([`ReadTable`]); the GraphQL layer's field guard and the engine's read batch consult them.

use async_graphql::Value;

use super::eval::Bind;
use super::{Perms, covers, model_index};
use crate::auth::Principal;
use crate::model::{ModelMeta, Operation, PermissionMeta, PermissionQuery, ServiceMeta, VarSource};

/// The read rules of one model for one kind of requester, worked out once at start.
#[derive(Debug, Default)]
pub struct ReadRules {
    /// An applicable `"*"` permission opens everything.
    bypass: bool,
    /// A query-less permission covers the whole type.
    all_free: bool,
    /// Fields covered by query-less permissions.
    free: Vec<&'static str>,
    /// The applicable permissions with a query, in declaration order (the order of the flags).
    queries: Vec<&'static PermissionMeta>,
}

impl ReadRules {
    fn new(perms: Perms<'_>, model: &'static ModelMeta) -> ReadRules {
        let reads = perms.type_perms(model, Operation::Read);
        let (free, queries): (Vec<_>, Vec<_>) = reads.into_iter().partition(|p| p.query.is_none());
        ReadRules {
            bypass: perms.bypass(),
            all_free: free.iter().any(|p| p.fields.is_none()),
            free: free
                .iter()
                .filter_map(|p| p.fields)
                .flatten()
                .copied()
                .collect(),
            queries,
        }
    }

    /// Whether `field` passes without evaluating any query.
    pub fn passes(&self, field: &str) -> bool {
        self.bypass || self.all_free || self.free.contains(&field)
    }

    /// Whether a permission query could grant `field`.
    pub fn checkable(&self, field: &str) -> bool {
        self.queries.iter().any(|p| covers(p, field))
    }

    /// Whether reading `field` needs the node's query flags.
    pub fn needs_flags(&self, field: &str) -> bool {
        !self.passes(field) && self.checkable(field)
    }

    /// Whether a query whose flag is set covers `field`.
    pub fn granted(&self, field: &str, flags: &[bool]) -> bool {
        self.queries
            .iter()
            .zip(flags)
            .any(|(p, granted)| *granted && covers(p, field))
    }

    /// The compiled queries, in the order of the flags.
    pub fn queries(&self) -> impl Iterator<Item = &'static PermissionQuery> + '_ {
        self.queries.iter().filter_map(|p| p.query)
    }
}

/// [`ReadRules`] per model, for anonymous and for authenticated requesters (what `authenticated:
/// true` tells apart). Admins never consult them.
#[derive(Debug)]
pub struct ReadTable {
    service: &'static ServiceMeta,
    rules: Vec<[ReadRules; 2]>,
}

impl ReadTable {
    /// Works out the read rules of every model of `service` (once, at start).
    pub fn new(service: &'static ServiceMeta) -> ReadTable {
        let anonymous = Principal::Anonymous;
        let member = Principal::User {
            id: String::new(),
            model: String::new(),
        };
        let rules = service
            .models
            .iter()
            .map(|m| {
                [
                    ReadRules::new(Perms::new(&anonymous, service), m),
                    ReadRules::new(Perms::new(&member, service), m),
                ]
            })
            .collect();
        ReadTable { service, rules }
    }

    /// The rules of `model` for `principal`.
    pub fn of(&self, model: &ModelMeta, principal: &Principal) -> Option<&ReadRules> {
        let i = model_index(self.service, model)?;
        Some(&self.rules[i][usize::from(principal.is_authenticated())])
    }
}

/// How the variables of read queries are bound for `principal`.
pub fn binder(principal: &Principal) -> impl Fn(VarSource) -> Bind + Sync + use<> {
    let user = Value::String(principal.user_id().to_owned());
    move |src| match src {
        VarSource::UserId => Bind::Const(user.clone()),
        VarSource::NodeId => Bind::OuterId,
        VarSource::NodeField(f) => Bind::OuterField(f),
        _ => Bind::Const(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{FieldMeta, Kind, PermissionTarget};

    const fn field(name: &'static str) -> FieldMeta {
        FieldMeta::new(name, Kind::String)
    }

    static NOTE: ModelMeta = ModelMeta {
        name: "Note",
        plural: "Notes",
        table: "Note",
        filter_name: "NoteFilter",
        order_by_name: "NoteOrderBy",
        fields: &[field("id"), field("text"), field("secret")],
        id: 0,
        created_at: 0,
        updated_at: 0,
        relations: &[],
    };

    static MODELS: [&ModelMeta; 1] = [&NOTE];

    const fn service(permissions: &'static [PermissionMeta]) -> ServiceMeta {
        ServiceMeta {
            name: "notes",
            models: &MODELS,
            relations: &[],
            root_tokens: &[],
            permissions,
            migration_hints: &[],
            enums: &[],
            functions: &[],
        }
    }

    const READ_TEXT: PermissionMeta = PermissionMeta {
        target: PermissionTarget::Type {
            model: 0,
            op: Operation::Read,
        },
        authenticated: false,
        fields: Some(&["id", "text"]),
        query: None,
    };

    /// `"*"` opens every field to the requesters it applies to, and only to them.
    #[test]
    fn everything_permission_opens_all_fields() {
        static OPEN_TO_MEMBERS: ServiceMeta = service(&[
            READ_TEXT,
            PermissionMeta {
                target: PermissionTarget::All,
                authenticated: true,
                fields: None,
                query: None,
            },
        ]);
        let table = ReadTable::new(&OPEN_TO_MEMBERS);
        let member = Principal::User {
            id: "u1".into(),
            model: "User".into(),
        };
        let anonymous = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        let members = table.of(&NOTE, &member).expect("rules");
        assert!(anonymous.passes("text") && !anonymous.passes("secret"));
        assert!(members.passes("text") && members.passes("secret"));
        assert!(!Perms::new(&Principal::Anonymous, &OPEN_TO_MEMBERS).bypass());
        assert!(Perms::new(&member, &OPEN_TO_MEMBERS).bypass());

        static OPEN_TO_ALL: ServiceMeta = service(&[PermissionMeta {
            target: PermissionTarget::All,
            authenticated: false,
            fields: None,
            query: None,
        }]);
        let table = ReadTable::new(&OPEN_TO_ALL);
        let anonymous = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        assert!(anonymous.passes("secret"));
        assert!(Perms::new(&Principal::Anonymous, &OPEN_TO_ALL).bypass());
    }

    /// Without any permission nothing passes, and no query could grant anything.
    #[test]
    fn no_permission_denies_every_field() {
        static CLOSED: ServiceMeta = service(&[]);
        let table = ReadTable::new(&CLOSED);
        let rules = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        assert!(!rules.passes("id") && !rules.needs_flags("id"));
        static TEXT_ONLY: ServiceMeta = service(&[READ_TEXT]);
        let table = ReadTable::new(&TEXT_ONLY);
        let rules = table.of(&NOTE, &Principal::Anonymous).expect("rules");
        assert!(rules.passes("id") && rules.passes("text") && !rules.passes("secret"));
        assert!(!rules.needs_flags("secret"));
    }
}
