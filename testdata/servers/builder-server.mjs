#!/usr/bin/env node
// An MCP test server whose tools build what they act on from their
// arguments, the way real servers do: newline-delimited JSON-RPC on stdio,
// no npm dependencies.
//
//   download_attachment {savePath, filename, data}  writes data to
//                       path.join(savePath, filename), as the gmail
//                       servers save an attachment
//   run_command {command}  runs command with /bin/sh -c, as shell servers do
//   run_python {code}      runs code with python3 -c, as code servers do
//
// Each answers with what it did (or the error), so a test can tell that a
// call Bouncer let through really ran.

import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

const str = { type: "string" };
const tools = [
  {
    name: "download_attachment",
    description: "Save an attachment to savePath/filename",
    inputSchema: { type: "object", properties: { savePath: str, filename: str, data: str }, required: ["savePath", "filename"] },
  },
  {
    name: "run_command",
    description: "Run a shell command",
    inputSchema: { type: "object", properties: { command: str }, required: ["command"] },
  },
  {
    name: "run_python",
    description: "Run Python code",
    inputSchema: { type: "object", properties: { code: str }, required: ["code"] },
  },
];

const text = (t, isError) => ({ content: [{ type: "text", text: t }], isError: !!isError });

function run(file, args) {
  try {
    return text(execFileSync(file, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  } catch (e) {
    return text(String(e.stderr || e.message), true);
  }
}

const handlers = {
  download_attachment(a) {
    const p = path.join(String(a.savePath), String(a.filename));
    try {
      fs.writeFileSync(p, a.data === undefined ? "" : String(a.data));
    } catch (e) {
      return text("download_attachment: " + e.message, true);
    }
    return text("saved " + p);
  },
  run_command(a) {
    return run("/bin/sh", ["-c", String(a.command)]);
  },
  run_python(a) {
    return run("python3", ["-c", String(a.code)]);
  },
};

function send(msg) {
  process.stdout.write(JSON.stringify(msg) + "\n");
}

function handle(msg) {
  if (!msg || typeof msg !== "object" || msg.id === undefined || typeof msg.method !== "string") return;
  const reply = (result) => send({ jsonrpc: "2.0", id: msg.id, result });
  const error = (code, message) => send({ jsonrpc: "2.0", id: msg.id, error: { code, message } });
  const params = msg.params || {};
  switch (msg.method) {
    case "initialize":
      return reply({
        protocolVersion: params.protocolVersion || "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "builder-testserver", version: "1.0.0" },
      });
    case "ping":
      return reply({});
    case "tools/list":
      return reply({ tools });
    case "tools/call": {
      const h = Object.hasOwn(handlers, params.name) ? handlers[params.name] : undefined;
      if (!h) return error(-32602, "Unknown tool: " + params.name);
      return reply(h(params.arguments && typeof params.arguments === "object" ? params.arguments : {}));
    }
    default:
      return error(-32601, "Method not found");
  }
}

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  if (line.trim() === "") return;
  try {
    handle(JSON.parse(line));
  } catch {
    send({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } });
  }
});
rl.on("close", () => process.exit(0));
