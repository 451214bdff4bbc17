"""What each `synapse` command does once its arguments are parsed (`synapse_client.cli` parses them
and loads this module only then: `synapse --help` and a usage error never import httpx or pydantic)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

import httpx
from pydantic import BaseModel

from synapse_client import backup as backups
from synapse_client import importers, ops, transfer
from synapse_client._core import Call
from synapse_client.cli import remembered_fields
from synapse_client.client import Synapse
from synapse_client.errors import SynapseError
from synapse_client.models import Memory, SearchHit

_RELATIVE = re.compile(r"([1-9][0-9]*)([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def expiry(value: str) -> str:
    """`--expires`: an ISO 8601 timestamp, or a span from now such as 30m, 24h, 7d or 2w."""
    found = _RELATIVE.fullmatch(value)
    if found is None:
        return value
    span = timedelta(**{_UNITS[found[2]]: int(found[1])})
    return (datetime.now(UTC) + span).isoformat(timespec="seconds").replace("+00:00", "Z")


# ---------------------------------------------------------------- answers


@dataclass(frozen=True)
class Answer[T]:
    """One API answer as the client reads it (`value`), with its status and its JSON as it came."""

    value: T
    status: int
    body: Any


def answered[T](client: Synapse, call: Call[T]) -> Answer[T]:
    """Send `call` (retried as the client retries) and keep the raw answer next to its value."""

    def read(response: httpx.Response) -> Answer[T]:
        body = response.json() if response.content else None  # a 204 has none
        return Answer(call.parse(response), response.status_code, body)

    sent = Call(
        call.method,
        call.path,
        read,
        params=call.params,
        body=call.body,
        headers=call.headers,
        idempotent=call.idempotent,
    )
    return client.send(sent)


def proposal_note(memory: Memory) -> str:
    """What `remember` says when the API answered 202: the write is a proposal, not applied (the
    MCP server's `remember` says the same)."""
    return (
        f"proposed {memory.pending_proposal}: a person verified this memory, so the change waits for "
        "their review (the console's queue); until then the memory stays as shown:"
    )


# ---------------------------------------------------------------- output


class Output:
    def __init__(self, as_json: bool, out: IO[str] = sys.stdout) -> None:
        self.as_json = as_json
        self.out = out

    def json(self, value: Any) -> None:
        if isinstance(value, BaseModel):
            value = value.model_dump(mode="json")
        elif isinstance(value, list):
            value = self._plain(value)
        print(json.dumps(value, ensure_ascii=False, indent=2), file=self.out)

    @classmethod
    def _plain(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [cls._plain(item) for item in value]
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value

    def line(self, text: str) -> None:
        print(text, file=self.out)

    def memory(self, memory: Memory) -> None:
        state = "verified" if memory.verified else "unverified"
        self.line(
            f"{memory.id}  {memory.category}/{memory.key}  v{memory.version}  {memory.priority}  {state}"
        )
        self.line(f"  {memory.content}")
        if memory.tags:
            self.line(f"  tags: {', '.join(memory.tags)}")
        if memory.occurred_at:
            self.line(f"  on: {memory.occurred_at}")
        if memory.expires_at:
            self.line(f"  expires: {memory.expires_at}{' (expired)' if memory.expired else ''}")
        if memory.superseded_by:
            self.line(f"  replaced by {memory.superseded_by} at {memory.superseded_at}")


class Progress:
    """Counts on stderr: rewritten in place on a terminal, a line per 1,000 otherwise."""

    def __init__(self, verb: str, stream: IO[str] = sys.stderr, unit: str = "memories") -> None:
        self.verb, self.stream, self.shown, self.unit = verb, stream, 0, unit
        self.tty = stream.isatty()

    def __call__(self, count: int) -> None:
        if self.tty:
            print(f"\r{self.verb} {count} {self.unit}", end="", file=self.stream, flush=True)
        elif count // 1000 > self.shown // 1000:
            print(f"{self.verb} {count} {self.unit}", file=self.stream, flush=True)
        self.shown = count

    def done(self) -> None:
        if self.tty and self.shown:
            print(file=self.stream)


# ---------------------------------------------------------------- commands


def cmd_remember(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    expires = expiry(args.expires) if args.expires else None
    category, key, content = remembered_fields(args.fields)
    call = ops.remember(
        category,
        key,
        content,
        tags=args.tag or None,
        priority=args.priority,
        confidence=args.confidence,
        expires_at=expires,
        occurred_at=args.occurred_at,
        supersedes=args.supersedes or None,
    )
    answer = answered(client, call)
    if out.as_json:  # 202: {"proposal", "memory"}, as the API answered
        return out.json(answer.body)
    if answer.status == 202:
        out.line(proposal_note(answer.value))
    out.memory(answer.value)
    return None


def cmd_recall(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    options = {
        "category": args.category or None,
        "tag": args.tag,
        "max_chars": args.max_chars,
        "limit": args.limit,
        "query": args.query,
        "after": args.after,
        "before": args.before,
        "now": args.now,
        "tz": args.tz,
        "include_superseded": args.include_superseded,
    }
    if out.as_json:
        return out.json(answered(client, ops.recall_json(**options)).body)
    sys.stdout.write(client.recall(**options).naming("`synapse search`").rstrip("\n") + "\n")
    return None


def cmd_search(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    call = ops.search(
        args.query,
        tag=args.tag,
        category=args.category,
        limit=args.limit,
        mode=args.mode,
        after=args.after,
        before=args.before,
        include_superseded=args.include_superseded,
        now=args.now,
        tz=args.tz,
    )
    answer = answered(client, call)
    if out.as_json:  # {"results", "terms", "mode", "next_cursor"}: one page, as the API answered
        return out.json(answer.body)
    found = answer.value
    for hit in found.items:
        out.line(f"{hit.memory.id}  {hit.memory.category}/{hit.memory.key}  {match(hit)}{hit.snippet}")
    if not found.items:
        read_as = f" for {', '.join(found.terms)}" if found.terms else ""
        print(f"No match{read_as} (a memory stored a moment ago may still be indexing).", file=sys.stderr)
    return None


def match(hit: SearchHit) -> str:
    """`[0.50 coffee, drink ~0.62]  `: a hit's coverage and matched terms, and its similarity in
    meaning when the page was ranked by meaning too, then ` weak` for a hit that is related at best
    ("" from a server without them)."""
    if hit.coverage is None:
        return ""
    terms = f" {', '.join(hit.matched)}" if hit.matched else ""
    similar = f" ~{hit.similarity:.2f}" if hit.similarity is not None else ""
    weak = " weak" if hit.relevance == "weak" else ""
    return f"[{hit.coverage:.2f}{terms}{similar}{weak}]  "


def show_memory(client: Synapse, call: Call[Memory], out: Output) -> None:
    answer = answered(client, call)
    return out.json(answer.body) if out.as_json else out.memory(answer.value)


def cmd_get(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    show_memory(client, ops.get(args.id), out)


def cmd_forget(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    memory_id = args.id
    if not memory_id:
        found = client.find(args.category, args.key)
        if found is None:
            raise SynapseError(
                f"No memory {args.category}/{args.key} in this mind.", status=404, code="not_found"
            )
        memory_id = found.id
    answer = answered(client, ops.forget(memory_id))
    if answer.value is not None:  # 202: an agent's delete of a verified memory is a proposal
        if out.as_json:
            return out.json(answer.body)
        out.line(proposal_note(answer.value))
        out.memory(answer.value)
        return None
    if out.as_json:
        return out.json({"deleted": memory_id})
    out.line(f"forgot {memory_id}")
    return None


def cmd_verify(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    show_memory(client, ops.verify(args.id), out)


def cmd_expiring(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    found = list(client.iter_expiring(within=args.within))
    if out.as_json:
        return out.json(found)
    for memory in found:
        out.line(f"{memory.expires_at}  {memory.id}  {memory.category}/{memory.key}")
    return None


def cmd_minds(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    if args.action == "create":
        answer = answered(client, ops.create_mind(args.name))
        if out.as_json:
            return out.json(answer.body)
        made = answer.value
        out.line(f"created mind {made.mind.id} ({made.mind.name})")
        out.line(f"Mind Key (shown once, keep it): {made.mind_key.key}")
        return None
    minds = list(client.iter_minds())
    if out.as_json:
        return out.json(minds)
    for mind in minds:
        out.line(f"{mind.id}  {mind.memory_count:>7} memories  {mind.name}")
    return None


def cmd_keys(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    mind = args.mind or None
    if args.action == "create":
        answer = answered(client, ops.create_key(mind, label=args.label, scopes=args.scope or None))
        if out.as_json:
            return out.json(answer.body)
        key = answer.value
        out.line(f"created key {key.id} ({key.label})")
        out.line(f"Mind Key (shown once, keep it): {key.key}")
        return None
    if args.action == "revoke":
        if not args.key_id:
            raise SynapseError("keys revoke needs the key's id (see `synapse keys list`).")
        client.revoke_key(args.key_id, mind)
        return out.json({"revoked": args.key_id}) if out.as_json else out.line(f"revoked {args.key_id}")
    keys = list(client.iter_keys(mind))
    if out.as_json:
        return out.json(keys)
    for key in keys:
        scopes = ",".join(key.scopes or [])
        out.line(
            f"{key.id}  {key.prefix or ''}…  {key.label}  {scopes}  last used {key.last_used_at or 'never'}"
        )
    return None


def cmd_export(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    progress = Progress("exported")
    with ExitStack() as stack:
        target = stack.enter_context(open(args.out, "w", encoding="utf-8")) if args.out else sys.stdout
        count = transfer.export(client, target, progress)
    progress.done()
    print(f"exported {count} memories" + (f" to {args.out}" if args.out else ""), file=sys.stderr)


def _resumable(part: Path, state: Path) -> tuple[str | None, int, int]:
    """Where an earlier `synapse backup -o FILE` stopped: its cursor, bytes and lines (or nothing)."""
    try:
        saved = json.loads(state.read_text(encoding="utf-8"))
        cursor, size, lines = str(saved["cursor"]), int(saved["bytes"]), int(saved["lines"])
    except (OSError, ValueError, KeyError, TypeError):
        return None, 0, 0
    if not part.exists() or part.stat().st_size < size:
        return None, 0, 0
    return cursor, size, lines


def cmd_backup(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    progress = Progress("backed up", unit="lines")
    if args.out in (None, "-"):
        lines = backups.backup(client, sys.stdout.buffer, args.mind, progress)
        progress.done()
        print(f"backed up {lines} lines", file=sys.stderr)
        return
    # FILE.part until the trailer is in (a file named FILE is whole); FILE.part.cursor says where
    # the next page starts, so a run stopped part-way goes on from there when run again.
    part, state = Path(f"{args.out}.part"), Path(f"{args.out}.part.cursor")
    cursor, size, done = _resumable(part, state)
    if cursor is not None:
        print(f"going on from line {done + 1} of {part}", file=sys.stderr)

    def saved(next_cursor: str, lines: int) -> None:
        record = {"cursor": next_cursor, "bytes": target.tell(), "lines": lines}
        state.write_text(json.dumps(record), encoding="utf-8")

    with part.open("r+b" if cursor is not None else "wb") as target:
        target.truncate(size)
        target.seek(size)
        lines = backups.backup(client, target, args.mind, progress, cursor=cursor, lines=done, saved=saved)
    os.replace(part, args.out)
    state.unlink(missing_ok=True)
    progress.done()
    print(f"backed up {lines} lines to {args.out}", file=sys.stderr)


NOUNS = {"memory": ("memory", "memories"), "deleted": ("deleted memory", "deleted memories")}


def counted(counts: dict[str, int]) -> str:
    """`5 memories, 1 key`: each kind with its count, in the plural where it is not one; the `mind`
    line is the mind's settings."""
    return ", ".join(
        "the mind's settings" if kind == "mind" else f"{n} {NOUNS.get(kind, (kind, kind + 's'))[n != 1]}"
        for kind, n in counts.items()
    )


def cmd_restore(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    mind = args.mind
    try:
        with open(args.file, "rb") as file:
            backups.check(file)  # before a mind is made for it
    except backups.BrokenBackup as error:
        raise SynapseError(f"{args.file}: {error}") from None
    made = None
    if args.new_mind:
        made = client.create_mind(args.new_mind)
        mind = made.mind.id
        # The new mind's own first key, shown once and at once: a restore that stops must not lose it
        key = "" if out.as_json else f"; its Mind Key (shown once, keep it): {made.mind_key.key}"
        print(f"created mind {mind} ({made.mind.name}){key}", file=sys.stderr)
        print(f"  if this stops, run again with --mind {mind} to go on", file=sys.stderr)
    progress = Progress("restored", unit="lines")
    try:
        status = backups.restore(client, args.file, mind, progress)
    except backups.BrokenBackup as error:
        raise SynapseError(f"{args.file}: {error}") from None
    progress.done()
    restored, listed = backups.outcome(status.counts)
    if out.as_json:
        answer = {**status.model_dump(mode="json"), "restored": restored, "listed": listed}
        if made is not None:
            answer["mind"] = made.mind.model_dump(mode="json")
            answer["mind_key"] = made.mind_key.model_dump(mode="json")
        return out.json(answer)
    into = mind or client.mind_id
    out.line(f"restored backup {status.backup_id} into {into}: {counted(restored) or 'nothing'} (ids kept)")
    if listed:
        out.line(
            f"listed in the backup, not recreated: {counted(listed)} (a backup holds no secrets, and "
            "members stay the restored mind's own: create keys, hooks and webhooks again, e.g. "
            f"synapse keys create --mind {into}; invite people again)"
        )
    return None


def cmd_import(client: Synapse, args: argparse.Namespace, out: Output) -> None:
    if args.verify and client.credentials.token is None:
        raise SynapseError(
            "--verify needs a person's JWT (--token or SYNAPSE_TOKEN): a Mind Key cannot vouch for "
            "memories. Import with the Mind Key without --verify (they arrive unverified), or as the person."
        )
    progress = Progress("imported")
    with ExitStack() as stack:
        if args.source:
            if args.file == "-":
                raise SynapseError(f"--from {args.source} reads a file or folder, not stdin")
            try:
                found = importers.read(args.source, Path(args.file))
            except (ValueError, OSError) as error:
                raise SynapseError(f"{args.file}: {error}") from None
            for warning in found.warnings:
                print(f"  warning: {warning}", file=sys.stderr)
            records: Iterable[dict[str, Any]] = found.records
        else:
            source = sys.stdin if args.file == "-" else stack.enter_context(open(args.file, encoding="utf-8"))
            records = transfer.read_lines(source)
        try:
            report = transfer.import_records(client, records, progress, args.parallel, verify=args.verify)
        except ValueError as error:
            raise SynapseError(f"{args.file}: {error}") from None
    progress.done()
    for record, result in report.errors[:20]:
        reason = result.error.message if result.error else "failed"
        print(f"  failed {record.get('category')}/{record.get('key')}: {reason}", file=sys.stderr)
    if report.lost_verification:
        print(
            f"  note: {report.lost_verification} memories verified in the file arrive unverified: only a"
            " person can vouch (import with a JWT; add --verify for those an agent wrote).",
            file=sys.stderr,
        )
    if report.key_id:
        print(f"  agent-sourced memories were written with key {report.key_id}, now revoked", file=sys.stderr)
    summary = {
        "created": report.created,
        "replaced": report.replaced,
        "unverified": report.unverified,
        "verified": report.verified,
        "proposed": report.proposed,
        "failed": report.failed,
        "skipped_expired": report.skipped_expired,
    }
    if out.as_json:
        out.json(summary)
    else:
        names = {
            "unverified": "kept unverified",
            "verified": "verified by you",
            "skipped_expired": "skipped as expired",
        }
        optional = ("proposed", "verified", "skipped_expired")
        shown = [(name, n) for name, n in summary.items() if n or name not in optional]
        out.line(", ".join(f"{n} {names.get(name, name)}" for name, n in shown))
    if report.failed:
        raise SystemExit(1)


Command = Callable[[Synapse, argparse.Namespace, Output], None]
COMMANDS: dict[str, Command] = {
    "remember": cmd_remember,
    "recall": cmd_recall,
    "search": cmd_search,
    "get": cmd_get,
    "verify": cmd_verify,
    "forget": cmd_forget,
    "expiring": cmd_expiring,
    "minds": cmd_minds,
    "keys": cmd_keys,
    "export": cmd_export,
    "backup": cmd_backup,
    "restore": cmd_restore,
    "import": cmd_import,
}
