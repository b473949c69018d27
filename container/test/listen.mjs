// listen.mjs runs an image's entrypoint as the HTTP gateway (bouncer listen,
// docs/listen.md) from its exported filesystem, as the image's user, and
// talks MCP to it over streamable HTTP as a client would: /readyz turns 200
// once the servers in the listener's config are pinned, a session's
// initialize, notifications/initialized and one tools/call are answered,
// and SIGTERM drains it to exit 0. It is what .ci/checks/images.sh uses
// instead of a container engine, which these machines do not have.
//
//   node listen.mjs CONFIG.json ROOTFS PORT TOOL ARGS_JSON -- LISTEN ARGS...
//
// CONFIG.json is the image config (`crane config IMAGE`): its Entrypoint,
// Env and User are honoured (its Cmd is replaced by LISTEN ARGS). Prints
// the call's result ("call TOOL: RESULT") on stdout and exits 0 when all
// of the above held.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const dash = args.indexOf("--");
const [configPath, rootfs, port, tool, toolArgs] = args.slice(0, dash);
const listenArgs = args.slice(dash + 1);
if (dash !== 5 || listenArgs.length === 0) {
  console.error("usage: node listen.mjs CONFIG.json ROOTFS PORT TOOL ARGS_JSON -- LISTEN ARGS...");
  process.exit(2);
}
const cfg = JSON.parse(readFileSync(configPath, "utf8")).config ?? {};
const env = {};
for (const kv of cfg.Env ?? []) {
  const i = kv.indexOf("=");
  env[kv.slice(0, i)] = kv.slice(i + 1);
}
const child = spawn("chroot", [`--userspec=${cfg.User || "0:0"}`, rootfs, ...(cfg.Entrypoint ?? []), ...listenArgs], {
  env,
  stdio: ["ignore", "inherit", "inherit"],
});
let exited = null;
const exit = new Promise((resolve) => child.on("exit", (code, signal) => resolve((exited = { code, signal }))));
const timer = setTimeout(() => fail("timed out after 90s"), 90_000);
function fail(msg) {
  console.error(`listen: ${msg}`);
  child.kill("SIGKILL");
  process.exit(1);
}
child.on("error", (e) => fail(`spawn: ${e.message}`));

const base = `http://127.0.0.1:${port}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Ready: the listener serves and every server is pinned.
for (;;) {
  if (exited) fail(`bouncer listen exited (code ${exited.code}, signal ${exited.signal}) before it was ready`);
  try {
    const res = await fetch(`${base}/readyz`);
    if (res.status === 200) break;
  } catch {}
  await sleep(100);
}

let session;
// post sends one message and returns the answer with its id (from a JSON
// body or the event stream), or null for a notification.
async function post(msg) {
  const headers = { "Content-Type": "application/json", Accept: "application/json, text/event-stream" };
  if (session) {
    headers["Mcp-Session-Id"] = session;
    headers["Mcp-Protocol-Version"] = "2025-11-25";
  }
  const res = await fetch(`${base}/mcp`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", ...msg }) });
  const text = await res.text();
  if (msg.id === undefined) {
    if (res.status !== 202) fail(`${msg.method}: HTTP ${res.status}: ${text.slice(0, 200)}`);
    return null;
  }
  if (res.status !== 200) fail(`${msg.method}: HTTP ${res.status}: ${text.slice(0, 200)}`);
  session ??= res.headers.get("mcp-session-id");
  const bodies = (res.headers.get("content-type") ?? "").startsWith("text/event-stream")
    ? text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim())
    : [text];
  for (const b of bodies) {
    const m = JSON.parse(b);
    if (m.id === msg.id) return m;
  }
  fail(`${msg.method}: no answer in: ${text.slice(0, 200)}`);
}

const init = await post({
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "image-check", version: "1" } },
});
if (!init.result || !session) fail(`initialize: ${JSON.stringify(init).slice(0, 200)}, session ${session}`);
await post({ method: "notifications/initialized" });
const call = await post({ id: 2, method: "tools/call", params: { name: tool, arguments: JSON.parse(toolArgs) } });
console.log(`call ${tool}: ${JSON.stringify(call.result ?? call.error)}`);
if (!call.result || call.result.isError) fail(`${tool} failed`);

child.kill("SIGTERM");
const { code, signal } = await exit;
clearTimeout(timer);
if (code !== 0) fail(`after SIGTERM bouncer listen exited with code ${code}, signal ${signal}; want 0`);
console.log("drained: exit 0 after SIGTERM");
