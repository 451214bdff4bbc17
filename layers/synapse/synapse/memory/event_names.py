"""The names of the events a webhook subscription can ask for (SPEC), apart from `events` (which
re-exports them and turns stream records into events) so that managing subscriptions imports no
more than these (issue 14, cold start: `events` needs the proposals, history and write modules)."""

from __future__ import annotations

CREATED = "memory.created"
UPDATED = "memory.updated"
VERIFIED = "memory.verified"
DELETED = "memory.deleted"
SUPERSEDED = "memory.superseded"  # a newer memory replaced it (besides memory.updated: docs/webhooks.md)
EXPIRING = "memory.expiring"
PROPOSAL_CREATED = "proposal.created"
PROPOSAL_ACCEPTED = "proposal.accepted"
PROPOSAL_REJECTED = "proposal.rejected"
PING = "ping"
# A mind's membership (synapse.teams), sent by the request that changed it.
MEMBER_INVITED = "member.invited"
MEMBER_JOINED = "member.joined"
MEMBER_ROLE_CHANGED = "member.role_changed"
MEMBER_REMOVED = "member.removed"
MEMBER_LEFT = "member.left"
MEMBER_OWNERSHIP_TRANSFERRED = "member.ownership_transferred"
INVITATION_REVOKED = "invitation.revoked"
INVITATION_DECLINED = "invitation.declined"
MEMBERSHIP = (
    MEMBER_INVITED,
    MEMBER_JOINED,
    MEMBER_ROLE_CHANGED,
    MEMBER_REMOVED,
    MEMBER_LEFT,
    MEMBER_OWNERSHIP_TRANSFERRED,
    INVITATION_REVOKED,
    INVITATION_DECLINED,
)
SUBSCRIBABLE = (
    CREATED,
    UPDATED,
    VERIFIED,
    DELETED,
    SUPERSEDED,
    EXPIRING,
    PROPOSAL_CREATED,
    PROPOSAL_ACCEPTED,
    PROPOSAL_REJECTED,
    *MEMBERSHIP,
)
