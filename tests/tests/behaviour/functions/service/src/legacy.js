// A before-hook written for the original's managed runtime (CommonJS): upper-cases a tag's new
// name, and misbehaves on request.
module.exports = function (event) {
  const name = event.data.name || '';
  console.log('legacy saw', name, 'and says', process.env.GREETING);
  switch (name) {
    case 'refuse':
      return { error: 'Tags may not be called that' };
    case 'throw':
      throw new Error('legacy broke');
    case 'hang':
      return new Promise(() => {});
    case 'exit':
      process.exit(3);
      break;
    case 'grow': {
      const hoard = [];
      for (;;) hoard.push(new Array(100000).fill(hoard.length));
    }
    case 'nothing':
      return undefined;
    default:
      return { data: { ...event.data, name: `${name.toUpperCase()} (${process.env.GREETING})` } };
  }
};
