// bench/functions: the JavaScript before-hook of `JsHooked.create`, the same check as the Rust
// and webhook ones.
module.exports = (event) => {
  if (event.data.title === '') {
    return { error: 'a title is needed' };
  }
  return { data: event.data };
};
