"""``python -m conformance.servers install-s3rver [DIR]``: install npm's s3rver for the suite.

``python -m conformance.servers which-s3rver`` prints the s3rver the suite would use.
"""

from __future__ import annotations

import sys

from . import ServerUnavailable, find_s3rver, install_s3rver


def main(argv: list[str]) -> int:
    if argv[:1] == ["install-s3rver"]:
        try:
            print(install_s3rver(argv[1] if len(argv) > 1 else None))
        except ServerUnavailable as exc:
            print(f"cannot install s3rver: {exc}", file=sys.stderr)
            return 1
        return 0
    if argv[:1] == ["which-s3rver"]:
        found = find_s3rver()
        print(found or "s3rver is not installed")
        return 0 if found else 1
    print("usage: python -m conformance.servers install-s3rver [DIR] | which-s3rver", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
