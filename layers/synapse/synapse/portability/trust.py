"""Who vouched for a restored memory (issue 32 item 5; docs/backup.md, "Signatures").

The chain of a backup is a checksum: anyone can edit a line and chain it again, so a file's
`verified_by` is only a claim. Every line a backup writes after the first carries `sig`, this
deployment's HMAC (`format.signature`) of the digest of the lines before it; a restore keeps a
line's trust state exactly when the line after it carries a `sig` that verifies here (the same
deployment wrote every byte up to it). From the first line that is not so vouched for (edited, from
another deployment, or a backup from before signing) to the end, the restore is not trusted: each
verified memory it writes is recorded as verified by the person restoring, at the restore's time,
and the file's claim (`verified_by`, `verified_at`, and who made a vouching change) is kept on the
revision as `claimed`, for the record.
"""

from typing import Any, NamedTuple

from synapse.memory.history import Change
from synapse.memory.kinds import Memory

KEPT, RESTORER = "kept", "restorer"  # a restore job's `trust`: the file's, or the restorer's word
# A restore's trust once done when every line was vouched for but the trailer carries no seal of
# this deployment (`format.seal`): the lines are its own, the file may have been cut short (or
# comes from before trailers were sealed). Verification of the lines is kept: they are as written.
PARTIAL = "partial"
STATES = frozenset({KEPT, RESTORER, PARTIAL})
# Changes whose maker vouched for the memory: verifying it, restoring an earlier version (restored
# as verified by them), accepting a proposal.
VOUCHING = frozenset({Change.VERIFIED, Change.RESTORED, Change.PROPOSAL_ACCEPTED})


class Trust(NamedTuple):
    """Whether a line's trust state is kept, and who restores, when."""

    kept: bool
    user: str
    at: str

    def memory(self, memory: Memory) -> tuple[Memory, dict[str, Any] | None]:
        """The memory as it is stored, and the file's claim it replaced (None: nothing replaced)."""
        if self.kept or not memory.verified:
            return memory, None
        claim = {"verified_by": memory.verified_by, "verified_at": memory.verified_at}
        return memory._replace(verified_by=self.user, verified_at=self.at), claim

    def changed_by(self, change: Change, by: dict[str, Any], claim: dict[str, Any] | None) -> dict[str, Any]:
        """Who made a revision's change: for a vouching change the restorer's word replaces the
        file's (noted in `claim`), unless the line is trusted."""
        if self.kept or change not in VOUCHING:
            return by
        if claim is not None:
            claim["changed_by"] = by
        return {"source": "user", "user_id": self.user}
