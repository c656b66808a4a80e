// The TypeScript MCP client 2.x (the client matrix's: npm alias client-2 in tests/clients/package.json, installed
// into .clients/node by scripts/client-matrix) driving the gateway over Streamable HTTP in the 2026 era, as an
// application would.
// Usage: node ts2_client.mjs <clients dir> <gateway /mcp url> <scenario> <clientInfo name> <bearer token>
// Prints one JSON line per tool call (or listing): what the gateway answered, for the Python test to judge.
import http from "node:http";
import { createRequire } from "node:module";
import { Readable } from "node:stream";

const [clientsDir, url, scenario, name, token] = process.argv.slice(2);
const require = createRequire(`${clientsDir}/node/package.json`);
const { Client, StreamableHTTPClientTransport } = require("client-2");

// A fetch on a new TCP connection for every request (no keep-alive pool): what a client behind a proxy that
// does not keep connections, or one that is idle past the server's keep-alive, does on every call.
function freshFetch(input, init = {}) {
  return new Promise((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const req = http.request(String(input), { method: init.method ?? "GET", headers, agent: false }, (res) => {
      const out = new Headers();
      for (const [k, v] of Object.entries(res.headers)) out.set(k, Array.isArray(v) ? v.join(", ") : String(v));
      const body = res.statusCode === 202 || res.statusCode === 204 ? null : Readable.toWeb(res);
      resolve(new Response(body, { status: res.statusCode, headers: out }));
    });
    init.signal?.addEventListener("abort", () => req.destroy(new Error("aborted")));
    req.on("error", reject);
    if (init.body) req.write(init.body);
    req.end();
  });
}

async function connect(fresh) {
  const client = new Client({ name, version: "1.0.0" }, { versionNegotiation: { mode: "auto" } });
  const options = { requestInit: { headers: { Authorization: `Bearer ${token}` } } };
  if (fresh) options.fetch = freshFetch;
  await client.connect(new StreamableHTTPClientTransport(new URL(url), options));
  return client;
}

function report(label, result) {
  const texts = (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
  const driver = texts.some((t) => t.startsWith("[gateway] Driver "));
  console.log(JSON.stringify({ label, driver, text: texts.filter((t) => !t.startsWith("[gateway] ")).join("\n") }));
}

const echo = (client, text) => client.callTool({ name: "kitchen.echo", arguments: { text } });

async function main() {
  if (scenario === "sequential") {
    const client = await connect(true);
    for (const n of [1, 2, 3, 4]) report(`echo${n}`, await echo(client, `s${n}`));
  } else if (scenario === "parallel") {
    const client = await connect(false);
    const first = await Promise.all([echo(client, "p1"), echo(client, "p2"), echo(client, "p3")]);
    first.forEach((r, i) => report(`echo${i + 1}`, r));
    report("echo4", await echo(client, "p4"));
  } else if (scenario === "cancel") {
    const client = await connect(false);
    report("echo1", await echo(client, "c1"));
    const abort = new AbortController();
    const slow = client.callTool(
      { name: "kitchen.slow", arguments: { steps: 100, delay_s: 0.1 } },
      { signal: abort.signal, onprogress: () => abort.abort("enough") },
    );
    await slow.then(
      () => console.log(JSON.stringify({ label: "slow", cancelled: false })),
      () => console.log(JSON.stringify({ label: "slow", cancelled: true })),
    );
    for (const n of [2, 3]) report(`echo${n}`, await echo(client, `c${n}`));
  } else if (scenario === "promote") {
    const client = await connect(true);
    report("find", await client.callTool({ name: "gateway.find_tools", arguments: { query: "blob", limit: 1 } }));
    const again = await connect(true); // another connection of the same client
    const tools = (await again.listTools()).tools.map((t) => t.name);
    console.log(JSON.stringify({ label: "listed", tools }));
  } else {
    throw new Error(`unknown scenario ${scenario}`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err?.stack ?? String(err));
    process.exit(1);
  },
);
