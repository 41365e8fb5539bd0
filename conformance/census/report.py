"""The type x storage version table of the census (``docs/census-types.md``), as Markdown.

One table per release: a row per type of the catalogue (``type_program.CATALOGUE``), a
column per storage version; each cell sums up the type's variants (values with nulls and
empties, not nullable, all null, no rows, many rows, in a list, a struct, a map and a
fixed-size list) with the release's outcome on its own table and the kit's verdict. A
list of every cell that is not plain follows (what the release did, what the kit did).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

#: the release's outcome on its own table, as one letter in a cell
OUTCOME_MARK = {
    "identical": "r", "other-type": "t", "other-values": "v", "refused-write": "W",
    "refused-read": "R", "crashed": "C", "inexpressible": "-",
}
LEGEND = (
    "Each cell counts the type's 9 variants by what the release did with its own table: "
    "**r** wrote and read back identically, **t** read back another type, **v** read back "
    "other values (legacy files keep no nulls), **W** refused to write it, **R** wrote it "
    "but refused to read it back, **C** crashed, **-** the release's pyarrow cannot build it. "
    "After the dot, the kit: **ok** every variant judged as the census demands (our reader "
    "reads what the release reads, the validator keeps quiet, our writer writes what the "
    "release writes and the release reads ours back, or both refuse with a typed error "
    "naming the type), else **✗n**, the variants that fail. Our writer writes 2.0 to 2.2; "
    "at legacy and 2.3 only our reader and validator are judged.")


def _cell(cells: list[dict]) -> str:
    counts = Counter(OUTCOME_MARK.get(c["pylance"], "?") for c in cells)
    order = "rtvWRC-?"
    pylance = " ".join(f"{counts[m]}{m}" for m in order if counts[m])
    bad = sum(not c["ok"] for c in cells)
    return f"{pylance} · {'ok' if not bad else f'✗{bad}'}"


def summary(cells: list[dict]) -> dict:
    """Counts of one release's cells: by the release's outcome, by our verdicts, and ok."""
    return {
        "cells": len(cells),
        "ok": sum(c["ok"] for c in cells),
        "pylance": dict(Counter(c["pylance"] for c in cells)),
        "read": dict(Counter(c["read"] for c in cells)),
        "write": dict(Counter(c["write"] for c in cells)),
    }


def release_table(release: str, cells: list[dict], storages: list[str],
                  writes: list[str]) -> str:
    by = defaultdict(list)
    order = {}
    for c in cells:
        by[(c["row"], c["storage"])].append(c)
        order[c["row"]] = c["order"]
    rows = sorted(order, key=order.get)
    head = ["type"] + [s if s in writes else f"{s} (not written)" for s in storages]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for row in rows:
        out = [f"`{row}`"]
        for s in storages:
            group = by.get((row, s), [])
            out.append(_cell(group) if group else "")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines) + "\n"


def notes(cells: list[dict]) -> str:
    """Every cell that is not plain (the release did not read its table back identically,
    or the kit's verdict is not ``same``), grouped by what happened."""
    groups = defaultdict(list)
    order = {}
    for c in cells:
        plain = c["pylance"] == "identical" and c["read"] == "same" and \
            c["write"] in ("same", "n/a")
        if plain or c["pylance"] == "inexpressible":
            continue
        key = (c["row"], c["pylance"], _short(c["pylance_detail"]), c["read"],
               _short(c["read_detail"]), c["write"], _short(c["write_detail"]), c["ok"])
        groups[key].append(f"{c['storage']}:{c['variant']}")
        order[c["row"]] = c["order"]
    lines = []
    for key in sorted(groups, key=lambda k: (order[k[0]], k[1], k[3], k[5])):
        row, outcome, pdetail, read, rdetail, write, wdetail, ok = key
        where = ", ".join(groups[key])
        text = f"- `{row}` ({where}): release **{outcome}**"
        text += f" ({pdetail})" if pdetail else ""
        text += f"; ours: read **{read}**" + (f" ({rdetail})" if rdetail else "")
        text += f", write **{write}**" + (f" ({wdetail})" if wdetail else "")
        text += "" if ok else " — **fails**"
        lines.append(text)
    return "\n".join(lines) + ("\n" if lines else "")


#: what changes from one run to the next in a message: data file names, task and thread ids
_VOLATILE = ((re.compile(r"data/[\w.-]+\.lance"), "data/….lance"),
             (re.compile(r"\btask \d+"), "task N"), (re.compile(r"Id\(\d+\)"), "Id(N)"),
             (re.compile(r"0x[0-9a-f]{6,}"), "0x…"))


def _short(text: str, n: int = 140) -> str:
    text = " ".join((text or "").split())
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    # a release's error names the line of its source that raised it: not part of the finding
    for cut in (", /home/runner/", ", /rustc/", " /home/runner/"):
        if cut in text:
            text = text.split(cut)[0]
    text = text.replace("|", "/")
    return text if len(text) <= n else text[: n - 3] + "..."


def markdown(result: dict, command: str) -> str:
    """The whole page: how it was made, a summary per release, then each release's table and
    notes. ``result`` is :func:`conformance.census.type_census.census`'s."""
    storages = result["storages"]
    out = ["# The census of types",
           "",
           "Every Arrow type and canonical extension type (and `lance.bfloat16`), each in nine "
           "variants, written at every storage version by a pylance release in its own "
           "virtualenv and read back by it; then read and validated (`--deep`) by the kit, "
           "and written by the kit's writer and read back by the release. Generated by "
           f"`{command}` (`conformance/census/`); do not edit by hand.",
           "",
           LEGEND,
           "",
           "| release | cells | ok | release reads back identically | refuses to write "
           "| other type / values | refuses to read its own |",
           "|---|---|---|---|---|---|---|"]
    for release, data in result["releases"].items():
        s = summary(data["cells"])
        p = s["pylance"]
        out.append(f"| {release} | {s['cells']} | {s['ok']} | {p.get('identical', 0)} | "
                   f"{p.get('refused-write', 0) + p.get('crashed', 0)} | "
                   f"{p.get('other-type', 0)} / {p.get('other-values', 0)} | "
                   f"{p.get('refused-read', 0)} |")
    out.append("")
    timing = result.get("timing")
    if timing:
        out.append(f"Time: {timing}")
        out.append("")
    for release, data in result["releases"].items():
        unstable = data.get("unstable") or []
        line = f"Storage versions it writes: {', '.join(data['writes']) or 'none'}."
        if unstable:
            line += (f" pylance 14.0.2 refuses its {', '.join(unstable)} tables (that "
                     f"release's unstable format): the kit must refuse them too, and our "
                     f"writer, which writes the stable format, is not compared there.")
        out += [f"## {release}", "", line, "",
                release_table(release, data["cells"], storages, data["writes"]),
                f"### {release}: every cell that is not plain", "",
                notes(data["cells"])]
    return "\n".join(out).rstrip("\n") + "\n"
