"""Time-travel arguments: ``versionAsOf``, ``timestampAsOf`` and the ``@v123`` /
``@yyyyMMddHHmmssSSS`` path suffixes delta-spark accepts."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, tzinfo

from delta_pyspark.exceptions import DeltaIllegalArgumentException

_SUFFIX_VERSION = re.compile(r"^(.*)@v(\d+)$")
_SUFFIX_TIMESTAMP = re.compile(r"^(.*)@(\d{17})$")


def parse_timestamp_ms(value: str | datetime | date | int, tz: tzinfo = UTC) -> int:
    """A timestamp as ms since the epoch; naive values are read in ``tz``.

    Accepts datetimes, dates, epoch milliseconds and the strings Spark casts to a timestamp
    (``expressions.casts.parse_timestamp``: ``2024-01-31``, ``2024-01-31 10:00:00[.123]``,
    ``T`` separators, an offset, ``Z`` or a region).
    """
    if isinstance(value, int):
        return value
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    else:
        # Spark's cast of a string to TIMESTAMP, as delta-spark evaluates the argument;
        # imported here, so the CLI's cold start does not load sqlglot
        from delta_pyspark.core.expressions.casts import parse_timestamp

        try:
            dt = parse_timestamp(value)
        except ValueError:
            raise DeltaIllegalArgumentException(
                # delta-spark's wording, which user code matches
                f"The provided timestamp ({value!r}) cannot be converted to a valid timestamp: "
                "use e.g. '2024-01-31 10:00:00'"
            ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=tz)
    return int(dt.timestamp() * 1000)


def split_path_suffix(path: str, tz: tzinfo = UTC) -> tuple[str, int | None, int | None]:
    """``(path, version, timestamp_ms)`` from ``path@v12`` or ``path@20240131100000000``."""
    if m := _SUFFIX_VERSION.match(path):
        return m.group(1), int(m.group(2)), None
    if m := _SUFFIX_TIMESTAMP.match(path):
        s = m.group(2)
        try:
            dt = datetime.strptime(s[:14], "%Y%m%d%H%M%S").replace(
                microsecond=int(s[14:]) * 1000, tzinfo=tz
            )
        except ValueError:
            raise DeltaIllegalArgumentException(f"bad timestamp suffix in {path!r}") from None
        return m.group(1), None, int(dt.timestamp() * 1000)
    return path, None, None
