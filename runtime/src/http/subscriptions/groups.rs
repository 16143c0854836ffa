//! Shared subscriptions: the subscriptions of a service whose query, variables, operation name
//! and principal are the same form one group, with one stream of the schema among them. Each
//! event is then evaluated once per group (its filter decided once by the hub, its payload
//! resolved once) and serialised once; each member's message is its own id and type around the
//! same payload text.
//!
//! A member whose socket's send queue is full is disconnected and leaves the group; the others
//! do not wait for it. The group's stream ends when its last member leaves.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use actix_ws::Session;
use async_graphql::Response;
use async_graphql::futures_util::stream::BoxStream;
use async_graphql::futures_util::{FutureExt, StreamExt};
use async_graphql::parser::types::ExecutableDocument;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::{Outgoing, queue};
use crate::auth::Principal;
use crate::http::nulls::Nullability;
use crate::http::render::render;

/// What makes subscriptions share a group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct GroupKey {
    pub query: String,
    /// The variables as JSON text.
    pub variables: String,
    pub operation: Option<String>,
    pub principal: Principal,
}

/// The groups of one service, and what they have done.
pub(crate) struct Groups {
    map: Mutex<HashMap<GroupKey, Arc<Group>>>,
    /// The field types of the service's Simple API, with which payloads are rendered.
    nulls: Arc<Nullability>,
    /// Open subscription sockets.
    pub sockets: AtomicUsize,
    /// Payloads resolved (one per event per group).
    pub evaluations: AtomicU64,
    /// Messages queued to clients (one per event per member).
    pub messages: AtomicU64,
    /// Open sockets by the client's address.
    addresses: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// An open socket's place in the count of its address; dropping it leaves.
pub(crate) struct AddressSlot {
    addresses: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = addresses.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                addresses.remove(&self.ip);
            }
        }
    }
}

impl Groups {
    /// No groups yet, for the Simple API whose field types are `nulls`.
    pub(crate) fn new(nulls: Arc<Nullability>) -> Groups {
        Groups {
            map: Mutex::default(),
            nulls,
            sockets: AtomicUsize::default(),
            evaluations: AtomicU64::default(),
            messages: AtomicU64::default(),
            addresses: Arc::default(),
        }
    }

    /// A place for one more socket from `ip`; `None` when `max` are open (0: no bound).
    pub(crate) fn admit(&self, ip: IpAddr, max: usize) -> Option<AddressSlot> {
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        let open = addresses.entry(ip).or_default();
        if max > 0 && *open >= max {
            return None;
        }
        *open += 1;
        Some(AddressSlot {
            addresses: self.addresses.clone(),
            ip,
        })
    }
}

/// One group: its members, and whether its stream has ended.
struct Group {
    key: GroupKey,
    /// The key's query, parsed: its payloads' entries are put in its order.
    doc: Option<ExecutableDocument>,
    members: Mutex<Members>,
    ended: AtomicBool,
    /// The task that runs the stream; aborted when the last member leaves (which lets go of
    /// the stream's registration with the hub at once).
    task: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct Members {
    list: Vec<Member>,
    next: u64,
}

/// How one subscription receives the group's payloads.
pub(crate) struct Member {
    key: u64,
    out: mpsc::Sender<Outgoing>,
    session: Session,
    /// The message up to its payload: `{"id":<id>,"type":"<data type>","payload":`.
    prefix: String,
    /// The message sent when the stream ends (`complete` of `graphql-transport-ws`), if any.
    complete: Option<String>,
}

impl Member {
    /// A member answered on `out` with messages `{"id": id, "type": data_type, "payload": …}`;
    /// `complete` is sent when the stream ends.
    pub fn new(
        out: mpsc::Sender<Outgoing>,
        session: Session,
        id: &Value,
        data_type: &str,
        complete: Option<String>,
    ) -> Member {
        Member {
            key: 0,
            out,
            session,
            prefix: format!(r#"{{"id":{id},"type":"{data_type}","payload":"#),
            complete,
        }
    }
}

/// A subscription's place in its group; dropping it leaves the group.
pub(crate) struct Membership {
    groups: Arc<Groups>,
    group: Arc<Group>,
    key: u64,
}

impl Membership {
    /// Whether the group's stream still runs.
    pub fn is_live(&self) -> bool {
        !self.group.ended.load(Ordering::Acquire)
    }
}

impl Drop for Membership {
    fn drop(&mut self) {
        self.groups.leave(&self.group, self.key);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

impl Groups {
    /// How many groups there are, and how many members they have.
    pub fn sizes(&self) -> (usize, usize) {
        let map = lock(&self.map);
        let members = map.values().map(|g| lock(&g.members).list.len()).sum();
        (map.len(), members)
    }

    /// Makes `member` a member of the group of `key`, starting the group with the stream
    /// `start()` when there is none; the message of the stream's first error when it cannot
    /// start.
    pub fn join(
        self: &Arc<Self>,
        key: GroupKey,
        member: Member,
        start: impl FnOnce() -> BoxStream<'static, Response>,
    ) -> Result<Membership, String> {
        let mut map = lock(&self.map);
        if let Some(group) = map.get(&key).filter(|g| !g.ended.load(Ordering::Acquire)) {
            let group = group.clone();
            let key = add(&group, member);
            return Ok(Membership {
                groups: self.clone(),
                group,
                key,
            });
        }
        let mut stream = start();
        // The first poll validates the request and registers with the hub; an error comes at
        // once.
        if let Some(first) = stream.next().now_or_never() {
            return Err(match first {
                Some(response) => first_error(&response),
                None => "the subscription ended".to_owned(),
            });
        }
        let group = Arc::new(Group {
            doc: async_graphql::parser::parse_query(&key.query).ok(),
            key: key.clone(),
            members: Mutex::default(),
            ended: AtomicBool::new(false),
            task: Mutex::default(),
        });
        let member_key = add(&group, member);
        map.insert(key, group.clone());
        drop(map);
        let task = actix_web::rt::spawn(run(self.clone(), group.clone(), stream));
        *lock(&group.task) = Some(task);
        Ok(Membership {
            groups: self.clone(),
            group,
            key: member_key,
        })
    }

    /// Removes the member `key` from `group`; a group left without members ends.
    fn leave(&self, group: &Arc<Group>, key: u64) {
        let mut map = lock(&self.map);
        let mut members = lock(&group.members);
        members.list.retain(|m| m.key != key);
        if members.list.is_empty() {
            group.ended.store(true, Ordering::Release);
            if map.get(&group.key).is_some_and(|g| Arc::ptr_eq(g, group)) {
                map.remove(&group.key);
            }
            if let Some(task) = lock(&group.task).take() {
                task.abort();
            }
        }
    }
}

fn add(group: &Group, mut member: Member) -> u64 {
    let mut members = lock(&group.members);
    let key = members.next;
    members.next += 1;
    member.key = key;
    members.list.push(member);
    key
}

/// A group's stream: each response rendered once and queued to every member, until the stream
/// ends or the last member leaves.
async fn run(groups: Arc<Groups>, group: Arc<Group>, mut stream: BoxStream<'static, Response>) {
    loop {
        let next = stream.next().await;
        if group.ended.load(Ordering::Acquire) {
            // The last member left meanwhile.
            return;
        }
        let Some(response) = next else {
            break;
        };
        groups.evaluations.fetch_add(1, Ordering::Relaxed);
        let types = (
            &*groups.nulls,
            group.doc.as_ref(),
            group.key.operation.as_deref(),
        );
        let payload = render(response, "", Some(types)).to_string();
        let mut members = lock(&group.members);
        let before = members.list.len();
        members.list.retain(|m| {
            let message = format!("{}{payload}}}", m.prefix);
            queue(&m.out, &m.session, Outgoing::Text(message))
        });
        groups
            .messages
            .fetch_add(members.list.len() as u64, Ordering::Relaxed);
        let emptied = before > 0 && members.list.is_empty();
        drop(members);
        if emptied {
            // Every member was too slow or gone.
            end(&groups, &group);
            return;
        }
    }
    // The stream ended (an error that ends it, or the hub let it go).
    end(&groups, &group);
    let members = lock(&group.members);
    for member in &members.list {
        if let Some(complete) = &member.complete {
            queue(
                &member.out,
                &member.session,
                Outgoing::Text(complete.clone()),
            );
        }
    }
}

/// Marks `group` ended and takes it out of the map, so the next subscription of its key starts
/// a new one.
fn end(groups: &Groups, group: &Arc<Group>) {
    let mut map = lock(&groups.map);
    group.ended.store(true, Ordering::Release);
    if map.get(&group.key).is_some_and(|g| Arc::ptr_eq(g, group)) {
        map.remove(&group.key);
    }
}

/// The message of a response's first error.
pub(super) fn first_error(response: &Response) -> String {
    response.errors.first().map_or_else(
        || "the subscription ended".to_owned(),
        |e| e.message.clone(),
    )
}
