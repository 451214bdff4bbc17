"""The asker's clock: `now=` and `tz=` as search and recall take them (400 naming the parameter)."""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

ZONE_FORM = "must be an IANA time zone name, e.g. Europe/Berlin, America/New_York or UTC"
NOW_FORM = "must be an ISO 8601 timestamp with a zone (e.g. 2026-12-03T10:00:00Z) or a date (2026-12-03)"


class BadClock(ValueError):
    """A `now` or `tz` that cannot be read: `field` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def zone_of(name: str | None) -> tzinfo:
    """The zone named `name` (UTC when not given). zoneinfo loads with the first zone asked for."""
    if name is None or name in {"UTC", "Z", "Etc/UTC"}:
        return UTC
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as error:
        raise BadClock("tz", f"{ZONE_FORM} (got {name[:60]!r})") from error


def moment_of(raw: str | None, zone: tzinfo, default: datetime | None) -> datetime | None:
    """`now=`: a timestamp with a zone, or a date (its noon in `zone`); `default` when not given."""
    if raw is None:
        return default
    text = raw.strip()
    try:
        if len(text) == 10:
            day = datetime.fromisoformat(text)
            return _within_years(day.replace(hour=12, tzinfo=zone).astimezone(UTC), raw)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadClock("now", f"{NOW_FORM} (got {raw[:60]!r})") from None
    if moment.tzinfo is None:
        raise BadClock("now", f"{NOW_FORM}: a timestamp needs its zone, Z or an offset (got {raw[:60]!r})")
    return _within_years(moment.astimezone(UTC), raw)


def _within_years(moment: datetime, raw: str) -> datetime:
    """A moment between the years 1900 and 2999 (a window around it stays within the calendar)."""
    if not 1900 <= moment.year <= 2999:
        raise BadClock("now", f"must be between the years 1900 and 2999 (got {raw[:60]!r})")
    return moment
