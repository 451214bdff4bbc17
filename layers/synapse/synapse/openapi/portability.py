"""The OpenAPI operations of backup and restore (docs/backup.md), merged into
`synapse.openapi.document.OPERATIONS`: pages of a backup's lines out, chunks of them back in."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, RootModel

from synapse.openapi.parts import Op, integer, query
from synapse.openapi.schemas import _Answer
from synapse.portability import backup, format, restore
from synapse.storage import cursor

NDJSON = "application/x-ndjson"


class BackupLines(RootModel[str]):
    """Consecutive lines of a backup (JSON Lines, each with its `n`), from the line the restore
    asked for (`next_line`); at most 1 MiB."""


class RestoreStatus(_Answer):
    status: Literal["running", "done"]
    backup_id: str | None = None
    next_line: int = Field(
        description="The line to send next (the last one sent waits for the one after it)."
    )
    counts: dict[str, int] = Field(default_factory=dict, description="Lines applied so far, per kind.")
    source: dict[str, Any] = Field(
        default_factory=dict, description="Where the backup came from (its header)."
    )
    ids: Literal["kept"] = Field(
        description="Memory and proposal ids are kept (they are scoped to the mind)."
    )
    trust: Literal["kept", "partial", "restorer"] | None = Field(
        default=None,
        description="kept: every line applied so far was signed by this deployment, and its "
        "verification is kept exactly (once done: and its trailer sealed the whole file); partial: "
        "done, every line signed, but the trailer is not sealed by this deployment (a file cut short, "
        "or a backup from before seals): verification is kept; restorer: from a line that was not "
        "signed, verified memories are recorded as verified by the person restoring (docs/backup.md).",
    )


OPERATIONS: dict[tuple[str, str], Op] = {
    ("GET", "/minds/{mind_id}/backup"): Op(
        "backupMind",
        "A page of the mind's backup (JSON Lines); X-Next-Cursor names the next page until the last",
        "minds",
        "user",
        {200: [NDJSON]},
        params=(
            query("limit", integer(1, backup.MAX_LINES), f"Lines per page (default {backup.DEFAULT_LINES})."),
            query(
                "cursor",
                {"type": "string", "pattern": cursor.TOKEN_PATTERN},
                "The previous page's X-Next-Cursor, as it came (any other is a 400).",
            ),
        ),
        notes={200: f"Lines of the backup ({format.FORMAT} v{format.VERSION}), header first, trailer last."},
    ),
    ("POST", "/minds/{mind_id}/restore"): Op(
        "restoreMind",
        "Restore a chunk of a backup's lines into a new or empty mind (resumable, idempotent)",
        "minds",
        "user",
        {200: RestoreStatus},
        BackupLines,
        (
            query(
                "last",
                {"type": "boolean"},
                "These are the stream's last lines (a stream without its trailer is refused).",
            ),
        ),
        media=NDJSON,
        notes={
            409: "Another backup, a mind not empty, or lines from elsewhere than where the restore stands",
            413: f"The chunk is over {restore.MAX_BODY_BYTES} bytes",
            422: "A line that is not the backup's, or holds a value its write would refuse "
            "(details name it: line, field, rule)",
        },
    ),
}
