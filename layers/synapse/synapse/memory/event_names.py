"""The names of the events a webhook subscription can ask for (SPEC), apart from `events` (which
re-exports them and turns stream records into events) so that managing subscriptions imports no
more than these (issue 14, cold start: `events` needs the proposals, history and write modules)."""

from __future__ import annotations

CREATED = "memory.created"
UPDATED = "memory.updated"
VERIFIED = "memory.verified"
DELETED = "memory.deleted"
EXPIRING = "memory.expiring"
PROPOSAL_CREATED = "proposal.created"
PROPOSAL_ACCEPTED = "proposal.accepted"
PROPOSAL_REJECTED = "proposal.rejected"
PING = "ping"
SUBSCRIBABLE = (
    CREATED,
    UPDATED,
    VERIFIED,
    DELETED,
    EXPIRING,
    PROPOSAL_CREATED,
    PROPOSAL_ACCEPTED,
    PROPOSAL_REJECTED,
)
