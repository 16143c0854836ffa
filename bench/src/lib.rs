//! What the benchmark binaries share: GraphQL requests, reading a service's `admin` root
//! token through the System API, the way `svc root-token admin` does, and a lean HTTP/1.1
//! client for measured loops ([`http1`]).

pub mod http1;

use serde_json::{Value, json};

/// A GraphQL request to `url`, with `Authorization: Bearer <token>` when there is a token.
pub fn request(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    query: &str,
    variables: &Value,
) -> reqwest::RequestBuilder {
    let request = client
        .post(url)
        .json(&json!({ "query": query, "variables": variables }));
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
}

/// Posts a GraphQL request and returns the response body.
pub async fn post(
    client: &reqwest::Client,
    url: &str,
    token: Option<&str>,
    query: &str,
    variables: &Value,
) -> Result<Value, String> {
    let res = request(client, url, token, query, variables)
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    res.json().await.map_err(|e| format!("bad response: {e}"))
}

/// The `admin` root token of the service `service` at `base`, read through the System API with
/// a platform token obtained from the master token `master`.
pub async fn admin_root_token(
    client: &reqwest::Client,
    base: &str,
    service: &str,
    master: &str,
) -> Result<String, String> {
    let system = format!("{base}/system");
    let login =
        "mutation ($t: String!) { authenticateCustomer(input: { auth0IdToken: $t }) { token } }";
    let res = post(client, &system, None, login, &json!({ "t": master }))
        .await
        .map_err(|e| format!("authenticateCustomer at {system}: {e}"))?;
    let platform = res["data"]["authenticateCustomer"]["token"]
        .as_str()
        .ok_or_else(|| format!("authenticateCustomer gave no token: {res}"))?
        .to_owned();
    let query = format!(
        r#"{{ viewer {{ project(id: "{service}") {{ permanentAuthTokens {{ edges {{ node {{ name token }} }} }} }} }} }}"#
    );
    let res = post(client, &system, Some(&platform), &query, &json!({}))
        .await
        .map_err(|e| format!("reading the root tokens at {system}: {e}"))?;
    res["data"]["viewer"]["project"]["permanentAuthTokens"]["edges"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["node"]["name"] == "admin")
        .and_then(|e| e["node"]["token"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| format!("no `admin` root token: {res}"))
}
