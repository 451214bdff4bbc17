"""Where a deleted mind's purge runs, apart from the DELETE that asks for it.

DELETE /minds/{mind_id} makes the mind unreadable and its credentials dead at once, then hands the
purge of its memories (whose cost grows with the mind: ~36 s for 600 memories on the local stack)
to another invocation: an asynchronous invoke of the purge function in AWS (Lambda retries it twice
on failure), an installed stand-in in the local runner (`install`). With neither (handlers invoked
in-process by tests) the purge runs in the request, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import boto3

from synapse.core.settings import get_settings

Starter = Callable[[str], None]
"""Starts the purge of one mind somewhere else and returns at once."""

_installed: Starter | None = None


def install(starter: Starter | None) -> None:
    """Run purges through `starter` (the local runner, tests); None goes back to the settings'."""
    global _installed
    _installed = starter


@cache
def _lambda_client() -> Any:
    return boto3.client("lambda", region_name=get_settings().region)


def event_for(mind_id: str) -> dict[str, str]:
    """What the purge function is invoked with."""
    return {"mind_id": mind_id}


def start_elsewhere(mind_id: str) -> bool:
    """Hand the purge of `mind_id` to the installed starter or the purge function; False when there
    is neither, and the caller purges in place."""
    if _installed is not None:
        _installed(mind_id)
        return True
    function = get_settings().purge_function
    if not function:
        return False
    payload = json.dumps(event_for(mind_id)).encode()
    _lambda_client().invoke(FunctionName=function, InvocationType="Event", Payload=payload)
    return True
