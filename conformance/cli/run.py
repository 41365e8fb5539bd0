"""``lance-conformance run``: run the conformance suite against an implementation.

    lance-conformance run --impl NAME|module:Class|cmd:"..." [--suite read|write|all]
                          [--fixtures DIR] [--skip-file F] [--junit F] [--html F] [--json]
    lance-conformance run --matrix [--html F] [--json]
    lance-conformance run --case FILE [--impl NAME] [--json]

``--impl`` names an adapter (:mod:`conformance.harness.adapter`): ``reference``,
``pylance``, ``known-bad:<bug>``, ``module:Class``, an entry point of the group
``lance_conformance.adapters``, or ``cmd:"<command>"`` for a program speaking
``conformance/harness/PROTOCOL.md``. Each case prints PASS, FAIL (with the rule ids that
caught it), UNSUPPORTED, ERROR or SKIP; the reads of the read cases are counted too (each
read is judged on its own; a read not made is listed in its case's message). ``--matrix`` runs the reference and pylance adapters
as producers and as consumers of every writer scenario instead.

``--case FILE`` replays a case file saved by ``lance-conformance fuzz --save-failures``
(against the implementation it was found with, unless ``--impl`` names another) in the role
it was found in, and says PASS or FAIL with the rule ids or row differences.

Every report (the text printed, ``--json``, ``--junit``, ``--html``) names what the run was
judged against: the kit's version, digests of the case set and of the spec texts, and the
implementation's name and version (``conformance/kit.py``).

A run fails closed: it exits 2, with one line saying what is missing, when it would run no
case (no fixtures found, or the skip-file skips them all), when fewer cases than the suite
holds would run and no skip-file line names each missing one (a ``--fixtures`` folder
holding only cases of its own is judged on what it holds), and when no case was judged
(every case UNSUPPORTED or skipped; a replayed case that is UNSUPPORTED too).

Exit code: 0 when no case FAILs or ERRORs (and, for ``--matrix``, every cell passes), 1
otherwise, 2 for a usage error (an adapter that cannot be loaded) or a run that checked less
than its suite.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("run", help="run the conformance suite against an implementation")
    p.add_argument("--impl", default=None, help='adapter: reference, pylance, module:Class, cmd:"..."')
    p.add_argument("--suite", choices=("read", "write", "all"), default="all")
    p.add_argument("--fixtures", default=None, help="golden fixtures folder (default: the kit's own, a checkout's "
                   "fixtures/golden or the copy its wheel carries)")
    p.add_argument("--skip-file", default=None, help="file of case ids (or patterns) to skip, '# reason'; a case of the suite "
                   "missing from the fixtures must be named here, or the run exits 2")
    p.add_argument("--junit", default=None, help="write a JUnit XML report here")
    p.add_argument("--html", default=None, help="write a static HTML report here")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("--matrix", action="store_true",
                   help="producer x consumer matrix of the reference and pylance adapters")
    p.add_argument("--case", default=None, metavar="FILE",
                   help="replay a case file saved by lance-conformance fuzz")
    p.add_argument("--no-pylance-check", action="store_true",
                   help="do not read written datasets back with pylance")
    p.set_defaults(func=_run)


def _matrix(args) -> int:
    from conformance.harness import matrix
    from conformance.harness.adapter import load_adapter

    adapters = [load_adapter("reference"), load_adapter("pylance")]
    usable = [a for a in adapters if a.capabilities.read or a.capabilities.write]
    m = matrix.build_matrix([a for a in usable if a.capabilities.write],
                            [a for a in usable if a.capabilities.read])
    print(json.dumps(m.as_dict(), indent=2) if args.json else matrix.to_text(m), end="")
    if args.html:
        Path(args.html).write_text(matrix.render_html(matrix=m))
    if not any(c.total for c in m.cells.values()):
        print("run: the matrix has no cell: no producer wrote a scenario", file=sys.stderr)
        return 2
    return 0 if m.ok else 1


def _replay(args) -> int:
    from conformance.harness import fuzz
    from conformance.harness.adapter import Unsupported, load_adapter

    try:
        doc = fuzz.load_case(Path(args.case))
    except ValueError as exc:
        print(f"run: {exc}", file=sys.stderr)
        return 2
    spec = args.impl or doc["impl"]
    try:
        adapter = load_adapter(spec)
    except Exception as exc:  # noqa: BLE001 - a bad --impl is a usage error
        print(f"run: cannot load adapter {spec!r}: {exc}", file=sys.stderr)
        return 2
    with adapter:
        try:
            finding = fuzz.replay_case(doc, adapter)
            outcome = "PASS" if finding is None else "FAIL"
        except Unsupported as exc:
            finding, outcome = None, f"UNSUPPORTED ({exc})"
    if args.json:
        print(json.dumps({"case": doc["id"], "impl": spec, "role": doc["role"],
                          "outcome": outcome.split(" ")[0],
                          "failure": finding.as_dict() if finding else None}, indent=1))
    else:
        print(f"{outcome} {doc['id']} ({spec}, {doc['role']})")
        if finding is not None:
            print(f"  {finding.summary()}")
            for m in finding.messages[1:6]:
                print(f"  {m}")
    if outcome.startswith("UNSUPPORTED"):
        print(f"run: the case was not judged: {spec} cannot replay it", file=sys.stderr)
        return 2
    return 1 if finding is not None else 0


def _run(args) -> int:
    from conformance import kit
    from conformance.harness import matrix, runner
    from conformance.harness.adapter import load_adapter

    if args.matrix:
        return _matrix(args)
    if args.case:
        return _replay(args)
    if not args.impl:
        print("run: --impl is required (or --matrix)", file=sys.stderr)
        return 2
    skips = {}
    if args.skip_file:
        try:
            skips = runner.parse_skip_file(Path(args.skip_file).read_text())
        except OSError as exc:
            print(f"run: cannot read the skip-file: {exc}", file=sys.stderr)
            return 2
    try:
        adapter = load_adapter(args.impl)
    except Exception as exc:  # noqa: BLE001 - a bad --impl is a usage error
        print(f"run: cannot load adapter {args.impl!r}: {exc}", file=sys.stderr)
        return 2
    if adapter.name == "pylance" and getattr(adapter, "version", "") is None:
        from . import missing_part  # pylance is an optional part: name its extra, judge nothing

        print(missing_part(ModuleNotFoundError("No module named 'lance'", name="lance")),
              file=sys.stderr)
        return 2

    def progress(r):
        if not args.json:
            rules = f" [{', '.join(r.rules)}]" if r.rules else ""
            first = r.message.splitlines()[0] if r.message else ""
            print(f"{r.outcome:<11} {r.id}{rules}  {first}", flush=True)

    fixtures = Path(args.fixtures) if args.fixtures else None
    with adapter, tempfile.TemporaryDirectory(prefix="lance-conformance-plan-") as tmp:
        planned = [cid for cid, _, _ in runner.plan(adapter, Path(tmp), suite=args.suite,
                                                      fixtures=fixtures)]
        problem = runner.preflight(planned, suite=args.suite, fixtures=fixtures, skips=skips)
        if problem:
            print(f"run: {problem}", file=sys.stderr)
            return 2
        if not args.json:
            print(f"judged against {kit.summary(runner.provenance_of(adapter, fixtures))}",
                  flush=True)
        result = runner.run(adapter, suite=args.suite, fixtures=fixtures,
                            skips=skips, pylance=not args.no_pylance_check, progress=progress)
    if args.json:
        print(runner.to_json(result))
    else:
        print(", ".join(f"{k} {v}" for k, v in result.counts().items()))
        print(runner.reads_line(result))
    if args.junit:
        Path(args.junit).write_text(runner.to_junit(result))
    if args.html:
        Path(args.html).write_text(matrix.render_html(runs=[result]))
    problem = runner.nothing_judged(result)
    if problem:
        print(f"run: {problem}", file=sys.stderr)
        return 2
    return 0 if result.ok else 1
