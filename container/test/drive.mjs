// drive.mjs runs an image's entrypoint from its exported filesystem, as the
// image's user, and talks MCP to it over stdio as a client would:
// initialize, notifications/initialized, tools/list, and (optionally) one
// tools/call. It is what .ci/checks/images.sh uses instead of a container
// engine, which these machines do not have.
//
//   node drive.mjs CONFIG.json ROOTFS [TOOL ARGS_JSON]...
//
// CONFIG.json is the image config (`crane config IMAGE`): its Entrypoint, Cmd,
// Env and User are honoured. Each TOOL ARGS_JSON pair is one tools/call, in
// order. Exits 0 when every request got a result, and prints the tool names
// and each call's result ("call TOOL: RESULT") on stdout.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

const [configPath, rootfs, ...callArgs] = process.argv.slice(2);
if (!configPath || !rootfs || callArgs.length % 2 !== 0) {
  console.error("usage: node drive.mjs CONFIG.json ROOTFS [TOOL ARGS_JSON]...");
  process.exit(2);
}
const cfg = JSON.parse(readFileSync(configPath, "utf8")).config ?? {};
const argv = [...(cfg.Entrypoint ?? []), ...(cfg.Cmd ?? [])];
if (argv.length === 0) {
  console.error("image has neither Entrypoint nor Cmd");
  process.exit(1);
}
const user = cfg.User || "0:0";
const env = {};
for (const kv of cfg.Env ?? []) {
  const i = kv.indexOf("=");
  env[kv.slice(0, i)] = kv.slice(i + 1);
}
// chroot(8) from coreutils on the host does the user switch; nothing from the
// host's filesystem is visible to the program it starts.
const child = spawn("chroot", [`--userspec=${user}`, rootfs, ...argv], {
  env,
  stdio: ["pipe", "pipe", "inherit"],
});

const timer = setTimeout(() => fail("timed out after 60s"), 60_000);
function fail(msg) {
  console.error(`drive: ${msg}`);
  child.kill("SIGKILL");
  process.exit(1);
}
child.on("error", (e) => fail(`spawn: ${e.message}`));
child.on("exit", (code, sig) => {
  if (pending.size > 0) fail(`server exited (code ${code}, signal ${sig}) with requests unanswered`);
});

const pending = new Map();
let buf = "";
child.stdout.setEncoding("utf8");
child.stdout.on("data", (chunk) => {
  buf += chunk;
  let nl;
  while ((nl = buf.indexOf("\n")) >= 0) {
    const line = buf.slice(0, nl).trim();
    buf = buf.slice(nl + 1);
    if (!line) continue;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      fail(`not JSON on stdout: ${line.slice(0, 200)}`);
    }
    if (msg.id !== undefined && pending.has(msg.id)) {
      const { resolve } = pending.get(msg.id);
      pending.delete(msg.id);
      resolve(msg);
    }
  }
});

let nextId = 1;
function request(method, params) {
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, { resolve });
    child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
  }).then((msg) => {
    if (msg.error) fail(`${method}: error ${JSON.stringify(msg.error)}`);
    return msg.result;
  });
}

const init = await request("initialize", {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "bouncer-image-check", version: "0" },
});
console.log(`server: ${init.serverInfo?.name} ${init.serverInfo?.version} protocol ${init.protocolVersion}`);
child.stdin.write(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n");

const names = [];
let cursor;
do {
  const page = await request("tools/list", cursor ? { cursor } : {});
  for (const t of page.tools ?? []) names.push(t.name);
  cursor = page.nextCursor;
} while (cursor);
if (names.length === 0) fail("tools/list returned no tools");
console.log(`tools: ${names.join(" ")}`);

for (let i = 0; i < callArgs.length; i += 2) {
  const [tool, args] = [callArgs[i], callArgs[i + 1]];
  const res = await request("tools/call", { name: tool, arguments: JSON.parse(args) });
  console.log(`call ${tool}: ${JSON.stringify(res)}`);
}

child.stdin.end();
const status = await new Promise((resolve) => child.on("exit", (code) => resolve(code)));
clearTimeout(timer);
console.log(`exit: ${status}`);
process.exit(0);
