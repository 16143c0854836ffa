//! The event bus of servers on PostgreSQL: events reach the subscriptions of every server
//! instance on the same database, through `LISTEN/NOTIFY`.
//!
//! An instance hands its own events to its subscriptions at once (as [`super::LocalBus`]
//! does) and sends them, in commit order, to one notification channel per database schema;
//! each instance listens to that channel and hands on the events of the others (it knows its
//! own by the instance id they carry). One task sends the notifications of an instance one after
//! the other, so the events of each node keep their commit order everywhere.
//!
//! Changes are recorded (and, for updates and deletes, their previous values read) only while
//! some instance has subscriptions: an instance with subscriptions says so on the channel at
//! its first subscription and every 2 s after, and the others record and send their changes
//! for 7 s after each such word. A mutation that commits on another instance in the moment
//! between a first subscription and the others hearing of it (a notification's trip) is not
//! sent.
//!
//! A notification carries at most 8000 bytes: a mutation's events are split over as many
//! notifications as they need, and an event that is too large alone (a node with kilobytes of
//! previous values) is sent without its previous values, which the other instances' payloads
//! then show as null. Notifications sent while an instance's listening connection is down are
//! lost (PostgreSQL keeps none); the connection is restored.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::{Batch, Event, EventBus, LocalBus, events_of};
use crate::engine::{Change, ChangeKind, Observer};
use crate::model::{FieldMeta, ServiceMeta, Val, cuid};
use crate::storage::{Db, SCHEMA_CHANGED, events_channel as channel_of};

/// PostgreSQL's limit on a notification's payload, less room for the envelope.
const MAX_PAYLOAD: usize = 7900;

/// How often an instance with subscriptions says so to the others.
const ANNOUNCE: Duration = Duration::from_secs(2);
/// How long an instance records and sends its changes after another said it has subscriptions.
const ANNOUNCED_FOR: Duration = Duration::from_secs(7);

/// The event bus over `LISTEN/NOTIFY`.
pub struct PgBus {
    local: LocalBus,
    instance: String,
    outgoing: mpsc::UnboundedSender<String>,
    /// Until when another instance is known to have subscriptions.
    remote_until: Mutex<Option<Instant>>,
}

impl PgBus {
    /// Starts listening on `db` for the events of `service` sent by other instances, and the
    /// task that sends this instance's.
    pub async fn start(db: Db, service: &'static ServiceMeta) -> Result<Arc<PgBus>, String> {
        let schema = db.schema_name().await.map_err(|e| e.to_string())?;
        let channel = channel_of(&schema);
        let mut listener = db.listen(&channel).await.map_err(|e| e.to_string())?;
        let (outgoing, mut queue) = mpsc::unbounded_channel::<String>();
        let bus = Arc::new(PgBus {
            local: LocalBus::default(),
            instance: cuid(),
            outgoing,
            remote_until: Mutex::new(None),
        });
        // While this instance has subscriptions, it says so to the others every few seconds.
        let announcing = Arc::downgrade(&bus);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(ANNOUNCE);
            loop {
                ticks.tick().await;
                let Some(bus) = announcing.upgrade() else {
                    return;
                };
                if bus.local.active() {
                    bus.announce();
                }
            }
        });
        let sender = db.clone();
        tokio::spawn(async move {
            while let Some(payload) = queue.recv().await {
                // A notification that cannot be sent is lost for the other instances only.
                let _ = sender.notify(&channel, &payload).await;
            }
        });
        let receiving = Arc::downgrade(&bus);
        tokio::spawn(async move {
            loop {
                let payload = listener.recv().await;
                let Some(bus) = receiving.upgrade() else {
                    return;
                };
                if let Some(events) = bus.decode(service, &payload) {
                    bus.local.publish(events);
                }
            }
        });
        Ok(bus)
    }

    /// Tells the other instances that this one has subscriptions.
    fn announce(&self) {
        let _ = self
            .outgoing
            .send(json!({ "instance": self.instance, "listening": true }).to_string());
    }

    /// Whether another instance said lately that it has subscriptions.
    fn others_listen(&self) -> bool {
        let until = *self.remote_until.lock().unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|until| Instant::now() < until)
    }

    /// The events of another instance's notification; `None` for this instance's own, for an
    /// announcement (noted), and for what does not decode.
    fn decode(&self, service: &'static ServiceMeta, payload: &str) -> Option<Vec<Event>> {
        let value: Value = serde_json::from_str(payload).ok()?;
        if value["instance"].as_str() == Some(self.instance.as_str()) {
            return None;
        }
        if value[SCHEMA_CHANGED] == json!(true) {
            self.local.schema_changed();
            return None;
        }
        if value["listening"] == json!(true) {
            let mut until = self.remote_until.lock().unwrap_or_else(|e| e.into_inner());
            *until = Some(Instant::now() + ANNOUNCED_FOR);
            return None;
        }
        let events = value["events"].as_array()?;
        Some(
            events
                .iter()
                .filter_map(|e| decode_event(service, e))
                .collect(),
        )
    }
}

impl Observer for PgBus {
    /// While this instance or another has subscriptions.
    fn active(&self) -> bool {
        self.local.active() || self.others_listen()
    }

    fn committed(&self, changes: &[Change]) {
        let events = events_of(changes);
        if events.is_empty() {
            return;
        }
        for payload in payloads(&self.instance, &events) {
            let _ = self.outgoing.send(payload);
        }
        self.local.publish(events);
    }
}

impl EventBus for PgBus {
    /// The first subscription of this instance is announced to the others at once.
    fn subscribe(&self) -> broadcast::Receiver<Batch> {
        let first = !self.local.active();
        let receiver = self.local.subscribe();
        if first {
            self.announce();
        }
        receiver
    }

    fn schema_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.local.schema_changes()
    }

    fn schema_changed(&self) {
        self.local.schema_changed();
    }
}

/// The notifications of one mutation's events: as few as fit in [`MAX_PAYLOAD`] each.
fn payloads(instance: &str, events: &[Event]) -> Vec<String> {
    // `{"instance":"…","events":[` + the events, comma-separated + `]}`: each event is
    // serialised once and the sizes are summed.
    let head = format!("{{\"instance\":{},\"events\":[", Value::from(instance));
    let room = MAX_PAYLOAD.saturating_sub(head.len() + 2);
    let mut out = Vec::new();
    let mut batch = head.clone();
    for event in events {
        let mut encoded = encode_event(event, true).to_string();
        if encoded.len() > room {
            encoded = encode_event(event, false).to_string();
        }
        let empty = batch.len() == head.len();
        if !empty && batch.len() + 1 + encoded.len() + 2 > MAX_PAYLOAD {
            batch.push_str("]}");
            out.push(std::mem::replace(&mut batch, head.clone()));
        }
        if batch.len() > head.len() {
            batch.push(',');
        }
        batch.push_str(&encoded);
    }
    if batch.len() > head.len() {
        batch.push_str("]}");
        out.push(batch);
    }
    out
}

fn encode_event(event: &Event, with_previous: bool) -> Value {
    json!({
        "model": event.model.name,
        "id": event.id,
        "kind": event.kind.name(),
        "fields": event.updated_fields,
        "previous": if with_previous {
            event.previous.as_ref().map(|values| values.iter().map(Val::to_json).collect::<Vec<_>>())
        } else {
            None
        },
    })
}

fn decode_event(service: &'static ServiceMeta, value: &Value) -> Option<Event> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, ModelMeta};

    static FIELDS: [FieldMeta; 2] = [
        FieldMeta::new("id", Kind::Id),
        FieldMeta::new("body", Kind::String),
    ];
    static POST: ModelMeta = ModelMeta {
        name: "Post",
        plural: "Posts",
        table: "Post",
        filter_name: "PostFilter",
        order_by_name: "PostOrderBy",
        fields: &FIELDS,
        id: 0,
        created_at: 0,
        updated_at: 0,
        relations: &[],
    };
    static SERVICE: ServiceMeta = ServiceMeta {
        name: "blog",
        models: &[&POST],
        relations: &[],
        root_tokens: &[],
        permissions: &[],
        migration_hints: &[],
        enums: &[],
    };

    fn deleted(id: usize, body: usize) -> Event {
        Event {
            model: &POST,
            id: format!("c{id}"),
            kind: ChangeKind::Deleted,
            updated_fields: Vec::new(),
            previous: Some(vec![
                Val::String(format!("c{id}")),
                Val::String("x".repeat(body)),
            ]),
        }
    }

    /// A mutation's events are split over notifications of at most 8000 bytes, in order; an
    /// event too large alone travels without its previous values; another instance decodes
    /// them all, and skips its own.
    #[test]
    fn events_fit_notifications() {
        let mut events: Vec<Event> = (0..300).map(|i| deleted(i, 100)).collect();
        events.insert(150, deleted(999, 9000));
        let sent = payloads("me", &events);
        assert!(sent.len() > 1, "{} notifications", sent.len());
        assert!(sent.iter().all(|p| p.len() <= 8000));
        let (tx, _) = mpsc::unbounded_channel();
        let other = PgBus {
            local: LocalBus::default(),
            instance: "other".into(),
            outgoing: tx,
            remote_until: Mutex::new(None),
        };
        let got: Vec<Event> = sent
            .iter()
            .flat_map(|p| other.decode(&SERVICE, p).expect("decodes"))
            .collect();
        let ids = |list: &[Event]| list.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&events));
        assert!(
            got[150].previous.is_none(),
            "the oversized event lost its previous values"
        );
        assert_eq!(got[151].previous, events[151].previous);
        let (tx, _) = mpsc::unbounded_channel();
        let me = PgBus {
            local: LocalBus::default(),
            instance: "me".into(),
            outgoing: tx,
            remote_until: Mutex::new(None),
        };
        assert!(
            me.decode(&SERVICE, &sent[0]).is_none(),
            "its own events come back ignored"
        );
    }
}
