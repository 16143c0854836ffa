//! What the APIs' root types share: the model types they register, the `user` model, the
//! arguments of single-node fields, and `node(id)`.

use async_graphql::indexmap::IndexMap;
use async_graphql::registry::{MetaInputValue, Registry};
use async_graphql::{Context, ID, OutputType, ServerResult, Value};

use super::args::arg;
use super::registry::{input_value, register_value_type};
use super::request;
use super::resolve::{Call, resolve_model, server_error};
use crate::engine::read::node_model;
use crate::model::{ModelMeta, Record, ServiceDef, ServiceMeta, Visitor};

/// The model named `User`, which has the `user` query field and whose create comes last.
pub(crate) fn user_model(meta: &ServiceMeta) -> Option<&'static ModelMeta> {
    meta.models
        .iter()
        .copied()
        .find(|m| m.name == svc_names::USER_TYPE)
}

/// Registers the object type of every model of `S` (the types root fields and relation fields
/// name).
pub(crate) fn register_records<S: ServiceDef>(registry: &mut Registry) {
    struct Register<'a>(&'a mut Registry);
    impl Visitor for Register<'_> {
        fn record<R: Record + OutputType>(&mut self) {
            R::create_type_info(self.0);
        }
        fn relation<const R: usize>(&mut self) {}
    }
    S::visit(&mut Register(registry));
}

/// The arguments of `<Type>(…)`: every unique field of `meta`.
pub(crate) fn unique_arguments(
    registry: &mut Registry,
    meta: &ModelMeta,
) -> IndexMap<String, MetaInputValue> {
    meta.unique_fields()
        .map(|(_, f)| {
            let ty = register_value_type(registry, f);
            (f.name.to_owned(), input_value(f.name.to_owned(), ty))
        })
        .collect()
}

/// `node(id)`: finds the model that has the id among `models`, then reads the typed node.
pub(crate) async fn node(
    ctx: &Context<'_>,
    models: &[&'static ModelMeta],
) -> ServerResult<Option<Value>> {
    let found = async {
        let req = request(ctx)?;
        let id = arg::<ID>(ctx, "id")?;
        let model = node_model(req, &id, models)
            .await
            .map_err(|e| server_error(ctx, e))?;
        Ok((id, model))
    };
    match found.await {
        Ok((id, Some(i))) => resolve_model(ctx, models[i], Call::Node(&id)).await,
        Ok((_, None)) => Ok(Some(Value::Null)),
        Err(e) => Err(ctx.set_error_path(e)),
    }
}
