// Builds a client schema with graphql-js from a service's introspection and validates it, as
// GraphQL clients and code generators do. Prints one line per validation error, then
// `types N` (the number of types of the built schema). Called by the behaviour test
// `simple::over_http`, which installs graphql-js and copies this script beside it.
//
//   node graphql-js-schema.mjs URL
import { buildClientSchema, getIntrospectionQuery, validateSchema } from 'graphql';

const url = process.argv[2];
const res = await fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    query: getIntrospectionQuery({ specifiedByUrl: true, directiveIsRepeatable: true }),
  }),
});
const body = await res.json();
if (!body.data) {
  console.log(`error the introspection failed: ${JSON.stringify(body)}`);
  process.exit(1);
}
const schema = buildClientSchema(body.data);
for (const error of validateSchema(schema)) {
  console.log(`error ${error.message}`);
}
console.log(`types ${Object.keys(schema.getTypeMap()).length}`);
