"""Time in one place: UTC, millisecond ISO 8601 with `Z`, and a seam tests can move."""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """Fixed-width UTC text, so string order is time order (DynamoDB sort keys rely on it)."""
    utc = moment.astimezone(UTC)
    # strftime's %Y is not zero-padded below the year 1000 (glibc): pad it ourselves.
    return f"{utc.year:04d}" + utc.strftime("-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def from_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def epoch_micros(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)
