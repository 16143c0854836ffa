// Builds a client schema with graphql-js from a service's introspection and validates it, as
// GraphQL clients and code generators do. Prints one line per validation error, then
// `types N` (the number of types of the built schema). With OUT, also writes the schema there
// as SDL (for relay-compiler). Called by the behaviour tests, which install graphql-js and copy
// this script beside it.
//
//   node graphql-js-schema.mjs URL [OUT]
import { writeFileSync } from 'node:fs';
import { buildClientSchema, getIntrospectionQuery, printSchema, validateSchema } from 'graphql';

const [url, out] = process.argv.slice(2);
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
if (out) {
  writeFileSync(out, printSchema(schema));
}
console.log(`types ${Object.keys(schema.getTypeMap()).length}`);
