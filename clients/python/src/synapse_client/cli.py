"""`synapse`: the command line of the Python client (run `synapse --help`).

Configuration: flags, then SYNAPSE_URL / SYNAPSE_MIND_KEY / SYNAPSE_TOKEN / SYNAPSE_MIND_ID, then
a profile of ~/.config/synapse/config.toml (see `synapse_client.config`). Errors print the message
and the request id on stderr and exit 1 (2 for a usage error). `--json` prints the API's answer as
it came (a list command: every item of every page, as one JSON array).

The commands themselves are in `synapse_client._commands`, imported once the arguments are parsed
and the configuration read: `--help`, a usage error or a missing setting answer without loading
httpx or pydantic.
"""

from __future__ import annotations

import argparse
import importlib
import ipaddress
import os
import sys
from collections.abc import Sequence

from synapse_client import importers, transfer
from synapse_client._vocabulary import CATEGORIES, PRIORITIES
from synapse_client.config import Settings, resolve
from synapse_client.errors import SynapseError

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

    for name, text in (("get", "show one memory"), ("verify", "vouch for a memory (JWT)")):
        p = sub.add_parser(name, help=text)
        p.add_argument("id")

    p = sub.add_parser("forget", help="delete a memory by id, or by --category and --key")
    p.add_argument("id", nargs="?")
    p.add_argument("--category", choices=CATEGORIES)
    p.add_argument("--key")

    p = sub.add_parser("expiring", help="memories expiring soon")
    p.add_argument("--within", default="7d", help="e.g. 30m, 24h, 7d, 2w (default 7d)")

    p = sub.add_parser("minds", help="list or create minds (JWT)")
    p.add_argument("action", choices=("list", "create"))
    p.add_argument("name", nargs="?")

    p = sub.add_parser("keys", help="list, create or revoke a mind's Mind Keys (JWT)")
    p.add_argument("action", choices=("list", "create", "revoke"))
    p.add_argument("key_id", nargs="?", help="the key to revoke")
    p.add_argument("--mind", help="the mind (default: --mind-id / SYNAPSE_MIND_ID)")
    p.add_argument("--label")
    p.add_argument("--scope", action="append", choices=("read", "write", "delete"), help="repeatable")

    p = sub.add_parser("export", help="every memory as JSON Lines (expired ones too)")
    p.add_argument("--out", help="file to write (default: stdout)")

    p = sub.add_parser("backup", help="the mind's whole state as a backup file (JWT; docs/backup.md)")
    p.add_argument("--mind", help="the mind (default: --mind-id / SYNAPSE_MIND_ID)")
    p.add_argument("-o", "--out", help="file to write (default: stdout)")

    p = sub.add_parser("restore", help="a backup file into a new or empty mind, exactly (JWT; resumes)")
    p.add_argument("file", help="the backup file")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--mind", help="an empty mind to restore into (default: --mind-id / SYNAPSE_MIND_ID)")
    where.add_argument("--new-mind", metavar="NAME", help="create a mind of this name and restore into it")

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


def _import_httpx_without_its_cli() -> None:
    """Import httpx without `httpx._main`, its own command line, which it imports whenever click and
    rich are installed (a third of its import time); `synapse` never runs it. The stand-in is removed
    at once, so a later `import httpx._main` in this process still works."""
    if "httpx" in sys.modules:
        return
    sys.modules["httpx._main"] = None  # type: ignore[assignment]  # None: import it as missing
    try:
        importlib.import_module("httpx")
    finally:
        del sys.modules["httpx._main"]


def main(argv: Sequence[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)
    _check_usage(top, args)
    flags = {"url": args.url, "mind_key": args.mind_key, "token": args.token, "mind_id": args.mind_id}
    try:
        settings = resolve(flags, profile=args.profile)
        _import_httpx_without_its_cli()
        if args.command == "mcp":
            cmd_mcp(settings, args)
            return 0
        from synapse_client import _commands  # here, not above: what only a command needs

        with settings.client(args.timeout) as client:
            _commands.COMMANDS[args.command](client, args, _commands.Output(args.json))
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
