// client.mjs drives one MCP server with the official TypeScript SDK client
// and prints what happened as one JSON object on stdout. The Go tests and
// the benchmark script run it; it holds no expectations of its own.
//
//   node client.mjs [--header K:V ...] [--roots URI,...] --http URL   < script.json
//   node client.mjs [--roots URI,...] --stdio COMMAND [ARGS...]          < script.json
//
// script.json is {"calls":[{"tool":NAME,"arguments":{...},"repeat":N,"warmup":W}]}:
// W untimed calls (default 0) before the N timed ones, so that the
// client's own JavaScript is compiled by then (a V8 process runs its
// first few hundred calls slower; see bench.sh).
// The output is {"server":{...},"tools":[...],"results":[{"tool","isError",
// "content","structuredContent","error","micros":[...]}]}: micros holds the
// client-side latency of every repetition in microseconds.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { readFileSync } from "node:fs";

function usage(msg) {
  process.stderr.write(`client.mjs: ${msg}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
const headers = {};
let roots = null;
let transport = null;
while (args.length > 0) {
  const a = args.shift();
  if (a === "--header") {
    const h = args.shift() ?? usage("--header needs K:V");
    const i = h.indexOf(":");
    if (i <= 0) usage(`bad header ${h}`);
    headers[h.slice(0, i)] = h.slice(i + 1);
  } else if (a === "--roots") {
    roots = (args.shift() ?? "").split(",").filter((s) => s !== "");
  } else if (a === "--http") {
    const url = args.shift() ?? usage("--http needs a URL");
    transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  } else if (a === "--stdio") {
    const command = args.shift() ?? usage("--stdio needs a command");
    transport = new StdioClientTransport({ command, args: args.splice(0), stderr: "inherit" });
  } else {
    usage(`unknown argument ${a}`);
  }
}
if (transport === null) usage("give --http URL or --stdio COMMAND");

const script = JSON.parse(readFileSync(0, "utf8"));
const capabilities = roots === null ? {} : { roots: { listChanged: true } };
const client = new Client({ name: "agentstore-interop", version: "1.0.0" }, { capabilities });
if (roots !== null) {
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: roots.map((uri) => ({ uri, name: uri })),
  }));
}

const out = { server: null, tools: [], results: [] };
try {
  await client.connect(transport);
  out.server = client.getServerVersion() ?? null;
  out.tools = (await client.listTools()).tools;
  for (const call of script.calls ?? []) {
    const r = { tool: call.tool, micros: [] };
    const n = call.repeat ?? 1;
    for (let i = 0; i < (call.warmup ?? 0) && r.error === undefined; i++) {
      try {
        await client.callTool({ name: call.tool, arguments: call.arguments ?? {} });
      } catch (e) {
        r.error = String(e?.message ?? e);
      }
    }
    if (r.error !== undefined) {
      out.results.push(r);
      continue;
    }
    for (let i = 0; i < n; i++) {
      const t0 = process.hrtime.bigint();
      try {
        const res = await client.callTool({ name: call.tool, arguments: call.arguments ?? {} });
        r.micros.push(Number((process.hrtime.bigint() - t0) / 1000n));
        if (i === n - 1) {
          r.isError = res.isError === true;
          r.content = res.content;
          r.structuredContent = res.structuredContent ?? null;
        }
      } catch (e) {
        r.micros.push(Number((process.hrtime.bigint() - t0) / 1000n));
        r.error = String(e?.message ?? e);
        break;
      }
    }
    out.results.push(r);
  }
} catch (e) {
  out.fatal = String(e?.message ?? e);
} finally {
  await client.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(out.fatal ? 1 : 0);
