"""The Python client against a real `make run`: every method, its errors, retries and the async twin."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from synapse_client import (
    AsyncSynapse,
    Forbidden,
    NotFound,
    PreconditionFailed,
    RateLimited,
    Retry,
    Synapse,
    TransportError,
    Unauthorized,
    ValidationFailed,
)
from synapse_client.models import Memory

from tests.clients.conftest import MindClients, new_mind
from tests.support.receiver import Receiver
from tests.support.receiver import receiver_fixture as receiver_fixture
from tests.support.runner import STARTUP, RunningService, running


def poll_search(client: Synapse, query: str, expected: int, timeout: float = 20.0) -> list[str]:
    """Keys of the hits once `expected` are indexed (search is eventually consistent)."""
    deadline = time.monotonic() + timeout
    while True:
        keys = [hit.memory.key for hit in client.iter_search(query, limit=1)]
        if len(keys) >= expected or time.monotonic() > deadline:
            return keys
        time.sleep(0.2)


def test_an_agent_remembers_replaces_reads_updates_and_forgets(mind: MindClients) -> None:
    # Given an agent's client
    agent = mind.agent
    # When it stores a memory and stores it again under the same (category, key)
    first = agent.remember("fact", "home_city", "Lives in Berlin", tags=["Place"], priority="high")
    again = agent.remember("fact", "home_city", "Lives in Hamburg", tags=["place"], confidence=0.9)
    # Then the second replaced the first: same id, next version, typed fields
    assert isinstance(first, Memory)
    assert (again.id, again.version, again.content, again.tags) == (
        first.id,
        2,
        "Lives in Hamburg",
        ["place"],
    )
    assert (again.source, again.verified, again.confidence, again.priority) == ("agent", False, 0.9, "normal")
    assert agent.get(first.id) == again
    # And an update changes what it names, conditionally on the version
    updated = agent.update(first.id, content="Lives in Munich", expires_at="2030-01-01T00:00:00Z", if_match=2)
    assert (updated.content, updated.expires_at, updated.version) == (
        "Lives in Munich",
        "2030-01-01T00:00:00.000Z",
        3,
    )
    with pytest.raises(PreconditionFailed) as stale:
        agent.update(first.id, content="x", if_match=2)
    assert stale.value.status == 412 and stale.value.code == "precondition_failed"
    assert agent.update(first.id, expires_at=None).expires_at is None  # None clears, unset keeps
    # And find / forget_key reach it by (category, key)
    assert agent.find("fact", "home_city") is not None and agent.find("fact", "nope") is None
    assert agent.forget_key("fact", "home_city") is not None
    with pytest.raises(NotFound):
        agent.get(first.id)
    assert agent.forget_key("fact", "home_city") is None


def test_forget_by_id_and_errors_carry_the_envelope(mind: MindClients) -> None:
    stored = mind.agent.remember("note", "scratch", "temporary")
    assert mind.agent.forget(stored.id) is None
    # A broken rule is a ValidationFailed with the server's details and request id
    with pytest.raises(ValidationFailed) as caught:
        mind.agent.remember("fact", "Not Snake", "x")
    error = caught.value
    assert (error.status, error.code) == (422, "validation_error")
    assert error.message.startswith("key:") and error.details[0]["field"] == "key"
    assert error.request_id and error.request_id in str(error)
    # A Mind Key may not verify or manage minds
    with pytest.raises(Forbidden):
        mind.agent.verify(stored.id)
    with pytest.raises(Forbidden):
        mind.agent.list_minds()


def test_a_person_verifies_and_addresses_a_mind_by_id(runner: RunningService, mind: MindClients) -> None:
    stored = mind.agent.remember("preference", "editor", "Uses Neovim")
    verified = mind.person.verify(stored.id)
    assert verified.verified and verified.verified_by == "local-user"
    assert mind.person.remember("identity", "user_name", "Ada").source == "user"
    # Without a mind id, a person owning several minds is told to name one
    new_mind(runner)
    with Synapse(runner.url, token=runner.jwt) as no_mind:
        with pytest.raises(Exception, match="X-Mind-Id") as caught:
            no_mind.list_memories()
        assert caught.value.__class__.__name__ == "BadRequest"


def test_lists_follow_their_cursors(mind: MindClients) -> None:
    # Given 25 memories, 5 of them tagged and expiring
    for n in range(25):
        extra = {"tags": ["docker"], "expires_at": "2099-01-01T00:00:00Z"} if n % 5 == 0 else {}
        mind.agent.remember("project" if n % 2 else "fact", f"item_{n:02d}", f"content {n}", **extra)  # type: ignore[arg-type]
    # When a page is read, then every item through the iterator
    page = mind.agent.list_memories(limit=10)
    assert len(page.items) == 10 and page.next_cursor
    listed = list(mind.agent.iter_memories(limit=10))
    # Then all 25 come, once each, and filters apply
    assert sorted(m.key for m in listed) == [f"item_{n:02d}" for n in range(25)]
    assert {m.category for m in mind.agent.iter_memories(category="project", limit=5)} == {"project"}
    assert len(list(mind.agent.iter_memories(category="project", limit=5))) == 12
    tagged = list(mind.agent.iter_by_tag("Docker", limit=2))
    assert sorted(m.key for m in tagged) == ["item_00", "item_05", "item_10", "item_15", "item_20"]
    assert len(mind.agent.by_tag("docker", category="fact").items) == 3
    assert mind.agent.expiring(within="7d").items == []
    assert len(list(mind.agent.iter_expiring(within="365d", limit=2))) == 0  # 2099 is further out
    soon = mind.agent.remember("context", "today", "pairing on the CLI", expires_at="2030-01-01T00:00:00Z")
    assert soon.key == "today"


def test_recall_text_and_json(mind: MindClients) -> None:
    mind.agent.remember("identity", "user_name", "Ada Lovelace", priority="critical", tags=["person"])
    mind.agent.remember("fact", "home_city", "London", tags=["place"])
    text = mind.agent.recall()
    assert str(text).startswith("Mind: Client test\nMemories: 2 total")
    assert text.text.index("user_name") < text.text.index("home_city")
    assert "home_city" not in mind.agent.recall(category="identity").text
    assert "user_name" not in mind.agent.recall(tag="place").text
    assert len(mind.agent.recall(max_chars=500).text) <= 500
    as_json = mind.agent.recall_json(category=["fact", "identity"], limit=1)
    assert as_json.total == 2 and [m.key for m in as_json.memories] == ["user_name"]


def test_search_finds_a_memory_once_indexed(mind: MindClients) -> None:
    mind.agent.remember("skill", "deploy_steps", "Run make deploy then make smoke", tags=["ops"])
    mind.agent.remember("skill", "deploy_rollback", "To roll back a deploy, redeploy the previous tag")
    assert sorted(poll_search(mind.agent, "deploy", 2)) == ["deploy_rollback", "deploy_steps"]
    hits = mind.agent.search("smoke", tag="ops", category="skill").items
    assert [h.memory.key for h in hits] == ["deploy_steps"] and "**smoke**" in hits[0].snippet


def test_search_by_a_question_reports_its_terms_and_each_hits_coverage(mind: MindClients) -> None:
    # Given a memory about coffee, one about something else, both indexed
    mind.agent.remember("preference", "coffee_order", "Drinks an oat flat white coffee every morning")
    mind.agent.remember("fact", "home_city", "Lives in London")
    assert poll_search(mind.agent, "coffee", 1) == ["coffee_order"]
    assert poll_search(mind.agent, "london", 1) == ["home_city"]
    # When the agent searches by keyword, and by the user's question as-is
    keyword = mind.agent.search("coffee")
    if not keyword.terms:  # a server from before best-match search: no terms, matched or coverage
        assert [(h.memory.key, h.matched, h.coverage) for h in keyword.items] == [("coffee_order", [], None)]
        return
    question = mind.agent.search("What coffee does he drink?")
    # Then the keyword is one term, matched in full
    assert len(keyword.terms) == 1
    assert [(h.memory.key, h.matched, h.coverage) for h in keyword.items] == [
        ("coffee_order", keyword.terms, 1.0)
    ]
    # And the question is read as its meaningful terms (no stop words), the coffee memory first,
    # each hit's coverage the share of the terms it matched
    assert question.terms and not {"what", "does", "he"} & {t.lower() for t in question.terms}
    assert [h.memory.key for h in question.items] == ["coffee_order"]
    for hit in question.items:
        assert hit.matched and set(hit.matched) <= set(question.terms)
        assert hit.coverage == pytest.approx(len(hit.matched) / len(question.terms), abs=0.005)


def test_recall_for_the_users_message_sends_q_and_places_the_relevant_first(
    runner: RunningService, mind: MindClients
) -> None:
    # Given a critical memory, two high ones and a low one the user's message is about, indexed
    name = mind.agent.remember("identity", "user_name", "Ada Lovelace", priority="critical")
    mind.agent.remember("project", "atlas_status", "Atlas v2 ships in May", priority="high")
    mind.agent.remember("fact", "home_city", "Lives in London", priority="high")
    coffee = mind.agent.remember("preference", "coffee_order", "An oat flat white coffee", priority="low")
    assert poll_search(mind.agent, "coffee", 1) == ["coffee_order"]
    message = "What coffee does he drink?"
    # When the agent recalls for the message (text and JSON), and without one
    sent: list[httpx.Request] = []
    http = httpx.Client(base_url=runner.url, event_hooks={"request": [sent.append]})
    with Synapse(runner.url, mind_key=mind.key, http=http) as agent:
        text = agent.recall(query=message).text
        placed = agent.recall_json(query=message)
        plain = agent.recall_json()
        unchanged = agent.recall().text
    # Then the message went as q, and only when given
    assert [(r.url.path, r.url.params.get("q")) for r in sent] == [
        ("/memory/recall", message),
        ("/memory/recall", message),
        ("/memory/recall", None),
        ("/memory/recall", None),
    ]
    assert plain.relevant == [] and placed.total == plain.total == 4
    if "relevant" not in placed.model_fields_set:  # a server from before recall's q: q changes nothing
        assert text == unchanged and [m.id for m in placed.memories] == [m.id for m in plain.memories]
        return
    # And the coffee memory comes right after the critical one, in the text as in the JSON
    assert placed.relevant == [coffee.id]
    assert [m.id for m in placed.memories][:2] == [name.id, coffee.id]
    assert text.index("user_name") < text.index("coffee_order") < text.index("atlas_status")
    assert unchanged.index("home_city") < unchanged.index("coffee_order")  # by priority without q


def test_minds_and_keys(runner: RunningService) -> None:
    with Synapse(runner.url, token=runner.jwt) as person:
        made = person.create_mind("Keys mind")
        assert made.mind_key.key and made.mind_key.key.startswith("mk_")
        mind_id = made.mind.id
        assert mind_id in [m.id for m in person.iter_minds(limit=1)]
        assert person.list_minds(limit=1).items
        renamed = person.update_mind(mind_id, name="Renamed")
        assert renamed.name == "Renamed" and person.get_mind(mind_id).name == "Renamed"
        before = person.get_mind(mind_id).settings
        assert before is not None and before.agent_writes_critical == "allow"
        tuned = person.update_mind(
            mind_id,
            agent_writes_to_verified="unverify",
            agent_writes_critical="deny",
            history_retention_days=30,
        )
        assert tuned.settings is not None
        settings = tuned.settings
        assert (
            settings.agent_writes_to_verified,
            settings.agent_writes_critical,
            settings.history_retention_days,
        ) == (
            "unverify",
            "deny",
            30,
        )
        # a read-only key may recall but not write
        reader = person.create_key(mind_id, label="reader", scopes=["read"])
        assert reader.key and reader.scopes == ["read"]
        with Synapse(runner.url, mind_key=reader.key) as read_only:
            read_only.recall()
            with pytest.raises(Forbidden, match="'write' scope"):
                read_only.remember("fact", "k", "c")
        # keys: create, list (no secrets), revoke
        extra = person.create_key(mind_id, label="ci")
        assert extra.key and extra.label == "ci"
        listed = list(person.iter_keys(mind_id, limit=1))
        assert {k.id for k in listed} == {made.mind_key.id, reader.id, extra.id}
        assert all(k.key is None for k in listed) and person.list_keys(mind_id).items
        with Synapse(runner.url, mind_key=extra.key) as ci:
            ci.recall()
            person.revoke_key(extra.id, mind_id)
            with pytest.raises(Unauthorized) as caught:
                ci.recall()
            assert caught.value.status == 401
        # the client's own mind id is the default for mind routes
        with Synapse(runner.url, token=runner.jwt, mind_id=mind_id) as scoped:
            assert scoped.get_mind().id == mind_id
            assert len(scoped.list_keys().items) == 2
        person.delete_mind(mind_id)
        with pytest.raises(NotFound):
            person.get_mind(mind_id)


def test_hooks_and_webhooks(mind: MindClients, receiver: Receiver) -> None:
    person = mind.person
    hook = person.create_hook(label="voice-bot")
    assert hook.secret and hook.label == "voice-bot"
    assert [h.id for h in person.iter_hooks()] == [hook.id] and person.list_hooks().items
    rotated = person.rotate_hook(hook.id, grace_seconds=60)
    assert rotated.secret and rotated.secret != hook.secret
    person.revoke_hook(hook.id)
    assert person.list_hooks().items == []

    webhook = person.create_webhook(receiver.url("/hook"), ["memory.created"])
    assert webhook.secret and webhook.events == ["memory.created"]
    assert [w.id for w in person.iter_webhooks()] == [webhook.id] and person.list_webhooks().items
    assert person.update_webhook(webhook.id, enabled=False).enabled is False
    tried = person.test_webhook(webhook.id)
    assert tried.delivered and tried.status_code == 200
    assert isinstance(person.webhook_deliveries(webhook.id, limit=10), list)
    person.delete_webhook(webhook.id)
    assert person.list_webhooks().items == []


def test_the_openapi_document(mind: MindClients) -> None:
    document = mind.agent.openapi()
    assert document["openapi"].startswith("3.1") and "/memory/batch" in document["paths"]


def test_an_unreachable_server_is_a_transport_error() -> None:
    nowhere = Synapse("http://127.0.0.1:9", mind_key="mk_x", retry=Retry(attempts=0))
    with nowhere, pytest.raises(TransportError) as caught:
        nowhere.recall()
    assert caught.value.status == 0 and "Could not reach" in caught.value.message


def test_a_mind_id_is_needed_for_mind_routes_without_one(runner: RunningService) -> None:
    person = Synapse(runner.url, token=runner.jwt)
    with person, pytest.raises(Exception, match="needs a mind id"):
        person.list_keys()
    with pytest.raises(ValueError, match="exactly one"):
        Synapse(runner.url, mind_key="mk_x", token="t")


# ---------------------------------------------------------------- retries (a runner with a rate limit)


@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningService]:
    with running(tmp_path_factory, "limited-runner", {"SYNAPSE_MIND_RATE_LIMIT": "3"}, STARTUP) as service:
        yield service


def use_up_the_minute(service: RunningService, clients: MindClients) -> None:
    """Spend the mind's requests until the limiter refuses one: three calls are not enough when a
    minute boundary falls between them (the window starts again), so count on no fixed number."""
    with Synapse(service.url, mind_key=clients.key, retry=Retry(attempts=0)) as probe:
        for _ in range(10):
            try:
                probe.recall()
            except RateLimited:
                return
    raise AssertionError("the rate limit never answered 429")


def refused_once_used_up(
    service: RunningService, clients: MindClients, call: Callable[[], object]
) -> RateLimited:
    """`call`'s RateLimited once the mind's minute is used up; again if a minute boundary opened a
    new window between the two."""
    for _ in range(2):
        use_up_the_minute(service, clients)
        try:
            call()
        except RateLimited as error:
            return error
    raise AssertionError("the call was never refused")


def test_a_429_is_retried_after_retry_after_then_raised(
    limited: RunningService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a mind whose three requests this minute are used up
    clients = new_mind(limited)
    # When the client calls again, with a sleep that records instead of waiting
    waits: list[float] = []

    def recall(client: Synapse) -> None:
        waits.clear()
        client.recall()

    with Synapse(limited.url, mind_key=clients.key, retry=Retry(attempts=2, max_wait=61)) as agent:
        monkeypatch.setattr(agent, "_sleep", waits.append)
        error = refused_once_used_up(limited, clients, lambda: recall(agent))
    # Then it waited as long as each Retry-After said (plus < 1 s jitter) before each retry, then raised
    assert len(waits) == 2
    assert error.status == 429 and error.code == "throttled" and error.retry_after is not None
    assert all(error.retry_after <= wait <= 61 for wait in waits)
    # And a wait longer than max_wait is not made: the error comes at once
    with Synapse(limited.url, mind_key=clients.key, retry=Retry(max_wait=0.0)) as impatient:
        monkeypatch.setattr(impatient, "_sleep", waits.append)
        refused_once_used_up(limited, clients, lambda: recall(impatient))
    assert waits == []


def test_the_async_twin_retries_the_same_way(
    limited: RunningService, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients = new_mind(limited)
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(seconds)

    async def scenario() -> None:
        async with AsyncSynapse(
            limited.url, mind_key=clients.key, retry=Retry(attempts=1, max_wait=61)
        ) as agent:
            monkeypatch.setattr(agent, "_sleep", record)
            for _ in range(2):  # a minute boundary right after using the minute up opens a new window
                use_up_the_minute(limited, clients)
                waits.clear()
                try:
                    await agent.recall()
                except RateLimited:
                    return
            raise AssertionError("the retried recall was never refused")

    asyncio.run(scenario())
    assert len(waits) == 1


# ---------------------------------------------------------------- async


def test_the_async_client_does_what_the_sync_one_does(runner: RunningService, mind: MindClients) -> None:
    async def scenario() -> None:
        async with AsyncSynapse(runner.url, mind_key=mind.key) as agent:
            stored = await agent.remember("fact", "pet", "A cat called Miso", tags=["home"])
            assert (await agent.get(stored.id)).content == "A cat called Miso"
            assert (await agent.update(stored.id, priority="high")).priority == "high"
            await agent.remember("fact", "car", "No car")
            keys = [m.key async for m in agent.iter_memories(limit=1)]
            assert sorted(keys) == ["car", "pet"]
            assert [m.key async for m in agent.iter_by_tag("home")] == ["pet"]
            assert "A cat called Miso" in (await agent.recall()).text
            assert (await agent.recall_json()).total == 2
            assert (await agent.list_memories(category="fact")).items
            assert (await agent.expiring()).items == []
            assert (await agent.find("fact", "car")) is not None
            assert (await agent.forget_key("fact", "car")) is not None
            await agent.forget(stored.id)
            with pytest.raises(NotFound):
                await agent.get(stored.id)
        async with AsyncSynapse(runner.url, token=runner.jwt, mind_id=mind.id) as person:
            assert (await person.get_mind()).id == mind.id
            assert [k.id async for k in person.iter_keys()]

    asyncio.run(scenario())


# ---------------------------------------------------------------- batch, history, proposals, audit


def test_a_batch_stores_each_item_reports_failures_and_replays_once(mind: MindClients) -> None:
    items = [{"category": "fact", "key": f"batch_{n}", "content": f"item {n}"} for n in range(5)]
    items.append({"category": "fact", "key": "Not Snake", "content": "x"})
    answer = mind.agent.remember_batch(items, idempotency_key="client-batch-1")
    assert (answer.summary.created, answer.summary.replaced, answer.summary.failed) == (5, 0, 1)
    assert [r.status for r in answer.results] == ["created"] * 5 + ["error"]
    failed = answer.results[5]
    assert failed.index == 5 and failed.error is not None and failed.error.code == "validation_error"
    assert answer.results[0].memory is not None and answer.results[0].memory.key == "batch_0"
    # The same Idempotency-Key again is answered as before and applies nothing twice
    assert mind.agent.remember_batch(items, idempotency_key="client-batch-1") == answer
    assert {m.version for m in mind.agent.iter_memories()} == {1}
    assert mind.agent.remember_batch(items[:1]).summary.replaced == 1


def test_history_restore_proposals_and_audit(mind: MindClients) -> None:
    # Given a memory a person stored (verified)
    stored = mind.person.remember("fact", "home_city", "Berlin")
    # When an agent changes its content, the change waits as a proposal
    waiting = mind.agent.remember("fact", "home_city", "Hamburg")
    assert waiting.content == "Berlin" and waiting.pending_proposal
    pending = mind.person.list_proposals(status="pending").items
    assert [p.id for p in pending] == [waiting.pending_proposal]
    assert mind.agent.get_proposal(waiting.pending_proposal).proposed["content"] == "Hamburg"
    # Then a person accepts it, and rejects the next one
    accepted = mind.person.accept_proposal(waiting.pending_proposal)
    assert accepted.proposal.status == "accepted" and accepted.memory and accepted.memory.content == "Hamburg"
    second = mind.agent.update(stored.id, content="Munich")
    assert second.pending_proposal
    rejected = mind.person.reject_proposal(second.pending_proposal)
    assert rejected.proposal.status == "rejected" and mind.agent.get(stored.id).content == "Hamburg"
    assert len(list(mind.person.iter_proposals(limit=1))) == 2
    # And the history lists every version, newest first; restoring brings an old one back
    versions = [r.version for r in mind.agent.iter_history(stored.id, limit=1)]
    assert versions == sorted(versions, reverse=True) and versions[-1] == 1
    assert mind.agent.history(stored.id).items[0].memory.content == "Hamburg"
    restored = mind.person.restore(stored.id, 1)
    assert restored.content == "Berlin" and restored.version > versions[0]
    # And the mind's audit shows who created a key
    mind.person.create_key(label="audited")
    events = list(mind.person.iter_audit(limit=1))
    assert "key.created" in {e.action for e in events} and mind.person.audit().items


def test_a_newer_memory_names_what_it_replaces_and_reads_leave_it_out(mind: MindClients) -> None:
    # Given an older fact, and a newer one stored naming it in `supersedes`
    agent = mind.agent
    old = agent.remember("fact", "employer", "Works at Acme")
    new = agent.remember("fact", "new_job", "Now works at Globex", supersedes=[old.id])
    # Then the older one is kept, marked, and out of the list unless asked for
    marked = agent.get(old.id)
    assert (marked.superseded_by, marked.superseded_at is not None) == (new.id, True)
    assert [m.id for m in agent.iter_memories()] == [new.id]
    assert {m.id for m in agent.iter_memories(include_superseded=True)} == {old.id, new.id}
    # And an update may name what it replaces; an unknown id is refused, naming the field
    with pytest.raises(ValidationFailed) as refused:
        agent.update(new.id, supersedes=["mem_unknown0000"])
    assert "supersedes[0]" in str(refused.value.details)
