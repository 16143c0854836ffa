//! Events (reference §4.4): what the subscriptions see of committed mutations. The engine's
//! commit point hands each committed mutation's changes to its observers; the [`EventBus`] is
//! one, and turns them into [`Event`]s by the reference's rules:
//!
//! - every created node fires `CREATED` for its model, nodes of nested creates too;
//! - an update fires `UPDATED` only when it supplied a scalar field (relation-only updates fire
//!   nothing), with the names of the fields supplied, changed or not;
//! - a delete fires `DELETED` with the node's previous values (cascaded deletes too);
//! - relation changes (`addTo`/`removeFrom`/`set`/`unset`, nested connect/disconnect) fire
//!   nothing.
//!
//! A rolled-back mutation reaches no observer, so it fires nothing. The events of one mutation
//! travel together, in the order its rows were written ([`Batch`]).
//!
//! [`LocalBus`] carries events within the process (SQLite); [`PgBus`] also between the server
//! instances on one PostgreSQL database, through `LISTEN/NOTIFY`.

mod postgres;

use std::sync::Arc;

use tokio::sync::{broadcast, watch};

pub use postgres::PgBus;

use crate::engine::{Change, ChangeKind, Observer};
use serde_json::{Value, json};

use crate::model::{FieldMeta, ModelMeta, ServiceMeta, Val};

/// A node change a subscription may be told of.
#[derive(Debug, Clone)]
pub struct Event {
    /// The node's model.
    pub model: &'static ModelMeta,
    /// The node's id.
    pub id: String,
    /// `mutation`: whether the node was created, updated or deleted.
    pub kind: ChangeKind,
    /// `updatedFields`: the scalar fields an update supplied (empty for creates and deletes).
    pub updated_fields: Vec<&'static str>,
    /// `previousValues`: the node's values before an update or delete, one per field of
    /// `model.fields` (`None` for creates).
    pub previous: Option<Vec<Val>>,
}

impl Event {
    /// The event as JSON: how it travels between instances and waits in the outbox.
    pub fn to_json(&self) -> Value {
        json!({
            "model": self.model.name,
            "id": self.id,
            "kind": self.kind.name(),
            "fields": self.updated_fields,
            "previous": self.previous.as_ref().map(|values| values.iter().map(Val::to_json).collect::<Vec<_>>()),
        })
    }

    /// The event [`Event::to_json`] made, read against `service`'s model; `None` when it does
    /// not fit the model.
    pub fn from_json(service: &'static ServiceMeta, value: &Value) -> Option<Event> {
        let model = *service
            .models
            .iter()
            .find(|m| Some(m.name) == value["model"].as_str())?;
        let kind = [
            ChangeKind::Created,
            ChangeKind::Updated,
            ChangeKind::Deleted,
        ]
        .into_iter()
        .find(|k| Some(k.name()) == value["kind"].as_str())?;
        let updated_fields = value["fields"]
            .as_array()?
            .iter()
            .filter_map(|name| model.fields.iter().find(|f| Some(f.name) == name.as_str()))
            .map(|f| f.name)
            .collect();
        let previous = value["previous"].as_array().map(|values| {
            model
                .fields
                .iter()
                .zip(values)
                .map(|(field, value)| decode_value(field, value.clone()))
                .collect()
        });
        Some(Event {
            model,
            id: value["id"].as_str()?.to_owned(),
            kind,
            updated_fields,
            previous,
        })
    }
}

/// A field's value from its JSON form ([`Val::to_json`]).
fn decode_value(field: &FieldMeta, value: Value) -> Val {
    match value {
        Value::Array(items) if field.list => Val::List(
            items
                .into_iter()
                .map(|item| Val::from_stored_json(item, field.kind))
                .collect(),
        ),
        other => Val::from_stored_json(other, field.kind),
    }
}

/// The events of one committed mutation, in the order its rows were written.
pub type Batch = Arc<[Event]>;

/// The events of a committed mutation's changes (the rules of the module's documentation).
pub fn events_of(changes: &[Change]) -> Vec<Event> {
    changes
        .iter()
        .filter_map(|change| match change {
            Change::Node {
                model,
                id,
                kind,
                fields,
                previous,
            } => {
                if *kind == ChangeKind::Updated && fields.is_empty() {
                    return None;
                }
                Some(Event {
                    model,
                    id: id.clone(),
                    kind: *kind,
                    updated_fields: if *kind == ChangeKind::Updated {
                        fields.clone()
                    } else {
                        Vec::new()
                    },
                    previous: match kind {
                        ChangeKind::Created => None,
                        _ => previous.clone(),
                    },
                })
            }
            Change::Edge(_) => None,
        })
        .collect()
}

/// Carries committed mutations' events to the subscriptions: an observer of the commit point,
/// and the source subscriptions listen to.
pub trait EventBus: Observer {
    /// A receiver of every batch of events published from now on.
    fn subscribe(&self) -> broadcast::Receiver<Batch>;

    /// The number of schema changes heard of since the start (a migration of the database's
    /// model, by a deploy): subscriptions end with `Schema changed` at each.
    fn schema_changes(&self) -> watch::Receiver<u64>;

    /// Tells this instance's listeners that the database's model changed.
    fn schema_changed(&self);
}

/// How many batches a listener may fall behind before it misses some: the listener is the
/// subscriptions' dispatcher, one task per service that only hands batches on.
const BACKLOG: usize = 4096;

/// The in-process event bus: a broadcast channel.
pub struct LocalBus {
    sender: broadcast::Sender<Batch>,
    schema: watch::Sender<u64>,
}

impl Default for LocalBus {
    fn default() -> Self {
        LocalBus {
            sender: broadcast::channel(BACKLOG).0,
            schema: watch::channel(0).0,
        }
    }
}

impl LocalBus {
    /// Hands `events` to this process's listeners.
    fn publish(&self, events: Vec<Event>) {
        if !events.is_empty() {
            // No listener is not an error: nobody subscribed.
            let _ = self.sender.send(events.into());
        }
    }
}

impl Observer for LocalBus {
    fn active(&self) -> bool {
        self.sender.receiver_count() > 0
    }

    fn committed(&self, changes: &[Change]) {
        self.publish(events_of(changes));
    }
}

impl EventBus for LocalBus {
    fn subscribe(&self) -> broadcast::Receiver<Batch> {
        self.sender.subscribe()
    }

    fn schema_changes(&self) -> watch::Receiver<u64> {
        self.schema.subscribe()
    }

    fn schema_changed(&self) {
        self.schema.send_modify(|n| *n += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EdgeChange;
    use crate::model::{ModelMeta, RelationMeta};

    static POST: ModelMeta = ModelMeta {
        name: "Post",
        plural: "Posts",
        table: "Post",
        filter_name: "PostFilter",
        order_by_name: "PostOrderBy",
        fields: &[],
        id: 0,
        created_at: 0,
        updated_at: 0,
        relations: &[],
    };
    static REL: RelationMeta = RelationMeta {
        name: "PostTags",
        table: "_PostTags",
        a: "Post",
        b: "Tag",
        a_list: true,
        b_list: true,
        a_name: "tagsTag",
        b_name: "postsPost",
    };

    fn node(kind: ChangeKind, id: &str, fields: Vec<&'static str>) -> Change {
        Change::Node {
            model: &POST,
            id: id.to_owned(),
            kind,
            fields,
            previous: (kind != ChangeKind::Created).then(Vec::new),
        }
    }

    /// Creates and deletes fire; updates only with a scalar field; edges never; the order
    /// holds; a batch reaches every listener once.
    #[test]
    fn events_follow_the_reference_rules() {
        let bus = LocalBus::default();
        let mut listener = bus.subscribe();
        let edge = Change::Edge(EdgeChange {
            relation: &REL,
            a: "a".into(),
            b: "b".into(),
            added: true,
        });
        bus.committed(&[
            node(ChangeKind::Created, "c1", vec!["title"]),
            node(ChangeKind::Created, "c2", Vec::new()),
            edge.clone(),
            node(ChangeKind::Updated, "u1", Vec::new()),
            node(ChangeKind::Updated, "u2", vec!["title", "votes"]),
            node(ChangeKind::Deleted, "d1", Vec::new()),
        ]);
        bus.committed(&[edge, node(ChangeKind::Updated, "u3", Vec::new())]);
        let batch = listener.try_recv().expect("one batch");
        let seen: Vec<_> = batch
            .iter()
            .map(|e| {
                (
                    e.kind,
                    e.id.as_str(),
                    e.updated_fields.clone(),
                    e.previous.is_some(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                (ChangeKind::Created, "c1", vec![], false),
                (ChangeKind::Created, "c2", vec![], false),
                (ChangeKind::Updated, "u2", vec!["title", "votes"], true),
                (ChangeKind::Deleted, "d1", vec![], true),
            ]
        );
        assert!(
            listener.try_recv().is_err(),
            "a mutation without events sends nothing"
        );
    }
}
