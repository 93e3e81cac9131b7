"""The peer `npm run bench -- peers` measures the gateway against: a FastMCP server with the bench's one tool.

`set_config(name, value)` sends the same request the gateway's contract renders (PUT /config/:name on the demo
target, JSON body {"value": ...}, a fresh Idempotency-Key as the pass-through proxy sends) with one AsyncClient
kept for the server's lifetime, and returns the target's answer as the tool's text. Served over Streamable HTTP
with stateful sessions by `run_async`, i.e. on uvicorn as FastMCP configures it; only the banner (and with it the
update check) and uvicorn's per-request access log are off, and the log level is warning (as the bench's output
wants, and no slower for FastMCP).

The HTTP client is httpx2, the next release line of httpx (same AsyncClient API) that FastMCP and the MCP SDK
themselves depend on, so the venv holds one HTTP stack.

Run: python bench/fastmcp_peer.py --target http://127.0.0.1:8790 [--port 0]. Prints `listening on <url>` once
uvicorn serves.
"""

import argparse
import asyncio
import socket
import sys
import uuid
from typing import Annotated
from urllib.parse import quote

import httpx2 as httpx
from fastmcp import Context, FastMCP
from fastmcp.server.lifespan import lifespan
from pydantic import Field

parser = argparse.ArgumentParser()
parser.add_argument("--target", required=True)
parser.add_argument("--host", default="127.0.0.1")
parser.add_argument("--port", type=int, default=0)
options = parser.parse_args()


@lifespan
async def target_client(server):
    # Pool sized for the bench's 32 calls in flight, kept alive between calls as the gateway's dispatcher does.
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=options.target, limits=limits, timeout=10.0) as client:
        yield {"target": client}


mcp = FastMCP("fastmcp-peer", lifespan=target_client)


@mcp.tool
async def set_config(
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.-]*$")],
    value: Annotated[str, Field(max_length=1024)],
    ctx: Context,
) -> str:
    """Set a named configuration entry to a value; repeating it changes nothing."""
    client: httpx.AsyncClient = ctx.lifespan_context["target"]
    response = await client.put(
        f"/config/{quote(name, safe='')}",
        json={"value": value},
        headers={"idempotency-key": str(uuid.uuid4()), "user-agent": "oncegate-bench/0.1"},
    )
    response.raise_for_status()
    return response.text


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


async def main() -> None:
    # uvicorn binds the port itself, as when FastMCP runs alone: a socket handed to it pre-bound would lack
    # IPPROTO_TCP, so asyncio would leave Nagle on for its connections and kept-alive answers would wait ~40 ms for
    # the client's delayed ACK. Port 0 is resolved to a free port first.
    port = options.port or free_port(options.host)
    serving = asyncio.create_task(
        mcp.run_async(
            transport="http",
            show_banner=False,
            log_level="warning",
            host=options.host,
            port=port,
            stateless_http=False,
            uvicorn_config={"access_log": False},
        )
    )
    # Ready once uvicorn accepts a connection, so the bench starts on a serving server.
    while True:
        if serving.done():
            await serving
            sys.exit(1)
        try:
            _, writer = await asyncio.open_connection(options.host, port)
            writer.close()
            await writer.wait_closed()
            break
        except OSError:
            await asyncio.sleep(0.05)
    print(f"listening on http://{options.host}:{port}/mcp", flush=True)
    await serving


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
