"""The producer x consumer matrix, and the static HTML report of a run.

For every producer adapter (one that writes) and every writer scenario, the producer
applies the scenario's operation script to a fresh dataset; the validator judges it once;
then every consumer adapter (one that reads) reads each committed version and compares the
rows with the script's model. A cell (producer, consumer) counts the scenarios whose every
version the consumer read correctly from that producer's dataset (and that the validator
accepted); its failures are listed under the table.

``render_html`` writes one self-contained HTML page (no scripts, no external files) with
the matrix and/or the per-case outcomes of runs.
"""

from __future__ import annotations

import html
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import scenarios as sc
from .adapter import Adapter, Unsupported


@dataclass
class Cell:
    passed: int = 0
    total: int = 0
    failures: list[str] = field(default_factory=list)


@dataclass
class Matrix:
    producers: list[str]
    consumers: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)
    invalid: dict[str, list[str]] = field(default_factory=dict)  # producer -> "scenario: rules"

    def cell(self, p: str, c: str) -> Cell:
        return self.cells.setdefault((p, c), Cell())

    @property
    def ok(self) -> bool:
        return all(c.passed == c.total for c in self.cells.values()) and not any(self.invalid.values())

    def as_dict(self) -> dict:
        return {"producers": self.producers, "consumers": self.consumers, "ok": self.ok,
                "cells": [{"producer": p, "consumer": c, "passed": v.passed, "total": v.total,
                           "failures": v.failures} for (p, c), v in sorted(self.cells.items())],
                "invalid": self.invalid}


def build_matrix(producers: list[Adapter], consumers: list[Adapter], *,
                 scenarios: list[str] | None = None) -> Matrix:
    from conformance.engine.local import validate

    from .runner import run_script

    m = Matrix([p.name for p in producers], [c.name for c in consumers])
    wanted = scenarios or list(sc.WRITER_SCENARIOS)
    with tempfile.TemporaryDirectory(prefix="lance-conformance-matrix-") as tmp:
        for prod in producers:
            m.invalid[prod.name] = []
            for sid in wanted:
                uri = Path(tmp) / prod.name.replace(":", "_") / sid
                if uri.exists():
                    shutil.rmtree(uri)
                script = sc.WRITER_SCENARIOS[sid]["script"]
                if not all(prod.capabilities.supports(op["op"]) for op in script):
                    continue
                try:
                    model, rules, error = run_script(prod, uri, script)
                except Unsupported:
                    continue
                if error or rules:
                    m.invalid[prod.name].append(f"{sid}: {error or ', '.join(rules)}")
                    for cons in consumers:
                        cell = m.cell(prod.name, cons.name)
                        cell.total += 1
                        cell.failures.append(f"{sid}: the producer failed")
                    continue
                report = validate(str(uri), versions="all")
                if not report.conforms:
                    m.invalid[prod.name].append(f"{sid}: {', '.join(sorted(report.rules_violated()))}")
                for cons in consumers:
                    cell = m.cell(prod.name, cons.name)
                    cell.total += 1
                    problem = None
                    for v, want in sorted(model.versions.items()):
                        try:
                            diff = sc.difference(cons.read(str(uri), v), want)
                        except Exception as exc:  # noqa: BLE001 - a consumer failure is a result
                            diff = f"{type(exc).__name__}: {exc}"
                        if diff:
                            problem = f"{sid} v{v}: {diff}"
                            break
                    if problem is None and report.conforms:
                        cell.passed += 1
                    else:
                        cell.failures.append(problem or f"{sid}: the validator rejects the dataset")
    return m


def to_text(m: Matrix) -> str:
    width = max([len("producer \\ consumer")] + [len(p) for p in m.producers]) + 2
    cols = [max(len(c), 9) + 2 for c in m.consumers]
    lines = ["producer \\ consumer".ljust(width) + "".join(c.ljust(w) for c, w in zip(m.consumers, cols, strict=True))]
    for p in m.producers:
        row = p.ljust(width)
        for c, w in zip(m.consumers, cols, strict=True):
            cell = m.cells.get((p, c), Cell())
            row += f"{cell.passed}/{cell.total}".ljust(w)
        lines.append(row)
    for (p, c), cell in sorted(m.cells.items()):
        for f in cell.failures:
            lines.append(f"  {p} -> {c}: {f}")
    for p, items in sorted(m.invalid.items()):
        for f in items:
            lines.append(f"  {p} wrote an invalid dataset: {f}")
    return "\n".join(lines) + "\n"


_STYLE = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #999;padding:4px 8px;text-align:left}.PASS,.ok{background:#cfc}
.FAIL,.bad{background:#fcc}.ERROR{background:#f99}.UNSUPPORTED,.SKIP{background:#eee}
pre{white-space:pre-wrap;margin:0}"""


def render_html(*, runs=(), matrix: Matrix | None = None, title: str = "Lance conformance") -> str:
    from conformance import kit

    from .runner import reads_line

    e = html.escape
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>",
           f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"]
    if matrix is not None:
        out.append(kit.html_block(kit.provenance({"name": ", ".join(matrix.producers)})))
    if matrix is not None:
        out.append("<h2>Producer &times; consumer</h2><table><tr><th>producer \\ consumer</th>")
        out += [f"<th>{e(c)}</th>" for c in matrix.consumers]
        out.append("</tr>")
        for p in matrix.producers:
            out.append(f"<tr><th>{e(p)}</th>")
            for c in matrix.consumers:
                cell = matrix.cells.get((p, c), Cell())
                cls = "ok" if cell.passed == cell.total else "bad"
                out.append(f"<td class='{cls}'>{cell.passed}/{cell.total}</td>")
            out.append("</tr>")
        out.append("</table><ul>")
        for (p, c), cell in sorted(matrix.cells.items()):
            out += [f"<li>{e(p)} &rarr; {e(c)}: {e(f)}</li>" for f in cell.failures]
        for p, items in sorted(matrix.invalid.items()):
            out += [f"<li>{e(p)} wrote an invalid dataset: {e(f)}</li>" for f in items]
        out.append("</ul>")
    for r in runs:
        counts = ", ".join(f"{k} {v}" for k, v in r.counts().items())
        out.append(f"<h2>{e(r.adapter)}</h2>{kit.html_block(r.as_dict()['provenance'])}"
                   f"<p>cases: {e(counts)}</p><p>{e(reads_line(r))}</p><table>"
                   "<tr><th>case</th><th>outcome</th><th>rules</th><th>reads</th><th>message</th></tr>")
        for c in r.results:
            reads = " ".join(f"<span class='{v.outcome}' title='{e(v.message)}'>{e(v.id)}</span>"
                             for v in c.reads)
            out.append(f"<tr class='{c.outcome}'><td>{e(c.id)}</td><td>{c.outcome}</td>"
                       f"<td>{e(', '.join(c.rules))}</td><td>{reads}</td>"
                       f"<td><pre>{e(c.message)}</pre></td></tr>")
        out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
