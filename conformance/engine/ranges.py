"""Version lists as ranges: ``[1, 2, 3, 7]`` is ``((1, 3), (7, 7))``, shown ``v1-3, v7``.

A finding that holds in many versions names them all; a report of a table with thousands
of versions shows them as a few ranges. Ranges are inclusive ``(first, last)`` pairs in
increasing order that neither overlap nor touch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


def to_ranges(versions: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """The ranges of a set of versions."""
    out: list[list[int]] = []
    for v in sorted(set(int(x) for x in versions)):
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return tuple((a, b) for a, b in out)


def union(*many: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """The ranges covering every version of the given ranges."""
    spans = sorted((int(a), int(b)) for ranges in many for a, b in ranges)
    out: list[list[int]] = []
    for a, b in spans:
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return tuple((a, b) for a, b in out)


def intersect(a: Iterable[tuple[int, int]], b: Iterable[tuple[int, int]]) -> tuple:
    """The versions in both ``a`` and ``b``, as ranges."""
    out, b = [], list(b)
    for x, y in a:
        for u, w in b:
            lo, hi = max(x, u), min(y, w)
            if lo <= hi:
                out.append((lo, hi))
    return union(out)


def expand(ranges: Iterable[tuple[int, int]]) -> Iterator[int]:
    """Every version of the ranges, in order."""
    for a, b in ranges:
        yield from range(int(a), int(b) + 1)


def count(ranges: Iterable[tuple[int, int]]) -> int:
    return sum(int(b) - int(a) + 1 for a, b in ranges)


def text(ranges: Iterable[tuple[int, int]], prefix: str = "v") -> str:
    """``v1-3, v7`` (``prefix`` before each range)."""
    return ", ".join(f"{prefix}{a}" if a == b else f"{prefix}{a}-{b}" for a, b in ranges)


class Sequence:
    """The versions checked on one ref, in increasing order; spans of positions in it become
    version ranges (:meth:`ranges`), split where the version numbers skip."""

    def __init__(self) -> None:
        self.versions: list[int] = []
        self.skips: list[int] = []  # positions k where versions[k] != versions[k - 1] + 1

    def append(self, version: int) -> int:
        """Add the next version checked; its position."""
        k = len(self.versions)
        if k and version != self.versions[-1] + 1:
            self.skips.append(k)
        self.versions.append(version)
        return k

    def ranges(self, spans: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
        """The version ranges of spans ``(i, j)`` of positions (inclusive)."""
        from bisect import bisect_right

        out: list[tuple[int, int]] = []
        for i, j in spans:
            start = i
            for k in self.skips[bisect_right(self.skips, i):bisect_right(self.skips, j)]:
                out.append((self.versions[start], self.versions[k - 1]))
                start = k
            out.append((self.versions[start], self.versions[j]))
        return union(out)


__all__ = ["Sequence", "count", "expand", "intersect", "text", "to_ranges", "union"]
