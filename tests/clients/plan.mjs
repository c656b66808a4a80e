// What the client matrix's JavaScript drivers share (see plan.py, its Python twin): load the plan, run each
// case's steps in order on the connected client, print one JSON line per case.
import { readFileSync } from "node:fs";

export const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));

export function emit(line) {
  process.stdout.write(JSON.stringify(line) + "\n");
}

export const answers = {
  sample: () => ({ role: "assistant", content: { type: "text", text: plan.person ?? "ann" }, model: "matrix" }),
  elicit: () => ({ action: "accept", content: { response: plan.person ?? "ann" } }),
};

// A step that throws ends its case; what the client threw is the observation.
export async function runCases(operate) {
  for (const c of plan.cases) {
    const observed = [];
    for (const original of c.steps) {
      const step = { ...original };
      if (step.uri_match) {
        const found = new RegExp(step.uri_match).exec(observed.length ? JSON.stringify(observed.at(-1)) : "");
        step.uri = found ? found[0] : `(no match of ${step.uri_match})`;
      }
      const start = performance.now();
      let outcome;
      try {
        outcome = await operate(step);
      } catch (err) {
        outcome = { error: `${err?.name ?? "Error"}: ${err?.message ?? err}`.slice(0, 2000) };
      }
      outcome.ms = Math.round(performance.now() - start);
      observed.push(outcome);
      if (outcome.error && !step.error_ok) break;
    }
    emit({ case: c.name, steps: observed });
  }
}

// Calls a tool through `call(params, options)`; `cancel_after_ms` aborts it (the client sends its cancellation).
export async function callStep(call, step) {
  const progress = [];
  const controller = new AbortController();
  const options = { onprogress: (p) => progress.push(p.progress), signal: controller.signal, timeout: 120000 };
  if (step.progress === false) delete options.onprogress; // no progress token: the call a lane may take
  const params = { name: step.tool, arguments: step.arguments ?? {} };
  if (step.cancel_after_ms === undefined) {
    return { result: await call(params, options), progress };
  }
  const timer = setTimeout(() => controller.abort("matrix cancel"), step.cancel_after_ms);
  try {
    return { result: await call(params, options), cancelled: false };
  } catch (err) {
    if (controller.signal.aborted) return { cancelled: true };
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

export async function listStep(client, step) {
  switch (step.op) {
    case "tools":
      return { names: (await client.listTools()).tools.map((t) => t.name) };
    case "resources":
      return { uris: (await client.listResources()).resources.map((r) => r.uri) };
    case "prompts":
      return { names: (await client.listPrompts()).prompts.map((p) => p.name) };
    case "read":
      return { result: await client.readResource({ uri: step.uri }) };
    case "prompt":
      return { result: await client.getPrompt({ name: step.name, arguments: step.arguments }) };
  }
  return undefined;
}
