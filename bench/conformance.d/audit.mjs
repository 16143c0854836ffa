// Runs every server audit of npm's `graphql-http` (the GraphQL-over-HTTP specification's audit
// suite) against one endpoint and prints one JSON object per audit:
// {"id", "name", "status" (ok, notice, warn or error), "reason"}, and for an audit that is not
// `ok` the response it judged ("httpStatus", "body": its first 1000 characters). Called by bench/conformance,
// which installs the package once and copies this script beside it (ES modules resolve
// packages from the script's own folder). Requests carry `Authorization: Bearer $SVC_TOKEN`
// when it is set.
//
//   node audit.mjs URL
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
const token = process.env.SVC_TOKEN;
const fetchFn = token
  ? (input, init = {}) => {
      const headers = new Headers(init.headers);
      headers.set('authorization', `Bearer ${token}`);
      return fetch(input, { ...init, headers });
    }
  : fetch;
for (const audit of serverAudits({ url, fetchFn })) {
  let result;
  try {
    result = await audit.fn();
  } catch (e) {
    result = { status: 'error', reason: `the audit threw: ${e?.stack ?? e}` };
  }
  const line = { id: audit.id, name: audit.name, status: result.status, reason: result.reason ?? '' };
  if (result.status !== 'ok' && result.response) {
    line.httpStatus = result.response.status;
    try {
      line.body = (await result.response.clone().text()).slice(0, 1000);
    } catch {
      line.body = '(the body was read by the audit)';
    }
  }
  console.log(JSON.stringify(line));
}
