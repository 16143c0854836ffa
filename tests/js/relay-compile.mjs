// Compiles the Relay app under APP (a copy of tests/relay-app) with relay-compiler against the
// Relay API at URL, then runs every query the compiler generated against URL, as the Relay
// runtime would send it. Prints `compiled N` (the artifacts written), one line per query,
// `ok NAME {data}` or `error NAME {response}`. Called by the behaviour test
// `relay::compiler`, which installs relay-compiler and graphql-js and copies this script beside
// them.
//
//   SVC_TOKEN=… node relay-compile.mjs APP URL VARIABLES_JSON
//
// VARIABLES_JSON maps a query's name to its variables (`{}` when not named).
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildClientSchema, getIntrospectionQuery, printSchema } from 'graphql';

const [app, url, variablesJson] = process.argv.slice(2);
const variables = JSON.parse(variablesJson ?? '{}');
const here = dirname(fileURLToPath(import.meta.url));

// Requests carry `Authorization: Bearer $SVC_TOKEN` when it is set.
const headers = { 'content-type': 'application/json' };
if (process.env.SVC_TOKEN) headers.authorization = `Bearer ${process.env.SVC_TOKEN}`;

async function post(query, vars) {
  const res = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query, variables: vars }),
  });
  return res.json();
}

// The schema as relay-compiler reads it: SDL printed from the introspection.
const introspection = await post(
  getIntrospectionQuery({ specifiedByUrl: true, directiveIsRepeatable: true }),
  {},
);
writeFileSync(join(app, 'schema.graphql'), printSchema(buildClientSchema(introspection.data)));

// relay-compiler exits non-zero and prints its errors when a document does not fit the schema.
execFileSync(process.execPath, [join(here, 'node_modules/relay-compiler/cli.js')], {
  cwd: app,
  stdio: ['ignore', 'inherit', 'inherit'],
});

const generated = join(app, 'src/__generated__');
const artifacts = readdirSync(generated).filter((f) => f.endsWith('.graphql.js'));
console.log(`compiled ${artifacts.length}`);
// An operation's artifact holds its name and text in `params` (the artifacts are ES modules
// that import each other without file endings, so they are read as text here).
const params = /"name": "(\w+)",\s*"operationKind": "query",\s*"text": ("(?:[^"\\]|\\.)*")/;
for (const file of artifacts.sort()) {
  const found = readFileSync(join(generated, file), 'utf8').match(params);
  if (!found) continue;
  const [, name, literal] = found;
  const res = await post(JSON.parse(literal), variables[name] ?? {});
  const status = res.data && !res.errors ? 'ok' : 'error';
  console.log(`${status} ${name} ${JSON.stringify(res.data ? res.data : res)}`);
}
