//! [`ServiceDef`], the trait the generated code implements for a service: its data tables, and
//! the Rust types of its records, handed to whichever layer needs them typed.

use async_graphql::OutputType;

use super::record::Record;
use super::tables::ServiceMeta;

/// What the generator emits for a service: its data tables and its record types.
pub trait ServiceDef: 'static {
    /// The `Node` interface over every model type (async-graphql derives interfaces, so the
    /// generator emits it; the root types are built from [`ServiceDef::META`]).
    type Node: OutputType;
    /// The data model.
    const META: &'static ServiceMeta;
    /// The directory the service was built from (holds `svc.yml` and `.svc/`).
    const DIR: &'static str;

    /// Hands `visitor` the record type of every model, in the order of `META.models`, then
    /// every relation, by its index in `META.relations`. The tables are plain data; a layer
    /// that needs a model's typed entry points (the GraphQL layer resolving nodes of a model,
    /// or the payload types of a relation's mutations) builds its own table of them with a
    /// [`Visitor`], once, when its schema is built.
    fn visit<V: Visitor>(visitor: &mut V);
}

/// Receives the typed parts of a service from [`ServiceDef::visit`].
pub trait Visitor {
    /// The record type of the next model.
    fn record<R: Record + OutputType>(&mut self);
    /// The next relation, by its index in `ServiceMeta::relations`.
    fn relation<const R: usize>(&mut self);
}
