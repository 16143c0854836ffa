//! Generates the service's Rust code from `svc.yml` into `OUT_DIR`.

fn main() {
    svc_generator::build("svc.yml");
}
