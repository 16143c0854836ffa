// A resolver as an ES module: greets, and counts the notes through the Simple API with the
// event's temporary root token, as functions written for the original do.
export default async function (event) {
  const svc = event.context.graphcool;
  const response = await fetch(svc.endpoints.simple, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${svc.rootToken}` },
    body: JSON.stringify({ query: '{ _allNotesMeta { count } }' }),
  });
  const answer = await response.json();
  return {
    data: {
      message: `Hello ${event.data.name || 'World'}`,
      notes: answer.data._allNotesMeta.count,
    },
  };
}
