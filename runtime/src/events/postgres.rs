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
//! previous values) is kept whole in the table `_svc_event` by the sending task, whose next
//! notification names its row; the other instances read it from there (in the order of the
//! notifications, so commit order holds). Rows are removed after ten minutes. Notifications
//! sent while an instance's listening connection is down are lost (PostgreSQL keeps none); the
//! connection is restored.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::{Batch, Event, EventBus, LocalBus, events_of};
use crate::engine::{Change, Observer};
use crate::model::{ServiceMeta, cuid};
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
    outgoing: mpsc::UnboundedSender<Outgoing>,
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
        let (outgoing, mut queue) = mpsc::unbounded_channel::<Outgoing>();
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
        let from = bus.instance.clone();
        tokio::spawn(async move {
            while let Some(out) = queue.recv().await {
                // A notification that cannot be sent is lost for the other instances only.
                let payload = match out {
                    Outgoing::Notify(payload) => payload,
                    Outgoing::Store { id, payload } => {
                        if sender.store_event(&id, &payload).await.is_err() {
                            continue;
                        }
                        json!({ "instance": from, "stored": id }).to_string()
                    }
                };
                let _ = sender.notify(&channel, &payload).await;
            }
        });
        let loader = db.clone();
        let receiving = Arc::downgrade(&bus);
        tokio::spawn(async move {
            loop {
                let mut payload = listener.recv().await;
                let Some(bus) = receiving.upgrade() else {
                    return;
                };
                // Events too large for a notification are read from the table they were kept in.
                if let Some(id) = bus.stored_elsewhere(&payload) {
                    match loader.stored_event(&id).await {
                        Ok(Some(stored)) => payload = stored,
                        _ => continue,
                    }
                }
                if let Some(events) = bus.decode(service, &payload) {
                    bus.local.publish(events);
                }
            }
        });
        Ok(bus)
    }

    /// Tells the other instances that this one has subscriptions.
    fn announce(&self) {
        let _ = self.outgoing.send(Outgoing::Notify(
            json!({ "instance": self.instance, "listening": true }).to_string(),
        ));
    }

    /// The id of the stored events a notification of another instance points at.
    fn stored_elsewhere(&self, payload: &str) -> Option<String> {
        let value: Value = serde_json::from_str(payload).ok()?;
        if value["instance"].as_str() == Some(self.instance.as_str()) {
            return None;
        }
        value["stored"].as_str().map(str::to_owned)
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
                .filter_map(|e| Event::from_json(service, e))
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
        // Changes recorded for another observer (the functions' outbox) while no instance has
        // subscriptions are nobody's events.
        if !self.active() {
            return;
        }
        let events = events_of(changes);
        if events.is_empty() {
            return;
        }
        for out in payloads(&self.instance, &events) {
            let _ = self.outgoing.send(out);
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

/// What the sending task sends: a notification, or events too large for one, kept in the
/// event table under `id` first and then announced by a notification naming the id.
#[derive(Debug)]
enum Outgoing {
    Notify(String),
    Store { id: String, payload: String },
}

/// The notifications of one mutation's events: as few as fit in [`MAX_PAYLOAD`] each, in
/// order; an event too large alone is stored (with everything it carries) and its notification
/// names it.
fn payloads(instance: &str, events: &[Event]) -> Vec<Outgoing> {
    // `{"instance":"…","events":[` + the events, comma-separated + `]}`: each event is
    // serialised once and the sizes are summed.
    let head = format!("{{\"instance\":{},\"events\":[", Value::from(instance));
    let room = MAX_PAYLOAD.saturating_sub(head.len() + 2);
    let mut out = Vec::new();
    let mut batch = head.clone();
    for event in events {
        let encoded = event.to_json().to_string();
        if encoded.len() > room {
            if batch.len() > head.len() {
                batch.push_str("]}");
                out.push(Outgoing::Notify(std::mem::replace(
                    &mut batch,
                    head.clone(),
                )));
            }
            out.push(Outgoing::Store {
                id: cuid(),
                payload: format!("{head}{encoded}]}}"),
            });
            continue;
        }
        let empty = batch.len() == head.len();
        if !empty && batch.len() + 1 + encoded.len() + 2 > MAX_PAYLOAD {
            batch.push_str("]}");
            out.push(Outgoing::Notify(std::mem::replace(
                &mut batch,
                head.clone(),
            )));
        }
        if batch.len() > head.len() {
            batch.push(',');
        }
        batch.push_str(&encoded);
    }
    if batch.len() > head.len() {
        batch.push_str("]}");
        out.push(Outgoing::Notify(batch));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ChangeKind;
    use crate::model::{FieldMeta, Kind, ModelMeta, Val};

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
        functions: &[],
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
    /// event too large alone is stored whole, between the notifications before and after it;
    /// another instance decodes them all (the stored one from its stored text), and skips its
    /// own.
    #[test]
    fn events_fit_notifications() {
        let mut events: Vec<Event> = (0..300).map(|i| deleted(i, 100)).collect();
        events.insert(150, deleted(999, 9000));
        let sent = payloads("me", &events);
        assert!(sent.len() > 2, "{} notifications", sent.len());
        let (tx, _) = mpsc::unbounded_channel();
        let other = PgBus {
            local: LocalBus::default(),
            instance: "other".into(),
            outgoing: tx,
            remote_until: Mutex::new(None),
        };
        let mut got: Vec<Event> = Vec::new();
        let mut stored = 0;
        for out in &sent {
            match out {
                Outgoing::Notify(p) => {
                    assert!(p.len() <= 8000);
                    got.extend(other.decode(&SERVICE, p).expect("decodes"));
                }
                Outgoing::Store { id, payload } => {
                    stored += 1;
                    let note = json!({ "instance": "me", "stored": id }).to_string();
                    assert_eq!(other.stored_elsewhere(&note).as_deref(), Some(id.as_str()));
                    got.extend(other.decode(&SERVICE, payload).expect("decodes"));
                }
            }
        }
        assert_eq!(stored, 1, "only the oversized event is stored");
        let ids = |list: &[Event]| list.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&events));
        assert_eq!(got[150].previous, events[150].previous, "stored whole");
        assert_eq!(got[151].previous, events[151].previous);
        let Outgoing::Notify(first) = &sent[0] else {
            panic!("the first notification is a batch");
        };
        let (tx, _) = mpsc::unbounded_channel();
        let me = PgBus {
            local: LocalBus::default(),
            instance: "me".into(),
            outgoing: tx,
            remote_until: Mutex::new(None),
        };
        assert!(
            me.stored_elsewhere(&json!({ "instance": "me", "stored": "x" }).to_string())
                .is_none(),
            "its own stored events are not read back"
        );
        assert!(
            me.decode(&SERVICE, first).is_none(),
            "its own events come back ignored"
        );
    }
}
