//! The Relay API (reference §3): `viewer` and `node(id)`, connections with their page facts and
//! count, relation connections, read permissions on Relay paths, and the statements a nested
//! connection read costs, its compiled plans, the model and relation mutations with
//! `clientMutationId` and their payloads, a Relay app's documents compiled by relay-compiler, and
//! Apollo Client's normalised cache.

mod apollo;
mod compiler;
mod direct;
mod mutations;
mod queries;
