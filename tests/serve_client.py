"""Real clients of `memoria serve` for tests/serve.rs: the official OpenAI Python SDK
(`openai` on PyPI) against /v1/embeddings, and the official MCP SDK's streamable-HTTP client
against /mcp.

Usage: python serve_client.py BASE_URL SPEC.json
SPEC: {"token": "..." | null, "texts": [...], "query": "...", "search": {...arguments}}
Prints one JSON object with what each client got.
"""

import asyncio
import json
import sys

import httpx2 as httpx  # what openai and mcp use (the `httpx2` distribution)
import openai


def embeddings(base, token, texts):
    client = openai.OpenAI(base_url=base + "/v1", api_key=token or "unused", max_retries=0)
    out = {}
    # The SDK asks for base64 unless told otherwise; both must give the same vectors.
    for kind in ["query", "passage"]:
        b64 = client.embeddings.create(model="embeddinggemma-300m", input=texts, extra_body={"input_type": kind})
        flt = client.embeddings.create(model="embeddinggemma-300m", input=texts, encoding_format="float", extra_body={"input_type": kind})
        out[kind] = {
            "base64": [d.embedding for d in b64.data],
            "float": [d.embedding for d in flt.data],
            "usage": b64.usage.prompt_tokens,
        }
    small = client.embeddings.create(model="google/embeddinggemma-300m", input=texts[0], dimensions=256)
    out["dim256"] = small.data[0].embedding
    out["default"] = client.embeddings.create(model="embeddinggemma", input=texts[0]).data[0].embedding
    models = client.models.list()
    out["models"] = [m.id for m in models.data]
    # Malformed requests: each a 4xx in OpenAI's shape, the server serving after each.
    bad = []
    raw = httpx.Client(base_url=base, headers={"Authorization": "Bearer " + (token or "unused")}, timeout=60)
    for name, body in [
        ("bad json", b"{not json"),
        ("wrong type", json.dumps({"model": "embeddinggemma", "input": 7}).encode()),
        ("empty input", json.dumps({"model": "embeddinggemma", "input": []}).encode()),
        ("10000 inputs", json.dumps({"model": "embeddinggemma", "input": ["x"] * 10000}).encode()),
        ("10 MB body", json.dumps({"model": "embeddinggemma", "input": "x" * (10 << 20)}).encode()),
        ("unknown model", json.dumps({"model": "text-embedding-3-small", "input": "x"}).encode()),
        ("token arrays", json.dumps({"model": "embeddinggemma", "input": [[1, 2, 3]]}).encode()),
    ]:
        r = raw.post("/v1/embeddings", content=body, headers={"Content-Type": "application/json"})
        try:
            error = r.json().get("error")
        except Exception:
            error = None
        alive = raw.get("/health").status_code
        bad.append({"name": name, "status": r.status_code, "error": error, "healthAfter": alive})
    out["bad"] = bad
    out["unauthorized"] = httpx.post(base + "/v1/embeddings", json={"model": "embeddinggemma", "input": "x"}).status_code
    return out


async def mcp_search(base, token, arguments):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": "Bearer " + token} if token else {}
    async with httpx.AsyncClient(headers=headers, timeout=120) as http:
        async with streamable_http_client(base + "/mcp", http_client=http) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("memory_search", arguments)
                return {
                    "tools": [t.name for t in tools.tools],
                    "text": result.content[0].text,
                    "isError": result.is_error,
                }


def main():
    base, spec_path = sys.argv[1], sys.argv[2]
    spec = json.load(open(spec_path))
    token = spec.get("token")
    out = {"embeddings": embeddings(base, token, spec["texts"])}
    out["mcp"] = asyncio.run(mcp_search(base, token, spec["search"]))
    print(json.dumps(out))


main()
