// The documents of a small Relay app on the example service: a paginated list of posts on the
// viewer, a refetchable fragment on a post with a paginated relation field, the query that
// spreads them, and a create that appends its edge to the list. The behaviour test
// `relay::compiler` compiles them with relay-compiler against the Relay API's schema and runs
// the queries it generates; the app itself is never run.
import { graphql } from 'react-relay';

export const appQuery = graphql`
  query PostsAppQuery {
    viewer {
      id
      ...PostsList_viewer
    }
  }
`;

export const listFragment = graphql`
  fragment PostsList_viewer on Viewer
  @refetchable(queryName: "PostsListPaginationQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 10 }
    cursor: { type: "String" }
  ) {
    allPosts(first: $count, after: $cursor, orderBy: id_DESC)
      @connection(key: "PostsList_allPosts") {
      count
      edges {
        node {
          id
          ...PostsItem_post
        }
      }
    }
  }
`;

export const itemFragment = graphql`
  fragment PostsItem_post on Post
  @refetchable(queryName: "PostsItemRefetchQuery")
  @argumentDefinitions(
    count: { type: "Int", defaultValue: 5 }
    cursor: { type: "String" }
  ) {
    id
    title
    status
    author {
      id
      name
    }
    comments(first: $count, after: $cursor) @connection(key: "PostsItem_comments") {
      edges {
        node {
          id
          text
        }
      }
    }
  }
`;

export const createMutation = graphql`
  mutation PostsCreateMutation($input: CreatePostInput!, $connections: [ID!]!) {
    createPost(input: $input) {
      clientMutationId
      edge @appendEdge(connections: $connections) {
        cursor
        node {
          id
          ...PostsItem_post
        }
      }
    }
  }
`;
