//! Which API's shape the model types take in a schema. The model types are the generated record
//! types, shared by the Simple and the Relay API; only their relation fields differ (to-many
//! fields are lists with a `_<field>Meta` count in the Simple API, connections in the Relay
//! API). The generated code registers and resolves relation fields through the runtime's facade,
//! which asks [`Shape::building`] while a schema's types are registered, and [`Shape::of`] the
//! schema's data while a request is resolved.

use std::cell::Cell;

use async_graphql::Context;

/// The shape of the model types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// The Simple API's: to-many relation fields are lists, each with a `_<field>Meta` count.
    #[default]
    Simple,
    /// The Relay API's: to-many relation fields are connections.
    Relay,
}

thread_local! {
    /// The shape of the schema whose types this thread registers now.
    static BUILDING: Cell<Shape> = const { Cell::new(Shape::Simple) };
}

/// Puts the shape that was being built back when dropped (also when building panics).
struct Restore(Shape);

impl Drop for Restore {
    fn drop(&mut self) {
        BUILDING.with(|b| b.set(self.0));
    }
}

impl Shape {
    /// Runs `build` (which registers a schema's types) with the model types in this shape.
    pub fn build<T>(self, build: impl FnOnce() -> T) -> T {
        let _restore = Restore(BUILDING.with(|b| b.replace(self)));
        build()
    }

    /// The shape of the schema whose types are being registered on this thread.
    pub fn building() -> Shape {
        BUILDING.with(Cell::get)
    }

    /// The shape of the schema resolving `ctx` (in the schema's data; the Simple API's by
    /// default).
    pub fn of(ctx: &Context<'_>) -> Shape {
        ctx.data_opt::<Shape>().copied().unwrap_or_default()
    }
}
