"""A minimal MCP server on stdio, standard library only.

.ci/checks/images.sh installs it as /app/server.py in the Python wrapper
image and drives it through bouncer, to show the wrapper runs a real Python
server end to end. Two tools: echo, which returns its message, and probe,
which tries what a compromised server would (reading and writing Bouncer's
state, writing outside its data directory) and reports what the kernel let
it do, one "OP PATH: ok" or "OP PATH: ERRNO-NAME" line each. Its paths are
fixed, not arguments, so what answers is the sandbox, not the policy's
checks of a call's arguments.
"""
import errno
import json
import os
import sys

# What probe tries, in order: (op, path).
PROBES = [
    ("write", "/data/probe.txt"),
    ("read", "/app/server.py"),
    ("list", "/var/lib/bouncer"),
    ("read", "/var/lib/bouncer/audit.jsonl"),
    ("append", "/var/lib/bouncer/audit.jsonl"),
    ("write", "/var/lib/bouncer/remembered.json"),
    ("write", "/etc/bouncer/policy.yaml"),
    ("write", "/tmp/probe.txt"),
]


def probe_one(op, path):
    try:
        if op == "write":
            with open(path, "w") as f:
                f.write("probe\n")
        elif op == "append":
            with open(path, "a") as f:
                f.write("probe\n")
        elif op == "read":
            with open(path) as f:
                f.read(1)
        elif op == "list":
            os.listdir(path)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def probe():
    return "\n".join("%s %s: %s" % (op, path, probe_one(op, path)) for op, path in PROBES)

TOOLS = [
    {
        "name": "echo",
        "description": "Returns the message it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    },
    {
        "name": "probe",
        "description": "Reports which of a fixed list of file operations the server may do.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def reply(msg_id, result=None, error=None):
    out = {"jsonrpc": "2.0", "id": msg_id}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue  # a notification
        if method == "initialize":
            reply(msg_id, {
                "protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "python-echo", "version": "1"},
            })
        elif method == "tools/list":
            reply(msg_id, {"tools": TOOLS})
        elif method == "tools/call":
            params = msg["params"]
            args = params.get("arguments") or {}
            text = probe() if params.get("name") == "probe" else str(args.get("message", ""))
            reply(msg_id, {"content": [{"type": "text", "text": text}]})
        elif method == "ping":
            reply(msg_id, {})
        else:
            reply(msg_id, error={"code": -32601, "message": "method not found: %s" % method})


if __name__ == "__main__":
    main()
