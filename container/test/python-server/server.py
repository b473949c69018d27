"""A minimal MCP server on stdio, standard library only.

.ci/checks/images.sh installs it as /app/server.py in the Python wrapper
image and drives it through bouncer, to show the wrapper runs a real Python
server end to end. One tool, echo, which returns its message.
"""
import json
import sys

TOOLS = [
    {
        "name": "echo",
        "description": "Returns the message it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        },
    }
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
            args = msg["params"].get("arguments") or {}
            reply(msg_id, {"content": [{"type": "text", "text": str(args.get("message", ""))}]})
        elif method == "ping":
            reply(msg_id, {})
        else:
            reply(msg_id, error={"code": -32601, "message": "method not found: %s" % method})


if __name__ == "__main__":
    main()
