#!/usr/bin/env python3
"""Extracts what Bouncer's InjecAgent replay reads from InjecAgent's data/.

Usage: python3 extract.py DATA_DIR

DATA_DIR is InjecAgent's data/ directory (uiuc-kang-lab/InjecAgent at
f19c9f2c79a41046eb13c03c51a24c567a8ffa07; /work/shared/injecagent holds a
verbatim copy). It writes, next to this script:

  user_cases.jsonl, attacker_cases_dh.jsonl, attacker_cases_ds.jsonl
      copied byte for byte (the test cases are their cross product: each
      user case's Tool Response Template with the attacker's instruction
      in place of <Attacker Instruction>);
  tools.json
      an MCP tools/list result for every tool the cases name: the toolkit
      and tool name joined (GmailSendEmail), the tool's summary as its
      description, its parameters as the inputSchema's properties;
  responses.json
      for each tool an attacker reads data with (the first tool of a data
      stealing case), the first of InjecAgent's simulated calls of it:
      its arguments and the output it returned.
"""
import json
import shutil
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
data = Path(sys.argv[1])

for name in ("user_cases.jsonl", "attacker_cases_dh.jsonl", "attacker_cases_ds.jsonl", "LICENSE"):
    shutil.copyfile(data / name, here / name)

users = [json.loads(l) for l in open(data / "user_cases.jsonl")]
attacks = [json.loads(l) for f in ("attacker_cases_dh.jsonl", "attacker_cases_ds.jsonl") for l in open(data / f)]
wanted = {u["User Tool"] for u in users} | {t for a in attacks for t in a["Attacker Tools"]}

types = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
         "array": "array", "object": "object"}
tools = []
for kit in json.load(open(data / "tools.json")):
    for t in kit["tools"]:
        name = kit["toolkit"] + t["name"]
        if name not in wanted:
            continue
        props = {p["name"]: {"type": types.get(p["type"], "string"), "description": p["description"]} for p in t["parameters"]}
        required = [p["name"] for p in t["parameters"] if p.get("required")]
        schema = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        tools.append({"name": name, "description": t["summary"], "inputSchema": schema})
tools.sort(key=lambda t: t["name"])
missing = wanted - {t["name"] for t in tools}
if missing:
    sys.exit(f"tools.json lacks {sorted(missing)}")
with open(here / "tools.json", "w") as f:
    json.dump({"tools": tools}, f, indent=1, sort_keys=True)
    f.write("\n")

sim = json.load(open(data / "attacker_simulated_responses.json"))
responses = {}
for a in attacks:
    if len(a["Attacker Tools"]) < 2:
        continue
    tool = a["Attacker Tools"][0]
    for key, out in sim.items():
        name, args = key[1:-1].split(",", 1)
        if name != tool:
            continue
        try:
            args = json.loads(args)
        except ValueError:
            continue  # some keys hold Python literals, not JSON
        if not isinstance(args, dict):
            continue  # nor arguments at all
        responses[tool] = {"arguments": args, "output": out}
        break
    else:
        sys.exit(f"no simulated response for {tool}")
with open(here / "responses.json", "w") as f:
    json.dump(responses, f, indent=1, sort_keys=True)
    f.write("\n")
