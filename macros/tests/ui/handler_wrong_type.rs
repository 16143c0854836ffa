// A Rust handler whose type does not fit its function: the error names the function and where
// `svc.yml` declares it.

svc_macros::service!(relative_to_file = "handlers/svc.yml");

mod functions {
    use svc_runtime::functions::FunctionResult;

    // Right.
    pub async fn greet(event: super::handlers::GreetEvent) -> FunctionResult<super::handlers::GreetPayload> {
        let _ = event;
        Ok(None)
    }

    // Wrong: a hook on `Note.create` answers the note's data, not a payload.
    pub async fn check_note(
        event: super::handlers::CheckNoteEvent,
    ) -> FunctionResult<super::handlers::GreetPayload> {
        let _ = event;
        Ok(None)
    }
}

fn main() {}
