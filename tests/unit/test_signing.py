"""The webhook signature scheme (`synapse.signing`): what a platform integrator implements."""

from __future__ import annotations

import hashlib
import hmac

import pytest
from synapse.core.errors import Unauthorized
from synapse.webhooks import signing

SECRET = "whsec_test-secret"
OTHER = "whsec_other-secret"
BODY = b'{"category":"fact","key":"home_city","content":"Lives in Berlin"}'
NOW = 1_796_025_600


def test_the_signature_is_hex_hmac_sha256_of_timestamp_dot_raw_body() -> None:
    # Given the documented recipe, computed by hand
    by_hand = hmac.new(SECRET.encode(), f"{NOW}.".encode() + BODY, hashlib.sha256).hexdigest()
    # Then the module computes the same, and the header carries it
    assert signing.signature(SECRET, NOW, BODY) == by_hand
    assert signing.header_value([SECRET], BODY, NOW) == f"t={NOW},v1={by_hand}"


def test_a_header_it_writes_verifies_and_yields_its_timestamp() -> None:
    header = signing.header_value([SECRET], BODY, NOW)
    assert signing.verify(header, BODY, [SECRET], now=NOW) == NOW


def test_several_v1_values_verify_when_any_matches_any_live_secret() -> None:
    # Given a sender that signs with an old and a new secret during a rotation
    header = signing.header_value([OTHER, SECRET], BODY, NOW)
    # Then a receiver knowing either secret accepts it
    assert signing.verify(header, BODY, [SECRET], now=NOW) == NOW
    assert signing.verify(header, BODY, [OTHER], now=NOW) == NOW
    # And a receiver with both live secrets accepts a header signed with only one
    assert signing.verify(signing.header_value([OTHER], BODY, NOW), BODY, [SECRET, OTHER], now=NOW) == NOW


def test_spaces_after_commas_and_any_part_order_are_accepted() -> None:
    v1 = signing.signature(SECRET, NOW, BODY)
    assert signing.verify(f"v1={v1}, t={NOW}", BODY, [SECRET], now=NOW) == NOW


@pytest.mark.parametrize("offset", [-300, 300, 0])
def test_a_timestamp_exactly_at_the_tolerance_is_accepted(offset: int) -> None:
    header = signing.header_value([SECRET], BODY, NOW + offset)
    assert signing.verify(header, BODY, [SECRET], now=NOW) == NOW + offset


@pytest.mark.parametrize("offset", [-301, 301, -86_400])
def test_a_timestamp_beyond_the_tolerance_is_refused(offset: int) -> None:
    header = signing.header_value([SECRET], BODY, NOW + offset)
    with pytest.raises(Unauthorized, match="timestamp"):
        signing.verify(header, BODY, [SECRET], now=NOW)


def test_a_changed_body_timestamp_or_secret_is_refused() -> None:
    header = signing.header_value([SECRET], BODY, NOW)
    v1 = signing.signature(SECRET, NOW, BODY)
    for value, body, secrets in [
        (header, BODY + b" ", [SECRET]),  # one byte more
        (f"t={NOW + 1},v1={v1}", BODY, [SECRET]),  # the timestamp is signed too
        (header, BODY, [OTHER]),
        (header, BODY, []),  # no live secret at all
        (f"t={NOW},v1={v1.upper()}", BODY, [SECRET]),  # hex as written, lowercase
        (f"t={NOW},v0={v1}", BODY, [SECRET]),  # only v1 counts
    ]:
        with pytest.raises(Unauthorized):
            signing.verify(value, body, secrets, now=NOW)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "t=",
        f"t={NOW}",
        "v1=abc",
        f"t={NOW},v1=",
        f"t=abc,v1={'0' * 64}",
        f"t=-{NOW},v1={'0' * 64}",
        f"t={NOW}.5,v1={'0' * 64}",
        f"t=\uff11\uff12,v1={'0' * 64}",  # full-width digits are digits to str.isdigit()
        f"t={'9' * 13},v1={'0' * 64}",
        "garbage",
        ",,,=,",
        f"t={NOW};v1={'0' * 64}",
    ],
)
def test_malformed_headers_are_refused_as_unauthorized(value: str | None) -> None:
    with pytest.raises(Unauthorized) as caught:
        signing.verify(value, BODY, [SECRET], now=NOW)
    assert caught.value.status == 401


def test_the_last_t_wins_when_a_header_repeats_it() -> None:
    # A proxy that joins two header lines yields two t= parts; only the last one is used.
    v1 = signing.signature(SECRET, NOW, BODY)
    assert signing.verify(f"t=1,v1={v1},t={NOW}", BODY, [SECRET], now=NOW) == NOW
