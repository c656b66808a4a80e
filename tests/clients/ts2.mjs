// The client matrix's driver for the TypeScript SDK 2.x client (`@modelcontextprotocol/client`): `node ts2.mjs
// PLAN.json`; `plan.package` is its folder, `plan.mode` its version negotiation ("legacy", or "auto": 2026-07-28).
import path from "node:path";
import { pathToFileURL } from "node:url";
import { answers, callStep, emit, listStep, plan, runCases } from "./plan.mjs";

const load = (file) => import(pathToFileURL(path.join(plan.package, "dist", file)).href);
const { Client, StreamableHTTPClientTransport, SSEClientTransport } = await load("index.mjs");

const client = new Client(
  { name: "matrix-ts2", version: "2" },
  { capabilities: { sampling: {}, elicitation: {} }, versionNegotiation: { mode: plan.mode ?? "legacy" } },
);
client.setRequestHandler("sampling/createMessage", async () => answers.sample());
client.setRequestHandler("elicitation/create", async () => answers.elicit());

let transport;
if (plan.transport === "stdio") {
  const { StdioClientTransport, getDefaultEnvironment } = await load("stdio.mjs");
  const env = { ...getDefaultEnvironment(), ...(plan.env ?? {}) };
  transport = new StdioClientTransport({ command: plan.command, args: plan.args, env, cwd: plan.cwd, stderr: "inherit" });
} else if (plan.transport === "http") {
  transport = new StreamableHTTPClientTransport(new URL(plan.url));
} else {
  transport = new SSEClientTransport(new URL(plan.url));
}
await client.connect(transport);
emit({ negotiated: client.getNegotiatedProtocolVersion(), elicitation: true });
await runCases(async (step) => (await listStep(client, step)) ?? callStep((p, o) => client.callTool(p, o), step));
await client.close().catch(() => {}); // how a session ends is no case of the matrix
process.exit(0);
