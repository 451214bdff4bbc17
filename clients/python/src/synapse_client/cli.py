"""`synapse`: the command line of the Python client (run `synapse --help`).

Configuration: flags, then SYNAPSE_URL / SYNAPSE_MIND_KEY / SYNAPSE_TOKEN / SYNAPSE_MIND_ID, then
a profile of ~/.config/synapse/config.toml (see `synapse_client.config`). Errors print the message
and the request id on stderr and exit 1 (2 for a usage error). `--json` prints the API's answer as
it came (a list command: every item of every page, as one JSON array).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
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
from synapse_client.client import Synapse
from synapse_client.config import Settings, resolve
from synapse_client.errors import SynapseError
from synapse_client.models import CATEGORIES, PRIORITIES, Memory, SearchHit

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


_SEVERAL_MINDS = "You are a member of several minds"
MIND_ID_HINT = "with --mind-id ID or SYNAPSE_MIND_ID (`synapse minds list` shows the ids)"


def explain(error: SynapseError) -> str:
    """An error's message in the CLI's terms: where the server (or the client library) tells a person
    to name the mind with the X-Mind-Id header or `mind_id=`, say which flag or variable does it."""
    if error.code == "mind_id_required":
        return f"This command needs a mind: name it {MIND_ID_HINT}."
    if error.status == 400 and error.message.startswith(_SEVERAL_MINDS):
        return f"{_SEVERAL_MINDS}: name one {MIND_ID_HINT}."
    return error.message


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


def remembered_fields(fields: list[str]) -> tuple[str | None, str | None, str]:
    """`remember CONTENT` or `remember CATEGORY KEY CONTENT`: content alone is a note whose key the
    server derives from it, so the same text twice is one memory."""
    if len(fields) == 1:
        return None, None, fields[0]
    if len(fields) == 3 and fields[0] in CATEGORIES:
        return fields[0], fields[1], fields[2]
    if len(fields) == 3:
        raise ValueError(f"remember: category must be one of {', '.join(CATEGORIES)}, not {fields[0]!r}")
    raise ValueError("remember: give CONTENT alone, or CATEGORY KEY CONTENT (quote content with spaces)")


def add_window(parser: argparse.ArgumentParser) -> None:
    """`--after` / `--before`: a time window on each memory's occurred_at, else when it was stored."""
    parser.add_argument(
        "--after", metavar="WHEN", help="from this date (2026-12-01) or timestamp with a zone on"
    )
    parser.add_argument("--before", metavar="WHEN", help="up to this date (its whole day) or timestamp")


def add_clock(parser: argparse.ArgumentParser) -> None:
    """`--now` / `--tz`: the asker's clock, which time words ("next week") and "Coming up" count from."""
    parser.add_argument(
        "--now", metavar="WHEN", help="read time words as of this date (2026-12-03) or timestamp with a zone"
    )
    parser.add_argument("--tz", metavar="ZONE", help="your IANA time zone, e.g. Europe/Berlin (default UTC)")


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


def cmd_mcp(settings: Settings, args: argparse.Namespace) -> None:
    try:
        from synapse_client import mcp_server
    except ImportError as error:
        raise SynapseError(
            f"synapse mcp needs the mcp extra: pip install 'synapse-client[mcp]' ({error})"
        ) from None
    if args.http is not None and not is_loopback(args.host):
        print(
            f"synapse mcp: serving on {args.host}:{args.http} (--allow-remote): anyone who reaches it "
            "acts with this Mind Key",
            file=sys.stderr,
        )
    host = args.host.strip().removeprefix("[").removesuffix("]")  # [::1] as a URL writes it
    mcp_server.serve(settings, http_port=args.http, host=host)


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine: localhost, 127.0.0.0/8 or ::1 (brackets allowed)."""
    name = host.strip().lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False  # another host name may resolve to any interface


# ---------------------------------------------------------------- parser


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="synapse", description="Remember and recall with Synapse.", allow_abbrev=False
    )
    top.add_argument("--url", help="the API's base URL (env SYNAPSE_URL)")
    top.add_argument("--mind-key", help="an agent's Mind Key (env SYNAPSE_MIND_KEY)")
    top.add_argument("--token", help="a person's JWT (env SYNAPSE_TOKEN)")
    top.add_argument("--mind-id", help="the mind a person addresses (env SYNAPSE_MIND_ID)")
    top.add_argument("--profile", help="a profile of ~/.config/synapse/config.toml (default: [default])")
    top.add_argument(
        "--json", action="store_true", help="print the API's JSON answer as is (lists: every page's items)"
    )
    top.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for an answer (default 60)")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "remember",
        help="store a memory (replaces the one with the same category and key)",
        usage="synapse remember [options] [CATEGORY KEY] CONTENT",
        description="Store CONTENT alone (a note, keyed by its words: the same text twice is one memory), "
        f"or with a CATEGORY ({', '.join(CATEGORIES)}) and a stable snake_case KEY, e.g. home_city.",
    )
    p.add_argument("fields", nargs="+", metavar="[CATEGORY KEY] CONTENT")
    p.add_argument("--tag", action="append", help="repeatable")
    p.add_argument("--priority", choices=PRIORITIES)
    p.add_argument("--confidence", type=float)
    p.add_argument("--expires", help="ISO 8601 timestamp, or from now: 30m, 24h, 7d, 2w")
    p.add_argument(
        "--occurred-at",
        metavar="WHEN",
        help="when it happened or was said, if not now: a date 2026-12-09, or a timestamp with a zone",
    )
    p.add_argument(
        "--supersedes",
        action="append",
        metavar="ID",
        help="the id of an older memory this one replaces (kept, out of recall and search); repeatable",
    )
    p.set_defaults(run=cmd_remember)

    p = sub.add_parser("recall", help="print the recall text an agent loads into its context")
    p.add_argument("--category", action="append", choices=CATEGORIES, help="repeatable")
    p.add_argument("--tag")
    p.add_argument("--max-chars", type=int)
    p.add_argument("--limit", type=int)
    p.add_argument(
        "-q",
        "--query",
        metavar="TEXT",
        help="the user's message or the task (at most 1000 characters): "
        "the memories most relevant to it come right after the critical ones",
    )
    add_window(p)
    add_clock(p)
    p.add_argument(
        "--include-superseded", action="store_true", help="also memories a newer one replaced (marked)"
    )
    p.set_defaults(run=cmd_recall)

    p = sub.add_parser(
        "search",
        help="find memories by a question or keywords",
        description="Search by words and meaning, best match first. Each line: id, category/key, "
        "[coverage matched terms ~similarity, weak when related at best], then the snippet (matches in "
        "**bold**). No hit but weak ones: the memories most likely do not hold the answer.",
    )
    p.add_argument(
        "query",
        help='a question ("What coffee does he drink?") or keywords: stop words are ignored, '
        "inflections match, memories matching more terms rank first. Exact operators: "
        '"a phrase", prefix*, AND, OR, NOT, ( ), +required',
    )
    p.add_argument("--tag")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument(
        "--mode",
        choices=("hybrid", "lexical", "semantic"),
        help="hybrid (default): words and meaning; lexical: words only; semantic: meaning only",
    )
    add_window(p)
    add_clock(p)
    p.add_argument(
        "--include-superseded", action="store_true", help="also memories a newer one replaced (marked)"
    )
    p.set_defaults(run=cmd_search)

    for name, run, text in (
        ("get", cmd_get, "show one memory"),
        ("verify", cmd_verify, "vouch for a memory (JWT)"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("id")
        p.set_defaults(run=run)

    p = sub.add_parser("forget", help="delete a memory by id, or by --category and --key")
    p.add_argument("id", nargs="?")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--key")
    p.set_defaults(run=cmd_forget)

    p = sub.add_parser("expiring", help="memories expiring soon")
    p.add_argument("--within", default="7d", help="e.g. 30m, 24h, 7d, 2w (default 7d)")
    p.set_defaults(run=cmd_expiring)

    p = sub.add_parser("minds", help="list or create minds (JWT)")
    p.add_argument("action", choices=("list", "create"))
    p.add_argument("name", nargs="?")
    p.set_defaults(run=cmd_minds)

    p = sub.add_parser("keys", help="list, create or revoke a mind's Mind Keys (JWT)")
    p.add_argument("action", choices=("list", "create", "revoke"))
    p.add_argument("key_id", nargs="?", help="the key to revoke")
    p.add_argument("--mind", help="the mind (default: --mind-id / SYNAPSE_MIND_ID)")
    p.add_argument("--label")
    p.add_argument("--scope", action="append", choices=("read", "write", "delete"), help="repeatable")
    p.set_defaults(run=cmd_keys)

    p = sub.add_parser("export", help="every memory as JSON Lines (expired ones too)")
    p.add_argument("--out", help="file to write (default: stdout)")
    p.set_defaults(run=cmd_export)

    p = sub.add_parser("backup", help="the mind's whole state as a backup file (JWT; docs/backup.md)")
    p.add_argument("--mind", help="the mind (default: --mind-id / SYNAPSE_MIND_ID)")
    p.add_argument("-o", "--out", help="file to write (default: stdout)")
    p.set_defaults(run=cmd_backup)

    p = sub.add_parser("restore", help="a backup file into a new or empty mind, exactly (JWT; resumes)")
    p.add_argument("file", help="the backup file")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--mind", help="an empty mind to restore into (default: --mind-id / SYNAPSE_MIND_ID)")
    where.add_argument("--new-mind", metavar="NAME", help="create a mind of this name and restore into it")
    p.set_defaults(run=cmd_restore)

    p = sub.add_parser(
        "import",
        help="store the memories of an export, or of another tool (--from), by category and key",
        description="Agent-sourced memories (and every other tool's) arrive as an agent's, unverified; "
        "with a person's JWT, their own verified memories stay verified. Records already expired are "
        "skipped and counted (a backup keeps them: synapse backup). See docs/importing.md.",
    )
    p.add_argument("file", help="the export file, or - for stdin; with --from, the tool's file or folder")
    p.add_argument("--from", dest="source", choices=importers.FORMATS, help="read another tool's format")
    p.add_argument(
        "--verify",
        action="store_true",
        help="(JWT) vouch for the agent-sourced memories too: each is verified by you, as the history says",
    )
    p.add_argument(
        "--parallel",
        type=int,
        default=transfer.PARALLEL,
        help="batch requests in flight (default 1, which keeps the file's order)",
    )
    p.set_defaults(run=cmd_import)

    p = sub.add_parser("mcp", help="serve the Model Context Protocol (stdio, or --http PORT)")
    p.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port instead")
    p.add_argument(
        "--host", default="127.0.0.1", help="with --http: the address to listen on (loopback by default)"
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --http: allow a --host other than loopback (it serves with the Mind Key it holds)",
    )
    p.set_defaults(run=None)
    return top


def _check_usage(top: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.command == "remember":
        try:
            remembered_fields(args.fields)
        except ValueError as error:
            top.error(str(error))
    if args.command == "forget" and not args.id and not (args.category and args.key):
        top.error("forget needs an ID, or both --category and --key")
    if args.command == "minds" and args.action == "create" and not args.name:
        top.error("minds create needs a NAME")
    remote = args.command == "mcp" and args.http is not None and not is_loopback(args.host)
    if remote and not args.allow_remote:
        top.error(
            f"mcp --http: --host {args.host} is not a loopback address. This server acts with the "
            "Mind Key it holds, so anyone who can reach it could read and change the mind; pass "
            "--allow-remote to listen there anyway (behind TLS and your own authentication)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)
    _check_usage(top, args)
    flags = {"url": args.url, "mind_key": args.mind_key, "token": args.token, "mind_id": args.mind_id}
    try:
        settings = resolve(flags, profile=args.profile)
        if args.command == "mcp":
            cmd_mcp(settings, args)
            return 0
        run: Callable[[Synapse, argparse.Namespace, Output], None] = args.run
        with settings.client(args.timeout) as client:
            run(client, args, Output(args.json))
    except SynapseError as error:
        print(f"synapse: {explain(error)}", file=sys.stderr)
        if error.request_id:
            print(f"  (status {error.status} {error.code}, request id {error.request_id})", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `synapse export | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as error:
        print(f"synapse: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
