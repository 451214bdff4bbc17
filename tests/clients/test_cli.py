"""The installed `synapse` console script, run as a subprocess against a real `make run`."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import httpx
from synapse.memory.keys import derived_key

from tests.clients.conftest import MindClients, new_mind, recording_front, run_cli
from tests.support.runner import RunningService


def api_json(runner: RunningService, mind: MindClients, method: str, path: str, **options: Any) -> Any:
    """What the API itself answers the mind's agent (its JSON, as sent)."""
    headers = {"Authorization": f"Bearer {mind.key}"}
    answer = httpx.request(method, runner.url + path, headers=headers, timeout=30, **options)
    assert answer.is_success, answer.text
    return answer.json()


def agent_env(runner: RunningService, mind: MindClients) -> dict[str, str]:
    return {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}


def person_env(runner: RunningService, mind_id: str | None = None) -> dict[str, str]:
    env = {"SYNAPSE_URL": runner.url, "SYNAPSE_TOKEN": runner.jwt}
    return env | ({"SYNAPSE_MIND_ID": mind_id} if mind_id else {})


def test_remember_get_recall_search_and_forget(runner: RunningService, mind: MindClients) -> None:
    env = agent_env(runner, mind)
    # When an agent remembers through the CLI
    stored = run_cli(
        "--json", "remember", "preference", "editor", "Uses Neovim", "--tag", "tools", "--priority", "high",
        "--expires", "2d", env=env,
    )  # fmt: skip
    assert stored.returncode == 0, stored.stderr
    memory = json.loads(stored.stdout)
    assert (memory["key"], memory["tags"], memory["priority"], memory["version"]) == (
        "editor",
        ["tools"],
        "high",
        1,
    )
    assert memory["expires_at"] > "2026"
    # Then get, recall and search show it
    shown = run_cli("get", memory["id"], env=env)
    assert shown.returncode == 0 and "preference/editor" in shown.stdout and "Uses Neovim" in shown.stdout
    recalled = run_cli("recall", "--category", "preference", env=env)
    assert recalled.returncode == 0 and recalled.stdout.startswith("Mind: Client test\n")
    assert "Uses Neovim" in recalled.stdout
    assert json.loads(run_cli("--json", "recall", env=env).stdout)["total"] == 1
    wait_until_indexed(mind, "neovim", "editor")  # through the client: a CLI start per poll costs ~1 s
    found = run_cli("search", "neovim", env=env)
    assert memory["id"] in found.stdout, found.stdout
    assert found.returncode == 0 and "**Neovim**" in found.stdout, found.stderr
    assert (
        json.loads(run_cli("--json", "expiring", "--within", "3d", env=env).stdout)[0]["id"] == memory["id"]
    )
    # And forget by category and key deletes it
    forgot = run_cli("forget", "--category", "preference", "--key", "editor", env=env)
    assert forgot.returncode == 0 and forgot.stdout.strip() == f"forgot {memory['id']}"
    gone = run_cli("get", memory["id"], env=env)
    assert gone.returncode == 1 and "No memory" in gone.stderr and "request id" in gone.stderr


def test_remember_takes_content_alone_as_mcp_does(runner: RunningService, mind: MindClients) -> None:
    # Given an agent's CLI
    env = agent_env(runner, mind)
    # When it remembers a sentence with nothing else, twice
    first = json.loads(run_cli("--json", "remember", "I like tea", env=env).stdout)
    again = json.loads(run_cli("--json", "remember", "I  like TEA", env=env).stdout)
    # Then it is one note, keyed by its words as the server keys content alone (the CLI sends no key)
    assert (first["category"], first["key"]) == ("note", derived_key("note", "I like tea"))
    assert first["key"].startswith("like_tea_")
    assert again["id"] == first["id"] and again["version"] == 2


def test_errors_print_the_message_and_request_id_and_exit_non_zero(
    runner: RunningService, mind: MindClients
) -> None:
    env = agent_env(runner, mind)
    refused = run_cli("remember", "fact", "Bad Key", "x", env=env)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "synapse: key: must be lowercase snake_case" in refused.stderr
    assert "status 422 validation_error, request id " in refused.stderr
    # A Mind Key may not verify
    stored = json.loads(run_cli("--json", "remember", "fact", "k", "c", env=env).stdout)
    assert run_cli("verify", stored["id"], env=env).returncode == 1
    # Usage errors are argparse's (exit 2); missing configuration is explained
    assert run_cli("remember", "fact", "Bad Key", env=env).returncode == 2
    assert "category must be one of" in run_cli("remember", "facts", "k", "c", env=env).stderr
    assert run_cli("forget", env=env).returncode == 2
    missing = run_cli("recall", env={})
    assert missing.returncode == 1 and "No Synapse URL" in missing.stderr
    unauthenticated = run_cli("recall", env={"SYNAPSE_URL": runner.url})
    assert unauthenticated.returncode == 1 and "No credential" in unauthenticated.stderr
    # forget by id works too
    assert run_cli("forget", stored["id"], env=env).returncode == 0


def test_a_person_verifies_and_manages_minds_and_keys(runner: RunningService, mind: MindClients) -> None:
    env = person_env(runner, mind.id)
    stored = mind.agent.remember("fact", "home_city", "Berlin")
    verified = run_cli("--json", "verify", stored.id, env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["verified"] is True
    # minds
    created = run_cli("--json", "minds", "create", "CLI mind", env=person_env(runner))
    assert created.returncode == 0, created.stderr
    made = json.loads(created.stdout)
    assert made["mind_key"]["key"].startswith("mk_")
    listed = run_cli("minds", "list", env=person_env(runner))
    assert made["mind"]["id"] in listed.stdout and "CLI mind" in listed.stdout
    # keys of the configured mind: create, list, revoke
    key = json.loads(run_cli("--json", "keys", "create", "--label", "ci", "--scope", "read", env=env).stdout)
    assert key["key"].startswith("mk_") and key["scopes"] == ["read"]
    keys = run_cli("keys", "list", env=env)
    assert key["id"] in keys.stdout and "ci" in keys.stdout
    assert run_cli("keys", "revoke", key["id"], env=env).returncode == 0
    assert key["id"] not in run_cli("keys", "list", env=env).stdout
    # keys of another mind, named with --mind
    other = run_cli("--json", "keys", "list", "--mind", made["mind"]["id"], env=person_env(runner))
    assert [k["id"] for k in json.loads(other.stdout)] == [made["mind_key"]["id"]]


def test_flags_beat_the_environment_which_beats_the_profile_file(
    runner: RunningService, mind: MindClients, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        f'[default]\nurl = "{runner.url}"\nmind_key = "{mind.key}"\n\n'
        f'[broken]\nurl = "http://127.0.0.1:9"\nmind_key = "mk_nope"\n',
        encoding="utf-8",
    )
    mind.agent.remember("fact", "where", "from the profile")
    files = {"SYNAPSE_CONFIG": str(config)}
    # The profile file alone is enough
    assert "from the profile" in run_cli("recall", env=files).stdout
    # A named profile is used when asked for; the environment beats it; a flag beats the environment
    assert run_cli("--profile", "broken", "recall", env=files).returncode == 1
    env_wins = run_cli(
        "--profile", "broken", "recall", env=files | {"SYNAPSE_URL": runner.url, "SYNAPSE_MIND_KEY": mind.key}
    )
    assert "from the profile" in env_wins.stdout, env_wins.stderr
    bad_env = files | {"SYNAPSE_URL": "http://127.0.0.1:9", "SYNAPSE_MIND_KEY": "mk_nope"}
    flag_wins = run_cli("--url", runner.url, "--mind-key", mind.key, "recall", env=bad_env)
    assert "from the profile" in flag_wins.stdout, flag_wins.stderr
    # A token in the environment is not paired with the profile's Mind Key
    person = run_cli("--json", "minds", "list", env=files | {"SYNAPSE_TOKEN": runner.jwt})
    assert person.returncode == 0, person.stderr
    assert run_cli("--profile", "nope", "recall", env=files).returncode == 1


def wait_until_indexed(mind: MindClients, word: str, key: str) -> None:
    deadline = time.monotonic() + 20
    while key not in [hit.memory.key for hit in mind.agent.search(word).items]:
        assert time.monotonic() < deadline, f"{key} was not indexed"
        time.sleep(0.3)


def test_recall_for_a_message_sends_it_as_q(runner: RunningService, mind: MindClients) -> None:
    # Given a mind whose coffee memory is indexed
    mind.agent.remember("identity", "user_name", "Ada", priority="critical")
    mind.agent.remember("fact", "home_city", "Lives in London", priority="high")
    coffee = mind.agent.remember("preference", "coffee_order", "An oat flat white coffee", priority="low")
    wait_until_indexed(mind, "coffee", "coffee_order")
    message = "What coffee does he drink?"
    # When the CLI recalls for the user's message (--query, and -q with --json), through a front
    # that notes what it sent
    with recording_front(runner.url) as front:
        env = agent_env(runner, mind) | {"SYNAPSE_URL": front.url}
        as_text = run_cli("recall", "--query", message, env=env)
        as_json = run_cli("--json", "recall", "-q", message, "--category", "preference", env=env)
        plain = run_cli("recall", env=env)
    # Then each recall carried the message as q (and only those)
    assert [q.get("q") for q in front.queries("/memory/recall")] == [[message], [message], None]
    assert as_text.returncode == 0 and as_json.returncode == 0, as_text.stderr + as_json.stderr
    # And printed what the API gives for it
    assert as_text.stdout == mind.agent.recall(query=message).text.rstrip("\n") + "\n"
    answer = json.loads(as_json.stdout)
    assert [m["key"] for m in answer["memories"]] == ["coffee_order"]
    if "relevant" in mind.agent.recall_json(query=message).model_fields_set:  # a server with recall's q
        assert answer["relevant"] == [coffee.id]
        assert as_text.stdout.index("coffee_order") < as_text.stdout.index("home_city")
    else:
        assert answer["relevant"] == [] and as_text.stdout == plain.stdout


def test_recall_includes_what_a_newer_memory_replaced_only_when_asked(
    runner: RunningService, mind: MindClients
) -> None:
    # Given an old address replaced by a new one
    old = mind.agent.remember("fact", "home_address", "Lives at 14 Elm Street, Portland")
    mind.agent.remember("fact", "home_address_new", "Now lives at 3 Oak Lane, Seattle", supersedes=[old.id])
    env = agent_env(runner, mind)
    # When the CLI recalls with and without --include-superseded
    plain = run_cli("recall", env=env)
    asked = run_cli("--json", "recall", "--include-superseded", env=env)
    # Then the replaced address is left out by default and listed, marked, when asked for
    assert plain.returncode == 0 and asked.returncode == 0, plain.stderr + asked.stderr
    assert "Elm Street" not in plain.stdout and "Oak Lane" in plain.stdout
    assert [m["id"] for m in json.loads(asked.stdout)["replaced"]] == [old.id]


def test_search_lines_show_coverage_and_matched_terms(runner: RunningService, mind: MindClients) -> None:
    # Given an indexed coffee memory
    coffee = mind.agent.remember("preference", "coffee_order", "Drinks an oat flat white coffee")
    wait_until_indexed(mind, "coffee", "coffee_order")
    env = agent_env(runner, mind)
    # When the CLI searches by keyword
    found = run_cli("search", "coffee", env=env)
    assert found.returncode == 0, found.stderr
    page = mind.agent.search("coffee")
    hit = page.items[0]
    # (--json: the API's answer as it came, one page: results, terms, mode, next_cursor)
    as_json = json.loads(run_cli("--json", "search", "coffee", env=env).stdout)
    assert as_json == api_json(runner, mind, "GET", "/memory/search", params={"q": "coffee", "limit": 20})
    assert set(as_json) == {"results", "next_cursor", "terms", "mode"} and as_json["terms"] == page.terms
    assert [(i["memory"]["id"], i["matched"], i["coverage"]) for i in as_json["results"]] == [
        (coffee.id, hit.matched, hit.coverage)
    ]
    # Then each line is id, category/key, [coverage matched terms] (from a server that reports
    # them), then the snippet
    start = f"{coffee.id}  preference/coffee_order  "
    if hit.coverage is None:  # a server from before best-match search
        assert found.stdout == f"{start}{hit.snippet}\n"
        return
    similar = f" ~{hit.similarity:.2f}" if hit.similarity is not None else ""
    assert found.stdout == f"{start}[1.00 {', '.join(hit.matched)}{similar}]  {hit.snippet}\n"
    # And a question shows how much of it each hit covers
    asked = run_cli("search", "What coffee does he drink?", env=env)
    assert asked.returncode == 0, asked.stderr
    line = re.fullmatch(
        r"(\S+)  preference/coffee_order  \[(\d\.\d\d) ([^\]~]+?)(?: ~\d\.\d\d)?\]  (.+)\n", asked.stdout
    )
    assert line is not None, asked.stdout
    answered = mind.agent.search("What coffee does he drink?").items[0]
    assert answered.coverage is not None
    shown = (coffee.id, f"{answered.coverage:.2f}", ", ".join(answered.matched), answered.snippet)
    assert line.groups() == shown


def test_search_and_recall_read_time_words_from_now_and_tz(runner: RunningService, mind: MindClients) -> None:
    # Given memories dated Monday 7 and Tuesday 8 December, indexed
    mind.agent.remember("note", "bank", "Call the bank about the mortgage on 2026-12-07")
    mind.agent.remember("note", "dentist", "Dentist appointment on 2026-12-08")
    wait_until_indexed(mind, "mortgage", "bank")
    wait_until_indexed(mind, "dentist", "dentist")
    late = "2026-12-07T23:30:00Z"  # a fixed now: still Monday in UTC, already Tuesday in Berlin
    # When the CLI asks what is on today at that moment, in UTC and in Berlin, and recalls as of 3 December
    with recording_front(runner.url) as front:
        env = agent_env(runner, mind) | {"SYNAPSE_URL": front.url}
        in_utc = run_cli("search", "What is on today?", "--now", late, env=env)
        in_berlin = run_cli("search", "What is on today?", "--now", late, "--tz", "Europe/Berlin", env=env)
        recalled = run_cli("recall", "--now", "2026-12-03", "--tz", "Europe/Berlin", env=env)
    assert in_utc.returncode == in_berlin.returncode == recalled.returncode == 0, in_berlin.stderr
    # Then each sent the asker's clock as now= and tz=
    sent = [
        (q.get("now"), q.get("tz")) for q in front.queries("/memory/search") + front.queries("/memory/recall")
    ]
    assert sent == [([late], None), ([late], ["Europe/Berlin"]), (["2026-12-03"], ["Europe/Berlin"])]
    # And today is the bank's day in UTC and the dentist's in Berlin; recall lists both as coming up
    assert in_utc.stdout.split()[1] == "note/bank" and in_berlin.stdout.split()[1] == "note/dentist"
    assert "Coming up: 2026-12-08 (Tuesday)" in recalled.stdout


def test_the_help_says_search_takes_a_question_and_recall_a_query() -> None:
    shown = run_cli("search", "--help", env={})
    search_help = " ".join(shown.stdout.split())  # argparse wraps to the terminal's width
    assert shown.returncode == 0
    assert "question" in search_help and "keywords" in search_help
    assert all(operator in search_help for operator in ('"a phrase"', "prefix*", "AND, OR, NOT", "+required"))
    recall_help = " ".join(run_cli("recall", "--help", env={}).stdout.split())
    assert "-q, --query TEXT" in recall_help and "most relevant" in recall_help


def test_remember_onto_a_verified_memory_says_it_is_a_proposal(
    runner: RunningService, mind: MindClients
) -> None:
    # Given a memory a person verified
    stored = mind.agent.remember("fact", "home_city", "Lives in Berlin", tags=["home"])
    mind.person.verify(stored.id)
    env = agent_env(runner, mind)
    # When the agent remembers something else under its category and key (the API answers 202)
    said = run_cli("remember", "fact", "home_city", "Lives in Paris", env=env)
    assert said.returncode == 0, said.stderr
    # Then the CLI says the change is a proposal awaiting review, and shows the memory as it stays
    pending = mind.person.list_proposals(status="pending").items
    assert [p.memory_id for p in pending] == [stored.id]
    first, *shown = said.stdout.splitlines()
    assert first.startswith(f"proposed {pending[0].id}: ") and "waits for their review" in first
    assert shown[0] == f"{stored.id}  fact/home_city  v2  normal  verified"
    assert shown[1:] == ["  Lives in Berlin", "  tags: home"]
    # And --json prints the API's answer as is: the proposal and the memory, unchanged
    as_json = json.loads(run_cli("--json", "remember", "fact", "home_city", "Lives in Rome", env=env).stdout)
    assert set(as_json) == {"proposal", "memory"}
    assert (as_json["proposal"]["status"], as_json["proposal"]["proposed"]["content"]) == (
        "pending",
        "Lives in Rome",
    )
    assert (as_json["memory"]["content"], as_json["memory"]["version"]) == ("Lives in Berlin", 2)
    assert as_json["memory"]["pending_proposal"] == as_json["proposal"]["id"]
    # (a plain write is the memory itself, as the API sent it; so is get)
    plain = json.loads(run_cli("--json", "remember", "fact", "office", "Works from home", env=env).stdout)
    assert plain == api_json(runner, mind, "GET", f"/memory/{plain['id']}")
    assert json.loads(run_cli("--json", "get", plain["id"], env=env).stdout) == plain


def test_a_person_with_several_minds_is_told_the_flag_not_the_header(
    runner: RunningService, mind: MindClients
) -> None:
    # Given a person who owns several minds, and a memory in one of them
    other = new_mind(runner, "Another mind")
    other.agent.close()
    other.person.close()
    stored = mind.agent.remember("fact", "home_city", "Lives in Berlin")
    env = person_env(runner)  # no SYNAPSE_MIND_ID
    # When they verify it without naming the mind
    refused = run_cli("verify", stored.id, env=env)
    # Then the CLI says which flag or variable names it, not which HTTP header
    assert refused.returncode == 1 and refused.stdout == ""
    message = refused.stderr.splitlines()[0]
    assert message == (
        "synapse: You are a member of several minds: name one with --mind-id ID or SYNAPSE_MIND_ID "
        "(`synapse minds list` shows the ids)."
    )
    assert "status 400 bad_request, request id " in refused.stderr and "X-Mind-Id" not in refused.stderr
    # And so does a command that needs a mind before it sends anything
    keys = run_cli("keys", "list", env=env)
    assert keys.returncode == 1 and "--mind-id ID or SYNAPSE_MIND_ID" in keys.stderr
    assert "mind_id=" not in keys.stderr
    # While --mind-id (or SYNAPSE_MIND_ID) works
    verified = run_cli("--mind-id", mind.id, "--json", "verify", stored.id, env=env)
    assert verified.returncode == 0 and json.loads(verified.stdout)["verified"] is True


def test_forget_of_a_verified_memory_by_an_agent_says_it_is_a_proposal(
    runner: RunningService, mind: MindClients
) -> None:
    # Given a memory a person verified, and one nobody did
    verified = mind.agent.remember("fact", "home_city", "Lives in Berlin")
    mind.person.verify(verified.id)
    loose = mind.agent.remember("note", "draft", "A passing thought")
    env = agent_env(runner, mind)
    # When the agent forgets the verified one (the API answers 202)
    said = run_cli("forget", verified.id, env=env)
    # Then the CLI says the delete waits for review, and the memory is still there
    assert said.returncode == 0, said.stderr
    pending = mind.person.list_proposals(status="pending").items
    assert [(p.memory_id, p.action) for p in pending] == [(verified.id, "delete")]
    assert said.stdout.splitlines()[0].startswith(f"proposed {pending[0].id}: ")
    assert mind.agent.get(verified.id).content == "Lives in Berlin"
    # And --json prints the API's answer; the unverified one is simply forgotten, by key too
    as_json = json.loads(
        run_cli("--json", "forget", "--category", "fact", "--key", "home_city", env=env).stdout
    )
    assert set(as_json) == {"proposal", "memory"} and as_json["proposal"]["action"] == "delete"
    assert run_cli("forget", "--category", "note", "--key", "draft", env=env).stdout == f"forgot {loose.id}\n"


def test_remember_with_occurred_at_and_read_by_time(runner: RunningService, mind: MindClients) -> None:
    env = agent_env(runner, mind)
    # When an agent remembers an appointment with its date, and a call with a zoned time
    dentist = json.loads(
        run_cli(
            "--json",
            "remember",
            "fact",
            "dentist",
            "Dentist appointment",
            "--occurred-at",
            "2030-12-09",
            env=env,
        ).stdout
    )
    call = mind.agent.remember("fact", "call", "Call with Anna", occurred_at="2030-12-10T09:30:00+01:00")
    mind.agent.remember("fact", "bike", "Bought a bike")
    # Then the date stays a date and the time is in UTC
    assert dentist["occurred_at"] == "2030-12-09" and call.occurred_at == "2030-12-10T08:30:00.000Z"
    # And get and recall show it
    assert "  on: 2030-12-09" in run_cli("get", dentist["id"], env=env).stdout
    recalled = run_cli("recall", "--after", "2030-12-01", env=env)
    assert "Dentist appointment\n  On: 2030-12-09\n" in recalled.stdout and "bike" not in recalled.stdout
    # And the client's list takes the window, newest event first, and a clear with None
    listed = mind.agent.list_memories(after="2030-12-01", before="2030-12-31")
    assert [m.key for m in listed.items] == ["call", "dentist"]
    assert mind.agent.update(call.id, occurred_at=None).occurred_at is None
    # And search takes it too
    wait_until_indexed(mind, "appointment", "dentist")
    found = run_cli(
        "--json", "search", "appointment bike", "--before", "2030-12-09", "--after", "2030-12-09", env=env
    )
    assert [r["memory"]["key"] for r in json.loads(found.stdout)["results"]] == ["dentist"]
    # And a zoneless time is refused naming the field
    refused = run_cli("remember", "fact", "x", "x", "--occurred-at", "2030-12-09T10:00", env=env)
    assert refused.returncode == 1 and "occurred_at" in refused.stderr
