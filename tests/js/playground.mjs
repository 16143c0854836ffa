// Uses a service's playground page as a person would, in headless Chromium whose network ends at
// the loopback interface: opens the page, waits for GraphiQL, types QUERY into the query editor
// and runs it; then types HEADERS (JSON, say `{"Authorization": "Bearer …"}`) into GraphiQL's
// Headers editor and runs the query again. Every request the page makes is recorded; one to a
// host other than 127.0.0.1 fails the script, as does an error of the page's scripts or one on
// the console (a file that did not load, a Content-Security-Policy violation). Prints, one JSON value per line:
//
//   requests [every URL the page asked for]
//   first {"sent": {request headers}, "shown": the response pane's text as JSON}
//   second {"sent": …, "shown": …}    (with HEADERS entered)
//
// Called by the behaviour test `simple::playground`, which installs puppeteer-core and copies
// this script beside it; Chromium's path is in $SVC_CHROMIUM.
//
//   SVC_CHROMIUM=/usr/bin/chromium node playground.mjs URL QUERY HEADERS
import puppeteer from 'puppeteer-core';

const [url, query, headers] = process.argv.slice(2);
const endpoint = new URL(url);

const browser = await puppeteer.launch({
  executablePath: process.env.SVC_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-gpu',
    // No name resolves (so no host but 127.0.0.1 can be reached by name), and every connection
    // not to the loopback interface goes to a proxy that is not there.
    '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1',
    '--proxy-server=http://127.0.0.1:9',
  ],
});

let failed = false;
const fail = (why) => {
  console.log(`error ${why}`);
  failed = true;
};

try {
  const page = await browser.newPage();
  const requests = [];
  page.on('request', (request) => requests.push(request.url()));
  page.on('pageerror', (error) => fail(`page error: ${error.message}`));
  page.on('console', (message) => {
    const text = message.text();
    if (message.type() === 'error' || text.includes('Content Security Policy')) {
      fail(`console: ${text}`);
    }
  });

  await page.goto(url, { waitUntil: 'load', timeout: 30_000 });
  const queryEditor = '.graphiql-query-editor .CodeMirror';
  await page.waitForSelector(queryEditor, { visible: true, timeout: 30_000 });

  // The value of the CodeMirror editor under `selector` (read only; the editors are typed into).
  const valueOf = (selector) =>
    page.$eval(selector, (el) => el.CodeMirror.getValue());

  // Replaces the text of the editor under `selector` by typing `text` into it. CodeMirror closes
  // brackets and quotes as they are typed and steps over the closing one when it is typed in
  // turn, so typing a whole text leaves exactly that text.
  const type = async (selector, text) => {
    await page.click(selector);
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyA');
    await page.keyboard.up('Control');
    await page.keyboard.press('Backspace');
    await page.keyboard.type(text);
    // Close any completion list the typing opened.
    await page.keyboard.press('Escape');
    const value = await valueOf(selector);
    if (value !== text) {
      throw new Error(`typed ${JSON.stringify(text)}, the editor holds ${JSON.stringify(value)}`);
    }
  };

  // Whether `request` is the query's (not, say, GraphiQL's introspection).
  const isQuery = (request) => {
    if (request.method() !== 'POST' || new URL(request.url()).pathname !== endpoint.pathname) {
      return false;
    }
    try {
      return JSON.parse(request.postData()).query === query;
    } catch {
      return false;
    }
  };

  // Runs the query with the execute button; the headers of its request and the response pane's
  // text once the answer is shown.
  const run = async () => {
    const sent = page.waitForRequest(isQuery, { timeout: 30_000 });
    const answered = page.waitForResponse((r) => isQuery(r.request()), { timeout: 30_000 });
    await page.evaluate(() => {
      document.querySelector('.graphiql-response .CodeMirror').CodeMirror.setValue('');
    });
    await page.click('.graphiql-execute-button');
    const request = await sent;
    await answered;
    await page.waitForFunction(
      () => document.querySelector('.graphiql-response .CodeMirror').CodeMirror.getValue() !== '',
      { timeout: 30_000 },
    );
    const shown = await valueOf('.graphiql-response .CodeMirror');
    return { sent: request.headers(), shown: JSON.parse(shown) };
  };

  await type(queryEditor, query);
  console.log(`first ${JSON.stringify(await run())}`);

  // The Headers tab of the editor tools below the query editor, then its editor.
  const tab = await page.waitForSelector('.graphiql-editor-tools ::-p-text(Headers)');
  await tab.click();
  const headersEditor = '.graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror';
  await page.waitForSelector(headersEditor, { visible: true });
  await type(headersEditor, headers);
  console.log(`second ${JSON.stringify(await run())}`);

  // `data:` URLs (GraphiQL's fonts) shortened.
  const shown = requests.map((r) => (r.startsWith('data:') ? `${r.slice(0, 24)}…` : r));
  console.log(`requests ${JSON.stringify(shown)}`);
  for (const request of requests) {
    const { protocol, hostname } = new URL(request);
    const local = ['data:', 'blob:', 'about:'].includes(protocol)
      || hostname === '127.0.0.1' || hostname === '[::1]';
    if (!local) {
      fail(`a request left the loopback interface: ${request}`);
    }
  }
} catch (error) {
  fail(error.stack || String(error));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
