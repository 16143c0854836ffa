// A Rust handler of a server-side subscription reads the query's result through the types the
// generator made of the query: a field the query does not select fails the build.

svc_macros::service!(relative_to_file = "subscription/svc.yml");

mod functions {
    use svc_runtime::functions::FunctionResult;

    pub async fn new_post(event: super::handlers::NewPostEvent) -> FunctionResult<()> {
        let post = event.data.post;
        let _: String = post.mutation;
        // Selected: a required `String`.
        let _: Option<String> = post.node.as_ref().map(|n| n.title.clone());
        // Not selected (and misspelt).
        let _ = post.node.map(|n| n.titel);
        Ok(None)
    }
}

fn main() {}
