// Field types that name nothing, and an enum value in lower case: every problem is reported at
// once, each at its `file:line:col`.

svc_macros::service!(relative_to_file = "unknown_type/svc.yml");

fn main() {}
