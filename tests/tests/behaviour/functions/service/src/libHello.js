// A resolver written against the original's client library, `graphcool-lib`: it counts the
// notes through the Simple API and issues a node token through the System API. The library is
// installed by the test (`functions/javascript.rs`) into its npm cache, which this loads it from.
const os = require('os');
const path = require('path');

const { fromEvent } = require(
  path.join(os.homedir(), '.cache/svc-npm/graphcool-lib/node_modules/graphcool-lib'),
);

module.exports = async (event) => {
  const graphcool = fromEvent(event);
  const api = graphcool.api('simple/v1');
  const result = await api.request('{ _allNotesMeta { count } }');
  const token = await graphcool.generateNodeToken(event.data.noteId, 'Note');
  return { data: { notes: result._allNotesMeta.count, token } };
};
