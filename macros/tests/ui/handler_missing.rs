// A Rust handler that does not exist: the build fails at the path `svc.yml` names.

svc_macros::service!(relative_to_file = "handlers/svc.yml");

mod functions {
    use svc_runtime::functions::FunctionResult;

    pub async fn greet(event: super::handlers::GreetEvent) -> FunctionResult<super::handlers::GreetPayload> {
        let _ = event;
        Ok(None)
    }
}

fn main() {}
