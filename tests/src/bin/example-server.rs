//! The `example-model` service's command line (`serve`, `platform-token`), built inside this
//! package so that the behaviour tests can run it as a child process
//! (`CARGO_BIN_EXE_example-server`).

fn main() -> std::process::ExitCode {
    svc_runtime::run::<example_model::Service>()
}
