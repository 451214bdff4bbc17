"""The docs stay true to the repository: links resolve, every route is documented, the README stays
short, and every `make` target they tell you to run exists. Pure file reading, no network."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from infra import template

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAKEFILE = ROOT / "Makefile"
README_MAX_BYTES = 13_500  # 12,500 until the rules page and hybrid search earned a line each

_FENCE = re.compile(r"^\s*(```|~~~)")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_MAKE = re.compile(r"(?<![\w./-])make\s+([A-Za-z0-9_][\w.-]*)")
_MAKE_SPAN = re.compile(r"(\S+=\S+\s+)*make\s")
_TARGET = re.compile(r"^([A-Za-z0-9_.][\w.\- ]*?)\s*::?(?!=)")


def doc_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def doc_ids() -> list[str]:
    return [str(path.relative_to(ROOT)) for path in doc_files()]


@cache
def split(path: Path) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(prose lines, fenced blocks as (info string, lines)) of one Markdown file."""
    prose: list[str] = []
    blocks: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        opened = _FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            blocks.append((line.strip()[3:].strip().lower(), []))
        elif fence is not None and line.strip().startswith(fence):
            fence = None
        elif fence is not None:
            blocks[-1][1].append(line)
        else:
            prose.append(line)
    return prose, blocks


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: formatting and punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    prose, _ = split(path)
    seen: Counter[str] = Counter()
    found = set()
    for line in prose:
        match = _HEADING.match(line)
        if not match:
            continue
        slug = github_slug(match.group(2))
        found.add(slug if not seen[slug] else f"{slug}-{seen[slug]}")
        seen[slug] += 1
    return frozenset(found)


def links(path: Path) -> list[str]:
    """Link targets in prose (code blocks and code spans hold examples, not links)."""
    prose, _ = split(path)
    return [target for line in prose for target in _LINK.findall(_CODE_SPAN.sub("", line))]


def make_targets() -> set[str]:
    targets: set[str] = set()
    for line in MAKEFILE.read_text(encoding="utf-8").splitlines():
        if line.startswith((".PHONY", "\t", "#")) or "=" in line.split(":", 1)[0]:
            if line.startswith(".PHONY"):
                targets.update(line.split(":", 1)[1].split())
            continue
        match = _TARGET.match(line)
        if match:
            targets.update(match.group(1).split())
    return targets


def make_calls(path: Path) -> list[str]:
    """Every `make X` in the file's sh blocks and in code spans that start with `make`."""
    prose, blocks = split(path)
    shell = [body for info, body in blocks if info in {"sh", "bash", "shell"}]
    lines = [line.split("#", 1)[0] for body in shell for line in body]  # comments are not commands
    spans = [span for line in prose for _, span in _CODE_SPAN.findall(line)]
    lines += [span for span in spans if _MAKE_SPAN.match(span)]
    return [target for line in lines for target in _MAKE.findall(line)]


# ---------------------------------------------------------------- links


@pytest.mark.parametrize("path", doc_files(), ids=doc_ids())
def test_every_relative_link_resolves(path: Path) -> None:
    # Given the links of one page, leaving out absolute URLs (checking those would need the network)
    relative = [target for target in links(path) if not _SCHEME.match(target)]

    # When each is resolved against the page's folder
    broken = []
    for target in relative:
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        # Then it names a file inside the repository, and a heading of it when an anchor is given
        if not linked.is_relative_to(ROOT) or not linked.exists():
            broken.append(f"{target}: no such file in the repository")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading '#{anchor}' in {linked.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("path", doc_files(), ids=doc_ids())
def test_the_docs_stand_alone(path: Path) -> None:
    # Given one page, Then it points at nothing a clone lacks: no folder beside the repository, no
    # rules document kept outside it (the product rules are docs/rules.md, the design architecture.md)
    text = path.read_text(encoding="utf-8")
    assert not re.findall(r"\.\./shared|SPEC\.md|DESIGN\.md|\bSPEC\b", text), path.relative_to(ROOT)


def test_link_checker_sees_links_and_headings() -> None:
    # Given the README, which links every docs page and one heading
    # When its links and the headings of docs/api.md are read
    targets = links(README)

    # Then the parser found them (an empty parse would pass every other test vacuously)
    assert "docs/api.md" in targets
    assert "data-model" in anchors(DOCS / "api.md")
    assert github_slug("Sample events and `sam local invoke`") == "sample-events-and-sam-local-invoke"


def test_readme_links_every_docs_page() -> None:
    # Given the pages under docs/
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}

    # When the README's link targets are read, anchors dropped
    linked = {target.partition("#")[0] for target in links(README)}

    # Then every page can be reached from the README
    assert pages, "docs/ has no pages"
    assert not pages - linked, f"not linked from README.md: {sorted(pages - linked)}"


# ---------------------------------------------------------------- size


def test_readme_stays_short() -> None:
    # Given the README, the front page: what Synapse is, two commands, a curl tour, links
    # When its size is measured in bytes
    size = len(README.read_bytes())

    # Then it stays within budget; details belong in docs/
    assert size <= README_MAX_BYTES, f"README.md: {size} bytes, over {README_MAX_BYTES}; move detail to docs/"


# ---------------------------------------------------------------- routes


def test_every_route_is_documented() -> None:
    # Given every HttpApi route template.yaml declares (read the way the local runner reads them)
    routes = {route.route_key for route in template.routes()}

    # When the API and webhook reference pages are read
    text = (DOCS / "api.md").read_text(encoding="utf-8") + (DOCS / "webhooks.md").read_text(encoding="utf-8")

    # Then each route appears there as "METHOD /path"
    assert routes, "template.yaml declares no routes"
    missing = sorted(key for key in routes if key not in text)
    assert not missing, f"routes missing from docs/api.md and docs/webhooks.md: {missing}"


# ---------------------------------------------------------------- make targets


@pytest.mark.parametrize("path", doc_files(), ids=doc_ids())
def test_make_targets_named_in_docs_exist(path: Path) -> None:
    # Given the Makefile's targets
    known = make_targets()

    # When the page's shell blocks and `make …` spans name targets
    named = make_calls(path)

    # Then each one exists
    unknown = sorted(set(named) - known)
    assert not unknown, f"{path.relative_to(ROOT)} names make targets the Makefile lacks: {unknown}"


def test_make_parsers_see_targets() -> None:
    # Given the Makefile and the README's "Two commands" block
    # When both are parsed
    targets = make_targets()
    called = make_calls(README)

    # Then the two commands are found on both sides, and a variable assignment is not a target
    assert {"run", "test"} <= targets
    assert {"VENV", "STAMP", "PYTHON"}.isdisjoint(targets)
    assert {"run", "test"} <= set(called)
