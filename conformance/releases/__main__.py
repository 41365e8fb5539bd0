"""``python -m conformance.releases [--writers W,...] [--quick] [--force] [--json F]``.

Builds the cross-release corpus (one cached virtualenv per writer) and prints the kit's
verdict per writer and scenario; the same as ``lance-conformance fixtures cross-release``.
"""

from conformance.cli.cross_release import entry

raise SystemExit(entry())
