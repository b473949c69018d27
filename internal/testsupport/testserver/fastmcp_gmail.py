"""A gmail-shaped MCP server on the official MCP Python SDK's FastMCP.

internal/proxy/fastmcp_test.go runs it as a real server that converts
arguments: FastMCP's pre_parse_json json.loads a string sent for any
parameter not annotated plain str, so addLabelIds: "[\"TRASH\"]" reaches
modify_email as the list ["TRASH"]. Each call appends what the tool read
(after FastMCP's conversion) to calls.jsonl in the working directory.

Needs the mcp package (1.29.0 was tested): $BOUNCER_TEST_FASTMCP names a
Python that can import it; .ci/run installs one.
"""

import json

from mcp.server.fastmcp import FastMCP

mcp = FastMCP("gmail-fastmcp")


def record(tool: str, **args: object) -> None:
    with open("calls.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({"tool": tool, "args": args}) + "\n")


@mcp.tool()
def modify_email(
    messageId: str,
    addLabelIds: list[str] | None = None,
    removeLabelIds: list[str] | None = None,
) -> str:
    """Change the labels of one message."""
    record("modify_email", messageId=messageId, addLabelIds=addLabelIds, removeLabelIds=removeLabelIds)
    return f"labels of {messageId}: added {addLabelIds!r}, removed {removeLabelIds!r}"


@mcp.tool()
def delete_email(messageId: str) -> str:
    """Delete one message for good."""
    record("delete_email", messageId=messageId)
    return f"deleted {messageId}"


if __name__ == "__main__":
    mcp.run()
