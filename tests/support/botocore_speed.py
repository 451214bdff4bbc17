"""botocore's per-request work that in-process moto never reads, skipped while a test's moto runs.

Every DynamoDB call of an in-process test pays botocore for two things moto ignores: a SigV4
signature (moto does not check signatures unless told to) and a User-Agent header rebuilt from a
dozen sanitised components (~36 sanitising calls a request): ~3.0 ms of CPU a conditional put,
update or get against ~2.3 ms without them (tests/integration/test_roles.py: 21-22 s of CPU → 19.7).
Only the `dynamo` fixture's moto goes without them, and only while it runs: a test that talks to a
real endpoint (DynamoDB Local checks that a request is signed) gets botocore as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from botocore.signers import RequestSigner
from botocore.useragent import UserAgentString

USER_AGENT = "Botocore/in-process-moto"


def _unsigned(self: RequestSigner, *args: Any, **kwargs: Any) -> None:
    """A request left unsigned: moto reads no signature."""


def _fixed_user_agent(self: UserAgentString) -> str:
    return USER_AGENT


@contextlib.contextmanager
def without_unread_headers() -> Iterator[None]:
    """Requests made inside go unsigned, with a fixed User-Agent; botocore is restored after."""
    signing, user_agent = RequestSigner.sign, UserAgentString.to_string
    RequestSigner.sign = _unsigned  # type: ignore[method-assign]
    UserAgentString.to_string = _fixed_user_agent  # type: ignore[method-assign]
    try:
        yield
    finally:
        RequestSigner.sign = signing  # type: ignore[method-assign]
        UserAgentString.to_string = user_agent  # type: ignore[method-assign]
