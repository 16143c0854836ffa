// A relation name used on three fields: the model's error comes out at `types.graphql:4:32`.

svc_macros::service!(relative_to_file = "relation_error/svc.yml");

fn main() {}
