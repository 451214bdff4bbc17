"""`Synapse` (blocking) and `AsyncSynapse` (asyncio): the same methods, each one an operation of
`synapse_client.ops`, sent with the client's credential, retried on 429/502/503/504.

    agent = Synapse("https://…", mind_key="mk_…")           # an agent: its mind is the key's
    person = Synapse("https://…", token=jwt, mind_id="m_…")  # a person: X-Mind-Id names the mind
"""

from __future__ import annotations

import functools
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, Self, cast

import httpx

from synapse_client import _core, ops
from synapse_client._core import Call, Credentials, Retry
from synapse_client.errors import TransportError
from synapse_client.models import Memory, Page

DEFAULT_TIMEOUT = 30.0


def _sync[**P, T](build: Callable[P, Call[T]]) -> Callable[Concatenate[Synapse, P], T]:
    @functools.wraps(build)
    def method(self: Synapse, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self.send(build(*args, **kwargs))

    return method


def _sync_items[**P, T](build: Callable[P, Call[Page[T]]]) -> Callable[Concatenate[Synapse, P], Iterator[T]]:
    """Every item of a list, page after page (following `next_cursor` from `cursor`, if given)."""
    paged = cast(Callable[..., Call[Page[T]]], build)

    @functools.wraps(build)
    def method(self: Synapse, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        cursor = kwargs.pop("cursor", None)
        while True:
            found = self.send(paged(*args, **kwargs, cursor=cursor))
            yield from found.items
            if not found.next_cursor:
                return
            cursor = found.next_cursor

    return method


def _async[**P, T](
    build: Callable[P, Call[T]],
) -> Callable[Concatenate[AsyncSynapse, P], Coroutine[Any, Any, T]]:
    @functools.wraps(build)
    async def method(self: AsyncSynapse, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.send(build(*args, **kwargs))

    return method


def _async_items[**P, T](
    build: Callable[P, Call[Page[T]]],
) -> Callable[Concatenate[AsyncSynapse, P], AsyncIterator[T]]:
    paged = cast(Callable[..., Call[Page[T]]], build)

    @functools.wraps(build)
    async def method(self: AsyncSynapse, /, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        cursor = kwargs.pop("cursor", None)
        while True:
            found = await self.send(paged(*args, **kwargs, cursor=cursor))
            for item in found.items:
                yield item
            if not found.next_cursor:
                return
            cursor = found.next_cursor

    return method


class _Base:
    def __init__(
        self,
        url: str,
        *,
        mind_key: str | None = None,
        token: str | None = None,
        mind_id: str | None = None,
        retry: Retry | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.credentials = Credentials(mind_key, token, mind_id)
        self.retry = retry or Retry()

    @property
    def mind_id(self) -> str | None:
        return self.credentials.mind_id

    def _unreachable(self, error: httpx.TransportError) -> TransportError:
        return TransportError(f"Could not reach Synapse at {self.url}: {error}")


class Synapse(_Base):
    """A blocking client. Use as a context manager, or call `close()` when done."""

    def __init__(
        self,
        url: str,
        *,
        mind_key: str | None = None,
        token: str | None = None,
        mind_id: str | None = None,
        retry: Retry | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        http: httpx.Client | None = None,
    ) -> None:
        super().__init__(url, mind_key=mind_key, token=token, mind_id=mind_id, retry=retry)
        self._http = http or httpx.Client(base_url=self.url, timeout=timeout, verify=_core.tls(self.url))

    _sleep = staticmethod(time.sleep)

    def send[T](self, call: Call[T]) -> T:
        """Send one call (retrying as `retry` allows) and read its answer, or raise a `SynapseError`."""
        request = _core.build(self._http, self.credentials, call)
        attempt = 0
        while True:
            try:
                response = self._http.send(request)
            except httpx.TransportError as error:
                pause = self.retry.after_failure(call, attempt, error)
                if pause is None:
                    raise self._unreachable(error) from error
                self._sleep(pause)
                attempt += 1
                continue
            delay = self.retry.delay(call, attempt, response)
            if delay is None:
                return _core.finish(call, response)
            self._sleep(delay)
            attempt += 1

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def with_mind_key(self, mind_key: str) -> Synapse:
        """A client of the same service, retries and timeout that calls with `mind_key` (an agent)."""
        return Synapse(self.url, mind_key=mind_key, retry=self.retry, timeout=self._http.timeout)

    def find(self, category: str, key: str) -> Memory | None:
        """The memory stored under (category, key), expired ones included, or None (reads the category)."""
        for memory in self.iter_memories(category=category, include_expired=True, limit=100):
            if memory.key == key:
                return memory
        return None

    def forget_key(self, category: str, key: str) -> Memory | None:
        """Delete the memory stored under (category, key); returns it, or None when there was none."""
        found = self.find(category, key)
        if found is not None:
            self.forget(found.id)
        return found

    remember = _sync(ops.remember)
    remember_batch = _sync(ops.remember_batch)
    get = _sync(ops.get)
    update = _sync(ops.update)
    forget = _sync(ops.forget)
    verify = _sync(ops.verify)
    similar = _sync(ops.similar)
    list_memories = _sync(ops.list_memories)
    iter_memories = _sync_items(ops.list_memories)
    recall = _sync(ops.recall)
    recall_json = _sync(ops.recall_json)
    by_tag = _sync(ops.by_tag)
    iter_by_tag = _sync_items(ops.by_tag)
    expiring = _sync(ops.expiring)
    iter_expiring = _sync_items(ops.expiring)
    search = _sync(ops.search)
    iter_search = _sync_items(ops.search)
    history = _sync(ops.history)
    iter_history = _sync_items(ops.history)
    restore = _sync(ops.restore)
    list_proposals = _sync(ops.list_proposals)
    iter_proposals = _sync_items(ops.list_proposals)
    get_proposal = _sync(ops.get_proposal)
    accept_proposal = _sync(ops.accept_proposal)
    reject_proposal = _sync(ops.reject_proposal)
    create_mind = _sync(ops.create_mind)
    list_minds = _sync(ops.list_minds)
    iter_minds = _sync_items(ops.list_minds)
    get_mind = _sync(ops.get_mind)
    update_mind = _sync(ops.update_mind)
    delete_mind = _sync(ops.delete_mind)
    create_key = _sync(ops.create_key)
    list_keys = _sync(ops.list_keys)
    iter_keys = _sync_items(ops.list_keys)
    revoke_key = _sync(ops.revoke_key)
    audit = _sync(ops.audit)
    iter_audit = _sync_items(ops.audit)
    create_hook = _sync(ops.create_hook)
    list_hooks = _sync(ops.list_hooks)
    iter_hooks = _sync_items(ops.list_hooks)
    revoke_hook = _sync(ops.revoke_hook)
    rotate_hook = _sync(ops.rotate_hook)
    create_webhook = _sync(ops.create_webhook)
    list_webhooks = _sync(ops.list_webhooks)
    iter_webhooks = _sync_items(ops.list_webhooks)
    update_webhook = _sync(ops.update_webhook)
    delete_webhook = _sync(ops.delete_webhook)
    test_webhook = _sync(ops.test_webhook)
    webhook_deliveries = _sync(ops.webhook_deliveries)
    backup_page = _sync(ops.backup_page)
    restore_chunk = _sync(ops.restore_chunk)
    openapi = _sync(ops.openapi)


class AsyncSynapse(_Base):
    """The asyncio twin of `Synapse`: the same methods, awaited (`iter_*` are async iterators)."""

    def __init__(
        self,
        url: str,
        *,
        mind_key: str | None = None,
        token: str | None = None,
        mind_id: str | None = None,
        retry: Retry | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        http: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(url, mind_key=mind_key, token=token, mind_id=mind_id, retry=retry)
        self._http = http or httpx.AsyncClient(base_url=self.url, timeout=timeout, verify=_core.tls(self.url))

    @staticmethod
    async def _sleep(seconds: float) -> None:
        import asyncio  # here: the blocking client (the CLI) never loads asyncio

        await asyncio.sleep(seconds)

    async def send[T](self, call: Call[T]) -> T:
        request = _core.build(self._http, self.credentials, call)
        attempt = 0
        while True:
            try:
                response = await self._http.send(request)
            except httpx.TransportError as error:
                pause = self.retry.after_failure(call, attempt, error)
                if pause is None:
                    raise self._unreachable(error) from error
                await self._sleep(pause)
                attempt += 1
                continue
            delay = self.retry.delay(call, attempt, response)
            if delay is None:
                return _core.finish(call, response)
            await self._sleep(delay)
            attempt += 1

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def find(self, category: str, key: str) -> Memory | None:
        async for memory in self.iter_memories(category=category, include_expired=True, limit=100):
            if memory.key == key:
                return memory
        return None

    async def forget_key(self, category: str, key: str) -> Memory | None:
        found = await self.find(category, key)
        if found is not None:
            await self.forget(found.id)
        return found

    remember = _async(ops.remember)
    remember_batch = _async(ops.remember_batch)
    get = _async(ops.get)
    update = _async(ops.update)
    forget = _async(ops.forget)
    verify = _async(ops.verify)
    similar = _async(ops.similar)
    list_memories = _async(ops.list_memories)
    iter_memories = _async_items(ops.list_memories)
    recall = _async(ops.recall)
    recall_json = _async(ops.recall_json)
    by_tag = _async(ops.by_tag)
    iter_by_tag = _async_items(ops.by_tag)
    expiring = _async(ops.expiring)
    iter_expiring = _async_items(ops.expiring)
    search = _async(ops.search)
    iter_search = _async_items(ops.search)
    history = _async(ops.history)
    iter_history = _async_items(ops.history)
    restore = _async(ops.restore)
    list_proposals = _async(ops.list_proposals)
    iter_proposals = _async_items(ops.list_proposals)
    get_proposal = _async(ops.get_proposal)
    accept_proposal = _async(ops.accept_proposal)
    reject_proposal = _async(ops.reject_proposal)
    create_mind = _async(ops.create_mind)
    list_minds = _async(ops.list_minds)
    iter_minds = _async_items(ops.list_minds)
    get_mind = _async(ops.get_mind)
    update_mind = _async(ops.update_mind)
    delete_mind = _async(ops.delete_mind)
    create_key = _async(ops.create_key)
    list_keys = _async(ops.list_keys)
    iter_keys = _async_items(ops.list_keys)
    revoke_key = _async(ops.revoke_key)
    audit = _async(ops.audit)
    iter_audit = _async_items(ops.audit)
    create_hook = _async(ops.create_hook)
    list_hooks = _async(ops.list_hooks)
    iter_hooks = _async_items(ops.list_hooks)
    revoke_hook = _async(ops.revoke_hook)
    rotate_hook = _async(ops.rotate_hook)
    create_webhook = _async(ops.create_webhook)
    list_webhooks = _async(ops.list_webhooks)
    iter_webhooks = _async_items(ops.list_webhooks)
    update_webhook = _async(ops.update_webhook)
    delete_webhook = _async(ops.delete_webhook)
    test_webhook = _async(ops.test_webhook)
    webhook_deliveries = _async(ops.webhook_deliveries)
    backup_page = _async(ops.backup_page)
    restore_chunk = _async(ops.restore_chunk)
    openapi = _async(ops.openapi)
