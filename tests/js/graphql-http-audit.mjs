// Runs the server audits of npm's `graphql-http` (the GraphQL-over-HTTP specification's audit
// suite) against one endpoint and prints one line per audit that is not `ok`, then a count line
// per status. Called by the behaviour test `simple::over_http`, which installs the package and
// copies this script beside it (ES modules resolve packages from the script's own folder).
//
//   node graphql-http-audit.mjs URL
import { serverAudits } from 'graphql-http';

const url = process.argv[2];
const counts = { ok: 0, notice: 0, warn: 0, error: 0 };
for (const audit of serverAudits({ url })) {
  const result = await audit.fn();
  counts[result.status] = (counts[result.status] ?? 0) + 1;
  if (result.status !== 'ok') {
    console.log(`${result.status} ${audit.id} ${audit.name}: ${result.reason}`);
  }
}
console.log(`counts ${JSON.stringify(counts)}`);
