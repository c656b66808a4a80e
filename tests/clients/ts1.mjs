// The client matrix's driver for the TypeScript SDK 1.x (`@modelcontextprotocol/sdk`, any of its npm aliases):
// `node ts1.mjs PLAN.json`; `plan.package` is the SDK's folder. Elicitation is declared by the versions that have it.
import path from "node:path";
import { pathToFileURL } from "node:url";
import { answers, callStep, emit, listStep, plan, runCases } from "./plan.mjs";

const load = (file) => import(pathToFileURL(path.join(plan.package, "dist/esm", file)).href);
const { Client } = await load("client/index.js");
const types = await load("types.js");
const canElicit = types.ElicitRequestSchema !== undefined;

const capabilities = canElicit ? { sampling: {}, elicitation: {} } : { sampling: {} };
const client = new Client({ name: "matrix-ts1", version: "1" }, { capabilities });
client.setRequestHandler(types.CreateMessageRequestSchema, async () => answers.sample());
if (canElicit) client.setRequestHandler(types.ElicitRequestSchema, async () => answers.elicit());

// 1.x keeps the negotiated version to itself: read it off the initialize answer.
let negotiated;
const request = client.request.bind(client);
client.request = async (req, schema, options) => {
  const answer = await request(req, schema, options);
  if (req.method === "initialize") negotiated = answer.protocolVersion;
  return answer;
};

let transport;
if (plan.transport === "stdio") {
  const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");
  const env = { ...getDefaultEnvironment(), ...(plan.env ?? {}) };
  transport = new StdioClientTransport({ command: plan.command, args: plan.args, env, cwd: plan.cwd, stderr: "inherit" });
} else if (plan.transport === "http") {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  transport = new StreamableHTTPClientTransport(new URL(plan.url));
} else {
  const { SSEClientTransport } = await load("client/sse.js");
  transport = new SSEClientTransport(new URL(plan.url));
}
await client.connect(transport);
emit({ negotiated, elicitation: canElicit });
await runCases(
  async (step) =>
    (await listStep(client, step)) ??
    callStep((params, options) => client.callTool(params, types.CallToolResultSchema, options), step),
);
await client.close().catch(() => {}); // how a session ends is no case of the matrix
process.exit(0);
