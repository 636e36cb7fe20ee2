"""A real MCP client (the official Python SDK, `mcp` on PyPI) for tests/mcp.rs.

Usage: python mcp_client.py SPEC.json
SPEC: {"command": "...", "args": [...], "env": {...}, "calls": [{"name": ..., "arguments": {...}}],
       "callTimeoutSeconds": 120}
Prints one JSON object: the server's info, its tools, and per call either
{"result": {"text", "structured", "isError", "contentCount", "seconds"}} or
{"error": {"code", "message"}} (code "timeout" when the server did not answer in time).
"""

import asyncio
import json
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError


async def main(spec):
    params = StdioServerParameters(
        command=spec["command"], args=spec["args"], env=spec.get("env") or None
    )
    out = {"calls": []}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            started = time.monotonic()
            init = await session.initialize()
            out["initializeSeconds"] = time.monotonic() - started
            out["serverName"] = init.server_info.name
            tools = await session.list_tools()
            out["tools"] = [
                {"name": t.name, "inputSchema": t.input_schema} for t in tools.tools
            ]
            limit = spec.get("callTimeoutSeconds", 120)
            for call in spec["calls"]:
                started = time.monotonic()
                try:
                    result = await asyncio.wait_for(
                        session.call_tool(call["name"], call.get("arguments")), limit
                    )
                except asyncio.TimeoutError:
                    out["calls"].append(
                        {"error": {"code": "timeout", "message": f"no answer in {limit} s"}}
                    )
                    break
                except MCPError as err:
                    out["calls"].append(
                        {"error": {"code": err.error.code, "message": err.error.message}}
                    )
                    continue
                texts = [c.text for c in result.content if c.type == "text"]
                out["calls"].append(
                    {
                        "result": {
                            "text": texts[0] if texts else None,
                            "contentCount": len(result.content),
                            "structured": result.structured_content,
                            "isError": bool(result.is_error),
                            "seconds": time.monotonic() - started,
                        }
                    }
                )
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as f:
        asyncio.run(main(json.load(f)))
