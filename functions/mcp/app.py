"""POST /mcp — MCP Streamable HTTP, stateless: one JSON-RPC message per POST, answered as JSON
(notifications 202); GET and DELETE /mcp are 405. The tools are synapse.mcp.schema's."""

import boto3  # noqa: F401 - before the layer, at the handler's own depth: docs/benchmarks.md#cold-start
from synapse.api.http import Request, Response, transport_endpoint
from synapse.mcp import protocol


# The route has the authorizer; the credential is checked in synapse.mcp.protocol, after the
# transport's own checks (Origin, MCP-Protocol-Version), so that its 401 carries MCP's challenge, and
# so are the query parameters, so that their 400 is JSON-RPC's.
@transport_endpoint
def handler(request: Request) -> Response:
    return protocol.handle(request)
