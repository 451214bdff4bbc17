"""OAuth 2.1 for `/mcp`: Synapse as the authorization server of the connectors (Claude, ChatGPT)
that accept no static key. The person's own sign-in (whatever AuthMode the stack uses) is the
identity; a consent in the review console turns it into a *grant*: an agent on one mind with the
scopes the person chose. docs/auth.md "OAuth" has the flow.

Modules: `urls` (the issuer, the resource, the metadata documents), `errors` (RFC 6749 / 7591
error answers), `redirects` (which redirect URIs are accepted, registered or requested, and the
Location rebuilt from them), `clients` (dynamic registration), `consent` (the authorization request
and the person's decision), `grants` (codes, tokens, rotation, revocation).
"""
