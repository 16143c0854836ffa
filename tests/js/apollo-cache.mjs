// Runs a query on a service's Relay API through Apollo Client with its normalised cache (which
// adds `__typename` to every selection, connection, edge and page-info types included), then
// prints `data {…}` (the query's result) and `cache {…}` (the normalised cache). Called by the
// behaviour test `relay::apollo`, which installs @apollo/client and copies this script beside
// it. Requests carry `Authorization: Bearer $SVC_TOKEN` when it is set.
//
//   SVC_TOKEN=… node apollo-cache.mjs URL
import { ApolloClient, HttpLink, InMemoryCache, gql } from '@apollo/client';

const headers = process.env.SVC_TOKEN ? { authorization: `Bearer ${process.env.SVC_TOKEN}` } : {};
const client = new ApolloClient({
  link: new HttpLink({ uri: process.argv[2], headers }),
  cache: new InMemoryCache(),
});
const { data } = await client.query({
  query: gql`
    {
      viewer {
        id
        allPosts(first: 2, orderBy: id_ASC) {
          count
          pageInfo { hasNextPage endCursor }
          edges { cursor node { id title author { id name } } }
        }
      }
    }
  `,
});
console.log(`data ${JSON.stringify(data)}`);
console.log(`cache ${JSON.stringify(client.cache.extract())}`);
