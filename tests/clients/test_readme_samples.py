"""README's walk-through, run as written (its curl and jq lines, in bash) against a real `make run`:
every sample answer its comments show (`# {"mind":{…},…}`) must have the keys and values of the
answer the command really got.

A sample is JSON with `…` for what it leaves out: a bare `…` member stands for keys not shown, a
bare `…` value for any value, a string with `…` in it for any string (ids, timestamps). An object
without a `…` member must show every key of the real answer; a value shown in full must be the real
one. Status lines (`# HTTP/1.1 201 Created`), headers and the status before a body (`# 412 {…}`)
are not compared.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.support.runner import ROOT, RunningService

README = ROOT / "README.md"
WALK_THROUGH = "## Walk-through with curl"
ELLIPSIS = "…"
MARK = "@@readme-command@@"

# ---------------------------------------------------------------- the README's commands and samples


@dataclass
class Step:
    command: str  # one shell command, continuation lines joined
    samples: list[str] = field(default_factory=list)  # the JSON-ish sample answers shown after it


_SAMPLE_START = re.compile(r"^(?:\d{3} )?([{\[].*)$")
_SETUP = re.compile(r"^export (BASE|JWT)=")


def walk_through_steps(text: str) -> list[Step]:
    """The commands of the walk-through's sh blocks, each with its sample answers. The setup lines
    (`export BASE=…`, `export JWT=…`) are left out: the test sets both."""
    section = text.split(WALK_THROUGH, 1)[1].split("\n## ", 1)[0]
    steps: list[Step] = []
    for block in re.findall(r"^```sh\n(.*?)^```", section, re.MULTILINE | re.DOTALL):
        lines = block.splitlines()
        index = 0
        while index < len(lines):
            line = lines[index]
            index += 1
            if line.startswith("#"):
                sample = line[1:].strip()
                started = _SAMPLE_START.match(sample)
                if started and steps:
                    steps[-1].samples.append(started.group(1))
                elif line.startswith("#  ") and steps and steps[-1].samples:  # a sample's next line
                    steps[-1].samples[-1] += sample
                continue
            command = line
            while command.endswith("\\") and index < len(lines):
                command = command[:-1] + " " + lines[index].strip()
                index += 1
            command = command.split("  #", 1)[0].rstrip()  # a trailing comment
            if command and not _SETUP.match(command):
                steps.append(Step(command))
    return steps


# ---------------------------------------------------------------- samples: JSON with …


class Elided:
    """A bare `…` value: any value."""


@dataclass
class Shown:
    """A sample object: the members it shows; `elided` when a `…` member stands for more."""

    members: dict[str, Any]
    elided: bool


class AnyString:
    """A string with `…` in it: any string."""


_TOKEN = re.compile(r'\s*("(?:[^"\\]|\\.)*"|…|[{}\[\]:,]|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null)')


def parse_sample(text: str) -> Any:
    tokens: list[str] = []
    at = 0
    while at < len(text.rstrip()):
        found = _TOKEN.match(text, at)
        assert found, f"not a JSON-ish sample at {text[at : at + 30]!r}: {text}"
        tokens.append(found.group(1))
        at = found.end()
    value, rest = _value(tokens)
    assert not rest, f"left over {rest} in {text}"
    return value


def _value(tokens: list[str]) -> tuple[Any, list[str]]:
    head, rest = tokens[0], tokens[1:]
    if head == ELLIPSIS:
        return Elided(), rest
    if head == "{":
        members: dict[str, Any] = {}
        elided = False
        while rest[0] != "}":
            if rest[0] == ELLIPSIS:
                elided, rest = True, rest[1:]
            else:
                name = json.loads(rest[0])
                assert rest[1] == ":", rest
                members[name], rest = _value(rest[2:])
            if rest[0] == ",":
                rest = rest[1:]
        return Shown(members, elided), rest[1:]
    if head == "[":
        items: list[Any] = []
        while rest[0] != "]":
            item, rest = _value(rest)
            items.append(item)
            if rest[0] == ",":
                rest = rest[1:]
        return items, rest[1:]
    scalar = json.loads(head)
    return (AnyString() if isinstance(scalar, str) and ELLIPSIS in scalar else scalar), rest


def differences(sample: Any, real: Any, where: str = "$") -> list[str]:
    """How the real answer differs from what the sample shows (empty: it matches)."""
    if isinstance(sample, Elided):
        return []
    if isinstance(sample, AnyString):
        return [] if isinstance(real, str) else [f"{where}: a string in the sample, {real!r} really"]
    if isinstance(sample, Shown):
        if not isinstance(real, dict):
            return [f"{where}: an object in the sample, {real!r} really"]
        found = [f"{where}.{name}: in the sample, not in the answer" for name in sample.members.keys() - real]
        if not sample.elided:
            found += [
                f"{where}.{name}: in the answer, not in the sample" for name in real.keys() - sample.members
            ]
        for name, value in sample.members.items():
            if name in real:
                found += differences(value, real[name], f"{where}.{name}")
        return found
    if isinstance(sample, list):
        if not isinstance(real, list) or len(real) != len(sample):
            return [f"{where}: {len(sample)} items in the sample, {real!r} really"]
        return [
            line
            for index, item in enumerate(sample)
            for line in differences(item, real[index], f"{where}[{index}]")
        ]
    return [] if sample == real else [f"{where}: {sample!r} in the sample, {real!r} really"]


# ---------------------------------------------------------------- running them

JQ_STAND_IN = '''#!{python}
"""jq -r .a.b FILE, all the walk-through asks of jq (this machine has no jq)."""
import json, sys
args = [a for a in sys.argv[1:] if a != "-r"]
value = json.load(open(args[1], encoding="utf-8"))
for part in args[0].strip(".").split("."):
    value = value[part]
print(value if isinstance(value, str) else json.dumps(value))
'''


def run_walk_through(steps: list[Step], runner: RunningService, folder: Path) -> list[str]:
    """Run every step in one bash, as a reader pastes them; each step's standard output."""
    script = "".join(f"printf '\\n{MARK}\\n'\n{step.command}\n" for step in steps)
    env = {k: v for k, v in os.environ.items() if k not in {"BASE", "JWT", "MIND_ID", "MIND_KEY", "MEM_ID"}}
    env |= {"BASE": runner.url, "JWT": runner.jwt}
    if shutil.which("jq") is None:
        stand_in = folder / "bin" / "jq"
        stand_in.parent.mkdir()
        stand_in.write_text(JQ_STAND_IN.format(python=sys.executable), encoding="utf-8")
        stand_in.chmod(0o755)
        env["PATH"] = f"{stand_in.parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(  # noqa: S603 — README's own commands against the test's runner
        ["bash", "-c", script],  # noqa: S607
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    outputs = done.stdout.split(f"\n{MARK}\n")[1:]
    assert len(outputs) == len(steps), done.stdout
    return outputs


def last_json(output: str) -> Any:
    """The answer's body: the last line of the output (`curl -i` prints the headers first)."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    assert lines, "the command printed nothing"
    return json.loads(lines[-1])


# ---------------------------------------------------------------- tests


def test_the_sample_reader_tells_what_a_sample_leaves_out() -> None:
    # A bare … member allows more keys; without one, every key must be shown; a value with … is any string
    sample = parse_sample('{"mind":{"id":"m_y8…",…,"n":0},"key":{"id":"k…","scopes":["read"]}}')
    real = {"mind": {"id": "m_1", "name": "x", "n": 0}, "key": {"id": "k1", "scopes": ["read"], "label": "d"}}
    assert differences(sample, real) == ["$.key.label: in the answer, not in the sample"]
    assert differences(
        parse_sample('{"memories":[{…}],"next_cursor":null}'), {"memories": [{}], "next_cursor": "c"}
    ) == ["$.next_cursor: None in the sample, 'c' really"]
    assert differences(parse_sample('{…,"version":3,…}'), {"version": 3, "id": "m"}) == []


def test_readme_walk_through_samples_match_the_real_answers(runner: RunningService, tmp_path: Path) -> None:
    if shutil.which("curl") is None:
        pytest.skip("the README's walk-through needs curl")
    # Given the walk-through's commands, with the answers README shows for them
    steps = walk_through_steps(README.read_text(encoding="utf-8"))
    shown = [step for step in steps if step.samples]
    assert len(shown) >= 8, [step.command for step in steps]
    assert steps[0].command.startswith("curl -s -X POST $BASE/minds"), steps[0]
    # When they run, in order, in one shell, against the runner
    outputs = run_walk_through(steps, runner, tmp_path)
    # Then each sample has the keys and values of the real answer
    wrong: list[str] = []
    for step, output in zip(steps, outputs, strict=True):
        for sample in step.samples:
            found = differences(parse_sample(sample), last_json(output))
            wrong += [f"{step.command[:60]}…  {line}" for line in found]
    assert wrong == [], "\n".join(wrong)
    # (step 1, the mind and its first Mind Key, shows every key but the mind's timestamps)
    mind = json.loads((tmp_path / "mind.json").read_text(encoding="utf-8"))
    first = parse_sample(steps[0].samples[0])
    assert not first.members["mind_key"].elided
    assert mind["mind"].keys() - first.members["mind"].members.keys() <= {"created_at", "updated_at"}
