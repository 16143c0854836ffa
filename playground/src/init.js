// Renders GraphiQL into the page's `#graphiql` element, sending requests to the API named by its
// `data-endpoint` attribute (the page's own path). What the user writes in GraphiQL's Headers
// editor (say `{"Authorization": "Bearer <token>"}`) is sent with every request, and kept in the
// browser's local storage under a name of its own per endpoint, with the tabs and queries.
(function () {
  'use strict';
  var root = document.getElementById('graphiql');
  var endpoint = root.getAttribute('data-endpoint');
  var fetcher = GraphiQL.createFetcher({ url: endpoint });
  var storage = GraphiQL.createLocalStorage({ namespace: 'svc:' + endpoint });
  ReactDOM.createRoot(root).render(
    React.createElement(GraphiQL, {
      fetcher: fetcher,
      storage: storage,
      shouldPersistHeaders: true,
    })
  );
})();
