//! The Subscription root of the Simple API (reference §4.3): `<Type>(filter:
//! <Type>SubscriptionFilter): <Type>SubscriptionPayload` per model. A subscription field is a
//! stream: it listens to the service's [`EventBus`](crate::events::EventBus) and, for every
//! event of its model that its filter lets through (`filter`), answers its selection on the
//! event's payload (`payload`), resolved like a query's, with the subscriber's read permissions.
//!
//! Each event is resolved with a request of its own (`engine::Request`, holding the
//! subscriber's principal): batches and permission checks never carry over from one event to
//! the next. The node is read as it is after the commit; a `DELETED` payload is built from the
//! previous values alone. A `CREATED` or `UPDATED` event whose node is gone by the time the
//! payload reads it (deleted since) answers nothing, on sockets and for server-side
//! subscription functions alike.

mod filter;
mod hub;
mod payload;

use std::borrow::Cow;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;

use async_graphql::futures_util::{Stream, StreamExt};
use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaType, Registry};
use async_graphql::{
    Context, Data, OutputType, QueryPathNode, QueryPathSegment, Response, ServerError,
    SubscriptionType, Value,
};

pub use hub::{Counts, Hub};
pub use payload::ModelMutationType;

use self::filter::{Decision, SubscriptionFilter, check_page};
use self::hub::{Feed, Listening, Node};
use self::payload::Payload;
use crate::api::args::raw_arg;
use crate::api::registry::{input_value, meta_field, object};
use crate::api::roots::register_records;
use crate::auth::Principal;
use crate::engine::{ChangeKind, Request, State, read};
use crate::events::Event;
use crate::model::{ModelMeta, ServiceDef, Val};
use crate::storage::Counter;

/// The Subscription root type of the Simple API.
pub struct Subscription<S> {
    _service: PhantomData<fn() -> S>,
}

impl<S: ServiceDef> Default for Subscription<S> {
    fn default() -> Self {
        Subscription {
            _service: PhantomData,
        }
    }
}

impl<S: ServiceDef> SubscriptionType for Subscription<S> {
    fn type_name() -> Cow<'static, str> {
        Cow::Borrowed("Subscription")
    }

    fn create_type_info(registry: &mut Registry) -> String {
        registry.create_subscription_type::<Self, _>(|registry| {
            register_records::<S>(registry);
            let mut fields = IndexMap::new();
            for meta in S::META.models {
                let filter = filter::register(registry, meta);
                let payload = payload::register(registry, meta);
                let args = IndexMap::from([(
                    "filter".to_owned(),
                    input_value("filter".to_owned(), filter),
                )]);
                let field = meta_field(meta.name, payload, args, None);
                fields.insert(meta.name.to_owned(), field);
            }
            let mut root = object::<Self>("Subscription".to_owned(), fields);
            if let MetaType::Object {
                is_subscription, ..
            } = &mut root
            {
                *is_subscription = true;
            }
            root
        })
    }

    fn is_empty() -> bool {
        S::META.models.is_empty()
    }

    fn create_field_stream<'a>(
        &'a self,
        ctx: &'a Context<'_>,
    ) -> Option<Pin<Box<dyn Stream<Item = Response> + Send + 'a>>> {
        let name = ctx.item.node.name.node.as_str();
        let meta = *S::META.models.iter().find(|m| m.name == name)?;
        if let Some(one) = ctx.data_opt::<OneEvent>() {
            return Some(Box::pin(
                async_graphql::futures_util::stream::once(answer_one(ctx, meta, one.0.clone()))
                    .filter_map(std::future::ready),
            ));
        }
        Some(Box::pin(events(ctx, meta)))
    }
}

/// Request data that makes a subscription answer one given event rather than listen (a
/// server-side subscription function's query, reference §7.2): the event's response when the
/// field is the event's model and its filter lets the event through, no response otherwise.
/// With no event (`OneEvent(None)`), the query is only checked: it answers nothing, or the
/// errors of its arguments.
///
/// Whatever principal the request holds, functions see every field (reference §4.5); the
/// request executing the query is given [`Principal::Admin`].
#[derive(Debug, Clone)]
pub struct OneEvent(pub Option<Event>);

/// The response of one subscription field to `event` ([`OneEvent`]).
async fn answer_one(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    event: Option<Event>,
) -> Option<Response> {
    let filter = match raw_arg(ctx, "filter") {
        Ok(Some((pos, value))) => match SubscriptionFilter::parse(meta, &value) {
            Ok(filter) => filter,
            Err(e) => return Some(Response::from_errors(vec![ServerError::new(e, Some(pos))])),
        },
        Ok(None) => SubscriptionFilter::default(),
        Err(e) => return Some(Response::from_errors(vec![e])),
    };
    let event = event.filter(|e| std::ptr::eq(e.model, meta))?;
    let state = ctx.data_opt::<Arc<State>>()?;
    let passes = match filter.decide(meta, &event) {
        Decision::Pass => true,
        Decision::Drop => false,
        Decision::Check(cond) => {
            let checked = match check_page(meta, &event.id, cond) {
                Ok(page) => {
                    let req =
                        Request::new(state.clone(), Arc::new(Counter::new()), Principal::Admin);
                    read::each_exists(&req, meta, &[page]).await
                }
                Err(e) => Err(e),
            };
            match checked {
                Ok(found) => found.first().copied().unwrap_or(false),
                Err(e) => {
                    return Some(Response::from_errors(vec![ServerError::new(
                        e.message(),
                        None,
                    )]));
                }
            }
        }
    };
    if !passes {
        return None;
    }
    deliver(ctx, meta, event, None).await
}

/// The stream of a subscription field on `meta`'s nodes: one response per event its filter
/// lets through (the [`Hub`] decides the filters). A field that cannot listen (no hub, a filter
/// that does not parse) answers one error and ends; so does one the hub ends.
fn events<'a>(ctx: &'a Context<'_>, meta: &'static ModelMeta) -> impl Stream<Item = Response> + 'a {
    let setup = (|| {
        let hub = ctx
            .data_opt::<Arc<Hub>>()
            .ok_or_else(|| ServerError::new("subscriptions are not served here", None))?;
        let filter = match raw_arg(ctx, "filter")? {
            Some((pos, value)) => SubscriptionFilter::parse(meta, &value)
                .map_err(|e| ServerError::new(e, Some(pos)))?,
            None => SubscriptionFilter::default(),
        };
        Ok::<_, ServerError>(hub.listen(meta, filter))
    })();
    let state = match setup {
        Ok(listening) => Stage::Open(listening),
        Err(e) => Stage::Failed(e),
    };
    async_graphql::futures_util::stream::unfold(state, move |state| async move {
        match state {
            Stage::Failed(e) => Some((Response::from_errors(vec![e]), Stage::Done)),
            Stage::Done => None,
            Stage::Open(mut listening) => loop {
                match listening.feed.recv().await {
                    Some(Feed::Event(batch, index, node)) => {
                        let event = batch[index].clone();
                        if let Some(response) = deliver(ctx, meta, event, Some(node)).await {
                            break Some((response, Stage::Open(listening)));
                        }
                    }
                    Some(Feed::End(message)) => {
                        break Some((
                            Response::from_errors(vec![ServerError::new(message, None)]),
                            Stage::Done,
                        ));
                    }
                    // The hub let go of this stream: it fell too far behind the events.
                    None => {
                        break Some((
                            Response::from_errors(vec![ServerError::new(FELL_BEHIND, None)]),
                            Stage::Done,
                        ));
                    }
                }
            },
        }
    })
}

/// The error that ends a subscription whose events came faster than they could be answered.
const FELL_BEHIND: &str =
    "The subscription was ended: its events came faster than they could be answered";

/// Where a subscription field's stream stands.
enum Stage {
    Open(Listening),
    Failed(ServerError),
    Done,
}

/// The response to `event` (which passed the subscription's filter), whose node the hub read
/// (`Some`) or is read here; `None` when the node of a `CREATED` or `UPDATED` event is gone
/// (deleted since the commit, or since the filter was checked): as in the original, which
/// re-reads the node for every such event whatever the selection, nothing is sent then.
async fn deliver(
    ctx: &Context<'_>,
    meta: &'static ModelMeta,
    event: Event,
    node: Option<Node>,
) -> Option<Response> {
    let Some(state) = ctx.data_opt::<Arc<State>>() else {
        return Some(Response::from_errors(vec![ServerError::new(
            "no state", None,
        )]));
    };
    let principal = match ctx.data_opt::<OneEvent>() {
        Some(_) => Principal::Admin,
        None => ctx.data_opt::<Principal>().cloned().unwrap_or_default(),
    };
    let req = Request::new(state.clone(), Arc::new(Counter::new()), principal);
    // The node, raw: a node the subscriber may not read is answered with null fields and
    // errors, a node that is gone with nothing.
    let row = match node {
        Some(Ok(row)) => row,
        Some(Err(message)) => {
            return Some(Response::from_errors(vec![ServerError::new(message, None)]));
        }
        None if event.kind == ChangeKind::Deleted => None,
        None => {
            let id = Val::String(event.id.clone());
            match read::row_by(&req, meta, meta.id, &id).await {
                Ok(Some(row)) => Some(Arc::new(row)),
                Ok(None) => return None,
                Err(e) => {
                    return Some(Response::from_errors(vec![ServerError::new(
                        e.message(),
                        None,
                    )]));
                }
            }
        }
    };
    let field_name = ctx.item.node.response_key().node.clone();
    let mut data = Data::default();
    data.insert(req);
    let selection = ctx.query_env.create_context(
        ctx.schema_env,
        Some(QueryPathNode {
            parent: None,
            segment: QueryPathSegment::Name(&field_name),
        }),
        &ctx.item.node.selection_set,
        Some(&data),
    );
    let payload = Payload::new(meta, event, row);
    let resolved = OutputType::resolve(&payload, &selection, ctx.item).await;
    // Taken whether or not the response is sent: they belong to this event alone.
    let errors = std::mem::take(
        &mut *ctx
            .query_env
            .errors
            .lock()
            .unwrap_or_else(|e| e.into_inner()),
    );
    let mut response = match resolved {
        Ok(value) => Response::new(Value::Object(IndexMap::from([(field_name.clone(), value)]))),
        Err(e) => Response::from_errors(vec![e]),
    };
    response.errors.extend(errors);
    Some(response)
}
