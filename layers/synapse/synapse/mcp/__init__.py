"""Synapse as a Model Context Protocol server: `/mcp` over Streamable HTTP (stateless, JSON answers).

`schema` is the tool table (names, descriptions, input schemas, scopes) that the stdio server in
clients/python shares as data; `arguments` checks a call's arguments against it; `calls` runs a tool
with the same layer functions the REST handlers call; `protocol` is JSON-RPC and the transport's
rules (Origin, MCP-Protocol-Version, 202 for notifications, 405 for GET and DELETE).
"""
