//! The example service's server binary (`serve`).

fn main() -> std::process::ExitCode {
    svc_runtime::run::<example_model::Service>()
}
