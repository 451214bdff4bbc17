"""The expiry sweep's index key: one hour's expiries spread over the shards, by mind, stably."""

from __future__ import annotations

import base64
import random
from collections import Counter

from synapse.memory import expiry
from synapse.memory.kinds import Memory

from tests.support.memories import a_memory

HOUR = "2026-12-01T13"


def test_one_hours_expiries_of_10000_minds_spread_over_the_shards() -> None:
    # Given 10,000 minds whose memories all expire in the same hour ("+24h" at the same moment)
    rng = random.Random(23)  # ids like new_id's (22 URL-safe characters), but the same every run
    minds = ["m_" + base64.urlsafe_b64encode(rng.randbytes(16)).decode()[:22] for _ in range(10_000)]
    memories: list[Memory] = [a_memory(mind, expires_at=f"{HOUR}:30:00.000Z") for mind in minds]
    # When each memory item gets its sweep attributes
    keys = Counter(expiry.item_attributes(m)[expiry.BUCKET] for m in memories)
    # Then every shard of the hour is used, and none holds more than 1/N of them (+25 % slack)
    assert len(keys) == expiry.SHARDS
    assert max(keys.values()) <= len(minds) / expiry.SHARDS * 1.25
    # And every key is the hour's, sorting with it
    assert all(key.startswith(HOUR + "#") for key in keys)


def test_a_minds_shard_is_stable_and_the_legacy_key_is_the_bare_hour() -> None:
    # Given a mind id
    # Then its shard is the same every time (a hash stable across processes, not Python's hash)
    assert expiry.shard_of("m_fixed") == expiry.shard_of("m_fixed") == 7
    assert expiry.bucket_key(HOUR, 7) == f"{HOUR}#07"
    # And the legacy shard's key is the bare hour, what items written before the shards carry
    assert expiry.bucket_key(HOUR, None) == HOUR
