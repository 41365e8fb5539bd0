"""The compatibility matrix as text, a self-contained HTML page and JUnit XML.

Every report shows the writer x reader grid (each cell counts its scenarios by outcome,
coloured by the worst), then every cell that is not identical with its cause, misreads
first, and says what the matrix was judged against (:func:`conformance.kit.provenance`:
the kit's version, the digests of its case set and of the spec texts; the implementations
are the participants, each named with its version).
"""

from __future__ import annotations

import html
import shutil
import subprocess
import tempfile
from pathlib import Path
from xml.etree import ElementTree as ET

from conformance import kit

from .matrix import CRASH, IDENTICAL, MISREAD, NO_READ, NOT_WRITTEN, ORDER, REFUSED, CompatMatrix

SYMBOL = {IDENTICAL: "=", REFUSED: "R", CRASH: "C", MISREAD: "M", NOT_WRITTEN: "-", NO_READ: "-"}


def _summary(counts: dict[str, int]) -> str:
    parts = [f"{counts[o]}{SYMBOL[o]}" for o in (MISREAD, CRASH, REFUSED, IDENTICAL) if counts.get(o)]
    return " ".join(parts) or "-"


def _worst(counts: dict[str, int]) -> str:
    for o in ORDER:
        if counts.get(o):
            return o
    return NOT_WRITTEN


def to_text(m: CompatMatrix, *, limit: int | None = None) -> str:
    """The grid (``12= 3R 1M``: identical, refused, crash ``C``, misread ``M`` counts)
    and the broken cells with their causes."""
    head = "writer \\ reader"
    width = max([len(head)] + [len(w) for w in m.writers]) + 2
    cols = [max(len(r), 12) + 2 for r in m.readers]
    lines = [head.ljust(width) + "".join(r.ljust(c) for r, c in zip(m.readers, cols, strict=True))]
    for w in m.writers:
        row = w.ljust(width)
        for r, c in zip(m.readers, cols, strict=True):
            row += _summary(m.counts(w, r)).ljust(c)
        lines.append(row)
    total = m.counts()
    lines.append("")
    lines.append("cells: " + ", ".join(f"{o} {total[o]}" for o in ORDER if total.get(o))
                 + f"  ({m.seconds:.0f} s)")
    broken = [c for c in m.broken() if c.outcome in (MISREAD, CRASH, REFUSED)]
    for c in broken[:limit] if limit else broken:
        lines.append(f"  {c.outcome.upper():8} {c.writer} -> {c.reader} [{c.scenario}]: "
                     f"{c.cause_text}")
    skipped = sorted({(c.writer, c.scenario, c.detail) for c in m.cells.values()
                      if c.outcome == NOT_WRITTEN})
    if skipped:
        lines.append("not written:")
        lines += [f"  {w} [{s}]: {d}" for w, s, d in skipped]
    for p in m.problems:
        lines.append(f"could not start: {p}")
    lines.append(f"judged against {_judged(m)}")
    return "\n".join(lines) + "\n"


def _participant(label: str, p: dict) -> str:
    """``label``, with the implementation's name where it differs and its version where the
    label does not say it."""
    name, version = p.get("name", ""), p.get("version", "")
    if name and name != label:
        return f"{label} ({name} {version})".replace(" )", ")")
    return label if not version or version in label else f"{label} {version}"


def _judged(m: CompatMatrix) -> str:
    """The provenance line, with each participant's version."""
    prov = m.provenance_block()
    who = ", ".join(_participant(label, p) for label, p in sorted(m.participants.items()))
    line = kit.summary(prov)
    return line.rsplit("; implementation ", 1)[0] + (f"; implementations {who}" if who else "")


_STYLE = """body{font-family:DejaVu Sans,Arial,sans-serif;margin:16px;font-size:13px;color:#222}
h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:18px 0 6px}
table{border-collapse:collapse}td,th{border:1px solid #aaa;padding:3px 6px;text-align:center}
th{background:#f0f0f0}th.w{text-align:left}
.identical{background:#c8efc8}.refused{background:#fde7a6}.crash{background:#f7a8a8}
.misread{background:#d33;color:#fff;font-weight:bold}.not-written,.no-read{background:#eee;color:#888}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px;border:1px solid #aaa}
table.list td{text-align:left;vertical-align:top}small{color:#555}
table.grid td{white-space:nowrap}td span{display:inline-block;padding:1px 4px;margin:1px;border-radius:3px}
td.cell-identical{background:#c8efc8}td.cell-misread{outline:2px solid #d33;outline-offset:-2px}"""


def _label(name: str) -> str:
    """A column header: the package above its version."""
    pkg, sep, version = name.partition("==")
    return f"{html.escape(pkg)}<br>{html.escape(version)}" if sep else html.escape(name)


def render_html(m: CompatMatrix, *, title: str = "Lance release compatibility") -> str:
    """One self-contained page (no scripts, no external files)."""
    e = html.escape
    total = m.counts()
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>",
           f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>",
           f"<p>{len(m.writers)} writers &times; {len(m.readers)} readers &times; "
           f"{len(m.scenarios)} scenarios; "
           + ", ".join(f"{e(o)} {total[o]}" for o in ORDER if total.get(o))
           + f"; {m.seconds:.0f} s.</p>",
           f"<p class='provenance'>Judged against: {e(_judged(m))}</p>",
           "<p class='legend'>" + "".join(
               f"<span class='{o}'>{SYMBOL[o]} {o}</span>" for o in ORDER[:4]) + "</p>",
           "<table class='grid'><tr><th class='w'>writer \\ reader</th>"]
    out += [f"<th>{_label(r)}</th>" for r in m.readers]
    out.append("</tr>")
    for w in m.writers:
        out.append(f"<tr><th class='w'>{e(w)}</th>")
        for r in m.readers:
            counts = m.counts(w, r)
            worst = _worst(counts)
            spans = " ".join(f"<span class='{o}'>{counts[o]}{SYMBOL[o]}</span>"
                             for o in (MISREAD, CRASH, REFUSED, IDENTICAL) if counts.get(o))
            out.append(f"<td class='cell-{worst}'>{spans or '-'}</td>")
        out.append("</tr>")
    out.append("</table>")
    broken = [c for c in m.broken() if c.outcome in (MISREAD, CRASH, REFUSED)]
    out.append(f"<h2>Cells that are not identical ({len(broken)}), misreads first</h2>")
    if broken:
        out.append("<table class='list'><tr><th>outcome</th><th>writer</th><th>reader</th>"
                   "<th>scenario</th><th>cause (from the bytes)</th></tr>")
        for c in broken:
            out.append(f"<tr><td class='{c.outcome}'>{c.outcome}</td><td>{e(c.writer)}</td>"
                       f"<td>{e(c.reader)}</td><td>{e(c.scenario)}</td><td>{e(c.cause_text)}"
                       f"<br><small>{e(c.detail)}</small></td></tr>")
        out.append("</table>")
    skipped = sorted({(c.writer, c.scenario, c.detail) for c in m.cells.values()
                      if c.outcome == NOT_WRITTEN})
    if skipped:
        out.append("<h2>Not written</h2><ul>")
        out += [f"<li>{e(w)} [{e(s)}]: {e(d)}</li>" for w, s, d in skipped]
        out.append("</ul>")
    if m.problems:
        out.append("<h2>Could not start</h2><ul>")
        out += [f"<li>{e(p)}</li>" for p in m.problems]
        out.append("</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def to_markdown(m: CompatMatrix) -> str:
    """The grid as a Markdown table, then every cell that is not identical grouped by outcome
    and cause (``writer -> reader: scenarios``)."""
    lines = ["| writer \\ reader | " + " | ".join(m.readers) + " |",
             "|---|" + "---|" * len(m.readers)]
    for w in m.writers:
        lines.append(f"| **{w}** | " + " | ".join(_summary(m.counts(w, r)) for r in m.readers)
                     + " |")
    for outcome in (MISREAD, CRASH, REFUSED):
        cells = [c for c in m.cells.values() if c.outcome == outcome]
        if not cells:
            continue
        lines += ["", f"### {outcome} ({len(cells)} cells)", ""]
        by_cause: dict[str, dict[tuple[str, str], list[str]]] = {}
        for c in cells:
            by_cause.setdefault(c.cause_text, {}).setdefault((c.writer, c.reader), []).append(
                c.scenario)
        for cause, pairs in sorted(by_cause.items(), key=lambda kv: -sum(map(len, kv[1].values()))):
            n = sum(map(len, pairs.values()))
            lines.append(f"- **{cause}** ({n}):")
            for (w, r), sids in sorted(pairs.items()):
                lines.append(f"  {w} &rarr; {r}: {', '.join(sorted(sids))};")
    skipped: dict[str, list[str]] = {}
    for (w, s), d in sorted(m.datasets.items()):
        if d.status != "written":
            skipped.setdefault(w, []).append(f"{s} ({d.message[:90]})")
    if skipped:
        lines += ["", "### not written", ""]
        lines += [f"- {w}: " + "; ".join(items) for w, items in skipped.items()]
    lines += ["", f"Judged against {_judged(m)}."]
    return "\n".join(lines) + "\n"


def to_junit(m: CompatMatrix) -> bytes:
    """One test case per cell: a misread or crash fails, a refusal or a cell not written is
    skipped with its cause, an identical cell passes."""
    suites = ET.Element("testsuites", name="lance-conformance compat")
    props = ET.fromstring(kit.junit_properties(m.provenance_block()))
    for label, p in sorted(m.participants.items()):
        ET.SubElement(props, "property", name=f"participant.{label}",
                      value=f"{p['name']} {p['version']}".strip())
    for w in m.writers:
        cells = [c for c in m.cells.values() if c.writer == w]
        fails = sum(c.outcome in (MISREAD, CRASH) for c in cells)
        skips = sum(c.outcome not in (MISREAD, CRASH, IDENTICAL) for c in cells)
        suite = ET.SubElement(suites, "testsuite", name=f"writer {w}", tests=str(len(cells)),
                              failures=str(fails), skipped=str(skips), errors="0")
        suite.append(props)
        for c in sorted(cells, key=lambda c: (c.reader, c.scenario)):
            case = ET.SubElement(suite, "testcase", classname=f"compat.{w}",
                                 name=f"{c.reader} [{c.scenario}]", time=f"{c.seconds:.3f}")
            if c.outcome in (MISREAD, CRASH):
                f = ET.SubElement(case, "failure", message=f"{c.outcome}: {c.cause_text}")
                f.text = c.detail
            elif c.outcome != IDENTICAL:
                ET.SubElement(case, "skipped", message=f"{c.outcome}: {c.cause_text or c.detail}")
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


def chromium() -> str | None:
    """The headless browser used for :func:`screenshot` (Debian's ``chromium``), if any."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(html_file: Path, png: Path, *, size: tuple[int, int] = (1400, 900),
               timeout: float = 120) -> None:
    """Render ``html_file`` to ``png`` in headless chromium (a fresh profile, no network
    services). Raises FileNotFoundError without chromium, CalledProcessError when it fails."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory(prefix="lance-conformance-chromium-") as profile:
        subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                        "--no-first-run", "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        f"--user-data-dir={profile}", f"--screenshot={Path(png).resolve()}",
                        f"--window-size={size[0]},{size[1]}", Path(html_file).resolve().as_uri()],
                       check=True, capture_output=True, timeout=timeout)
