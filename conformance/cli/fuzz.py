"""``lance-conformance fuzz``: property-based testing of an implementation under test.

    lance-conformance fuzz --impl NAME|module:Class|cmd:"..." [--role writer|reader|both]
                           [--examples N | --time S] [--seed S] [--save-failures DIR]
                           [--max-ops N] [--include-kinds KINDS] [--skip-ops OPS]
                           [--known-rules IDS] [--shrink-time S] [--progress] [--json]

Generated operation scripts (:mod:`conformance.strategies.scripts`), only with what the
implementation declares, judged against the model of the harness
(:mod:`conformance.harness.fuzz`). As a *writer* the implementation applies each script and
the validator and the reference reader judge every version; as a *reader* it reads every
version of what the reference writer wrote. A failure is shrunk to a minimal script and, with
``--save-failures``, saved as a case file that ``lance-conformance run --case FILE`` replays
and ``lance-conformance fixtures from-case FILE OUT`` turns into a golden fixture.

A progress bar goes to stderr when it is a terminal (or with ``--progress``); the summary to
stdout. Exit code: 0 no failure, 1 a failure was found, 2 usage error or no example judged
(every generated script UNSUPPORTED).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def register(subparsers) -> None:
    p = subparsers.add_parser("fuzz", help="property-based testing of an implementation",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", required=True, help='adapter: reference, pylance, module:Class, cmd:"..."')
    p.add_argument("--role", choices=("writer", "reader", "both"), default="writer")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--examples", type=int, default=None, help="number of scripts (default 100)")
    g.add_argument("--time", type=float, default=None, help="seconds to search for")
    p.add_argument("--seed", type=int, default=0, help="the same seed gives the same scripts")
    p.add_argument("--save-failures", default=None, metavar="DIR",
                   help="save a shrunk failure as a case file in DIR")
    p.add_argument("--max-ops", type=int, default=5, help="operations after the create (default 5)")
    p.add_argument("--include-kinds", default="",
                   help="column kinds left out by default because of known kit issues "
                   "(comma-separated; none at present)")
    p.add_argument("--skip-ops", default="",
                   help="operations never to generate (comma-separated), e.g. to get past a "
                   "known failure")
    p.add_argument("--known-rules", default="",
                   help="rule ids of failures already known (comma-separated, e.g. HARNESS-002): "
                   "a script failing only those is counted and the search goes on")
    p.add_argument("--shrink-time", type=float, default=120.0,
                   help="seconds to shrink a failure for (default 120; 0: no limit, the same "
                   "result on every machine)")
    p.add_argument("--progress", action="store_true", help="show progress even if not a terminal")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=_fuzz)


class _Bar:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int | None, seconds: float | None) -> None:
        self.total, self.seconds = total, seconds

    def __call__(self, r) -> None:
        if self.total:
            done, frac = f"{r.examples}/{self.total}", min(1.0, r.examples / self.total)
        else:
            done, frac = f"{r.examples}", min(1.0, r.elapsed_s / (self.seconds or 1))
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\r[{bar:<30}] {done} examples, {r.elapsed_s:.0f} s, "
                         f"{r.unsupported} unsupported ")
        sys.stderr.flush()

    def end(self) -> None:
        sys.stderr.write("\n")


def _fuzz(args) -> int:
    from conformance.harness import fuzz
    from conformance.harness.adapter import Unsupported, load_adapter

    if args.examples is not None and args.examples < 1:
        print("fuzz: --examples must be at least 1", file=sys.stderr)
        return 2
    try:
        adapter = load_adapter(args.impl)
    except Exception as exc:  # noqa: BLE001 - a bad --impl is a usage error
        print(f"fuzz: cannot load adapter {args.impl!r}: {exc}", file=sys.stderr)
        return 2
    include = tuple(k.strip() for k in args.include_kinds.split(",") if k.strip())
    show = args.progress or sys.stderr.isatty()
    examples = args.examples if args.examples is not None or args.time else 100
    bar = _Bar(examples if args.time is None else None, args.time) if show else None
    with adapter:
        try:
            result = fuzz.fuzz(adapter, role=args.role, examples=examples,
                               time_budget=args.time, seed=args.seed, impl=args.impl,
                               include_kinds=include, max_ops=args.max_ops,
                               skip_ops=tuple(o.strip() for o in args.skip_ops.split(",")
                                              if o.strip()),
                               known_rules=tuple(r.strip() for r in args.known_rules.split(",")
                                                 if r.strip()),
                               shrink_budget=args.shrink_time or None, progress=bar)
        except Unsupported as exc:
            print(f"fuzz: {args.impl} cannot play the {args.role} role: {exc}", file=sys.stderr)
            return 2
        finally:
            if bar:
                bar.end()
    if result.ok and result.examples and result.unsupported >= result.examples:
        print(f"fuzz: no example was judged: all {result.examples} were UNSUPPORTED by "
              f"{args.impl} in the {args.role} role", file=sys.stderr)
        return 2
    if not result.ok and args.save_failures:
        fuzz.save_case(result, Path(args.save_failures))
    if args.json:
        doc = {"impl": result.impl, "role": result.role, "seed": result.seed, "ok": result.ok,
               "examples": result.examples, "unsupported": result.unsupported,
               "known": result.known,
               "elapsed_s": round(result.elapsed_s, 3),
               "examples_per_minute": round(result.per_minute(), 1),
               "options": result.options, "shrink_steps": result.shrink_steps,
               "failure": result.finding.as_dict() if result.finding else None,
               "script": result.script, "saved": str(result.saved) if result.saved else None}
        print(json.dumps(doc, indent=1, ensure_ascii=False))
    else:
        print(result.summary(), end="")
    return 0 if result.ok else 1
