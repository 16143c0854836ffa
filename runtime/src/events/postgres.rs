//! The event bus of servers on PostgreSQL: events reach the subscriptions of every server
//! instance on the same database, through `LISTEN/NOTIFY`.
//!
//! An instance hands its own events to its subscriptions at once (as [`super::LocalBus`]
//! does) and sends them to one notification channel per database schema, in the mutation's
//! transaction just before it commits ([`Observer::notices`]): PostgreSQL delivers them when
//! the transaction commits, in commit order, and never for one rolled back, so the other
//! instances hear of every committed mutation even when the instance that made it dies right
//! after its commit (a mutation that would be one statement without a transaction gets one
//! while [`Observer::writes_in_transaction`]). Each instance listens to that channel and hands
//! on the events of the others (it knows its own by the instance id they carry).
//!
//! Changes are recorded (and, for updates and deletes, their previous values read) only while
//! some instance has subscriptions: an instance with subscriptions says so on the channel at
//! its first subscription and every 2 s after, and the others record and send their changes
//! for 7 s after each such word. A starting instance greets the others on the channel, and
//! those with subscriptions announce them at once; it waits up to 150 ms for that before it
//! serves. A mutation that commits on another instance in the moment between a first
//! subscription and the others hearing of it (a notification's trip) is not sent.
//!
//! A notification carries at most 8000 bytes: a mutation's events are split over as many
//! notifications as they need, and an event that is too large alone (a node with kilobytes of
//! previous values) is kept whole in the table `_svc_event`, in the same transaction, and the
//! notification after it names its row; the other instances read it from there (in the order
//! of the notifications, so commit order holds). Rows are removed after ten minutes.
//! Notifications sent while an instance's listening connection is down are lost (PostgreSQL
//! keeps none); the connection is restored.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;

use super::{Batch, Event, EventBus, LocalBus, events_of};
use crate::engine::{Change, Observer};
use crate::model::{ServiceMeta, cuid};
use crate::storage::{Db, Notice, SCHEMA_CHANGED, events_channel as channel_of};

/// PostgreSQL's limit on a notification's payload, less room for the envelope.
const MAX_PAYLOAD: usize = 7900;

/// How often an instance with subscriptions says so to the others.
const ANNOUNCE: Duration = Duration::from_secs(2);
/// How long an instance records and sends its changes after another said it has subscriptions.
const ANNOUNCED_FOR: Duration = Duration::from_secs(7);
/// How long a starting instance waits for the others' answers to its greeting.
const GREETING_ANSWERED_WITHIN: Duration = Duration::from_millis(150);

/// The event bus over `LISTEN/NOTIFY`.
pub struct PgBus {
    local: LocalBus,
    instance: String,
    /// The notification channel of the database schema.
    channel: String,
    /// Announcements, sent by a task of their own.
    outgoing: mpsc::UnboundedSender<String>,
    /// Until when another instance is known to have subscriptions.
    remote_until: Mutex<Option<Instant>>,
    /// Told when another instance said it has subscriptions.
    heard: tokio::sync::Notify,
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
            channel: channel.clone(),
            outgoing,
            remote_until: Mutex::new(None),
            heard: tokio::sync::Notify::new(),
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
                // An announcement that cannot be sent is made again at the next tick.
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
        // The others announce their subscriptions only every few seconds: a new instance asks,
        // and those with subscriptions answer at once, before it serves its first request.
        let greeting = json!({ "instance": bus.instance, "greeting": true }).to_string();
        if db.notify(&bus.channel, &greeting).await.is_ok() {
            let _ = tokio::time::timeout(GREETING_ANSWERED_WITHIN, bus.heard.notified()).await;
        }
        Ok(bus)
    }

    /// Tells the other instances that this one has subscriptions.
    fn announce(&self) {
        let _ = self
            .outgoing
            .send(json!({ "instance": self.instance, "listening": true }).to_string());
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
            self.heard.notify_one();
            return None;
        }
        if value["greeting"] == json!(true) {
            if self.local.active() {
                self.announce();
            }
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

    /// The other instances' share, sent in the transaction.
    fn notices(&self, changes: &[Change]) -> Vec<Notice> {
        // Changes recorded for another observer (the functions' outbox) while no instance has
        // subscriptions are nobody's events.
        if !self.others_listen() {
            return Vec::new();
        }
        notices(&self.channel, &self.instance, &events_of(changes))
    }

    /// While another instance has subscriptions: the notices go in the transaction.
    fn writes_in_transaction(&self) -> bool {
        self.others_listen()
    }

    /// This instance's share, after the commit.
    fn committed(&self, changes: &[Change]) {
        if !self.local.active() {
            return;
        }
        let events = events_of(changes);
        if !events.is_empty() {
            self.local.publish(events);
        }
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

/// The notices of one mutation's events on `channel`: as few notifications as fit in
/// [`MAX_PAYLOAD`] each, in order, each with its part number (PostgreSQL delivers only one of
/// two equal payloads a transaction sends); an event too large alone is kept (with everything it
/// carries) and the notification after it names it.
fn notices(channel: &str, instance: &str, events: &[Event]) -> Vec<Notice> {
    let instance = Value::from(instance).to_string();
    // `{"instance":…,"part":N,"events":[` + the events, comma-separated + `]}`: each event is
    // serialised once and the sizes are summed.
    let room = MAX_PAYLOAD.saturating_sub(instance.len() + 48);
    let mut out = Vec::new();
    let mut part = 0;
    let mut batch = String::new();
    let mut flush = |batch: &mut String, out: &mut Vec<Notice>| {
        if !batch.is_empty() {
            out.push(Notice::Send {
                channel: channel.to_owned(),
                payload: format!(
                    "{{\"instance\":{instance},\"part\":{part},\"events\":[{batch}]}}"
                ),
            });
            part += 1;
            batch.clear();
        }
    };
    for event in events {
        let encoded = event.to_json().to_string();
        if encoded.len() > room {
            flush(&mut batch, &mut out);
            let id = cuid();
            out.push(Notice::Keep {
                id: id.clone(),
                payload: format!("{{\"instance\":{instance},\"events\":[{encoded}]}}"),
            });
            out.push(Notice::Send {
                channel: channel.to_owned(),
                payload: format!("{{\"instance\":{instance},\"stored\":{}}}", Value::from(id)),
            });
            continue;
        }
        if !batch.is_empty() && batch.len() + 1 + encoded.len() > room {
            flush(&mut batch, &mut out);
        }
        if !batch.is_empty() {
            batch.push(',');
        }
        batch.push_str(&encoded);
    }
    flush(&mut batch, &mut out);
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

    fn bus(instance: &str) -> PgBus {
        let (tx, _) = mpsc::unbounded_channel();
        PgBus {
            local: LocalBus::default(),
            instance: instance.into(),
            channel: "svc_events_public".into(),
            outgoing: tx,
            remote_until: Mutex::new(None),
            heard: tokio::sync::Notify::new(),
        }
    }

    /// A mutation's events are split over notifications of at most 8000 bytes, in order, no
    /// two alike; an event too large alone is kept whole, between the notifications before and
    /// after it, and named by a notification of its own; another instance decodes them all
    /// (the kept one from its kept text), and skips its own.
    #[test]
    fn events_fit_notifications() {
        let mut events: Vec<Event> = (0..300).map(|i| deleted(i, 100)).collect();
        events.insert(150, deleted(999, 9000));
        let sent = notices("svc_events_public", "me", &events);
        assert!(sent.len() > 3, "{} notices", sent.len());
        let other = bus("other");
        let mut got: Vec<Event> = Vec::new();
        let mut kept = std::collections::HashMap::new();
        let mut payloads = std::collections::HashSet::new();
        for notice in &sent {
            match notice {
                Notice::Keep { id, payload } => {
                    kept.insert(id.clone(), payload.clone());
                }
                Notice::Send { channel, payload } => {
                    assert_eq!(channel, "svc_events_public");
                    assert!(payload.len() <= 8000);
                    assert!(payloads.insert(payload.clone()), "a payload sent twice");
                    let payload = match other.stored_elsewhere(payload) {
                        Some(id) => kept.remove(&id).expect("kept before it is named"),
                        None => payload.clone(),
                    };
                    got.extend(other.decode(&SERVICE, &payload).expect("decodes"));
                }
            }
        }
        assert!(kept.is_empty(), "every kept event is named");
        assert_eq!(
            sent.iter()
                .filter(|n| matches!(n, Notice::Keep { .. }))
                .count(),
            1,
            "only the oversized event is kept"
        );
        let ids = |list: &[Event]| list.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
        assert_eq!(ids(&got), ids(&events));
        assert_eq!(got[150].previous, events[150].previous, "kept whole");
        assert_eq!(got[151].previous, events[151].previous);
        let Notice::Send { payload: first, .. } = &sent[0] else {
            panic!("the first notice is a notification");
        };
        let me = bus("me");
        assert!(
            me.stored_elsewhere(&json!({ "instance": "me", "stored": "x" }).to_string())
                .is_none(),
            "its own kept events are not read back"
        );
        assert!(
            me.decode(&SERVICE, first).is_none(),
            "its own events come back ignored"
        );
    }

    /// Two equal runs of events in one mutation still make two different notifications.
    #[test]
    fn equal_parts_differ() {
        // As many events of one size as one notification holds, four times over.
        let distinct: Vec<Event> = (100..600).map(|i| deleted(i, 100)).collect();
        let Notice::Send { payload, .. } = &notices("c", "me", &distinct)[0] else {
            panic!("the first notice is a notification");
        };
        let per = bus("other")
            .decode(&SERVICE, payload)
            .expect("decodes")
            .len();
        let events: Vec<Event> = (0..4 * per).map(|i| deleted(100 + i % per, 100)).collect();
        let sent = notices("c", "me", &events);
        assert_eq!(sent.len(), 4);
        let payloads: std::collections::HashSet<_> = sent
            .iter()
            .map(|n| match n {
                Notice::Send { payload, .. } => payload.clone(),
                Notice::Keep { .. } => panic!("nothing is too large here"),
            })
            .collect();
        assert!(sent.len() >= 2);
        assert_eq!(payloads.len(), sent.len());
    }
}
