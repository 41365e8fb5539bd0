"""``python -m conformance.servers install-s3rver [DIR]``: install npm's s3rver for the suite.

``python -m conformance.servers which-s3rver`` prints the s3rver the suite would use.
``python -m conformance.servers install-chromium`` installs Debian's chromium (for the
headless screenshot of the compat matrix report) when it is not on the machine yet.
``python -m conformance.servers install-node-adapter [DIR]`` npm-installs the LanceDB Node
SDK for the JavaScript implementation under test (:mod:`.node_adapter`);
``which-node-adapter [DIR]`` prints the ``--impl cmd:...`` spec that runs it.
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
    if argv[:1] == ["install-chromium"]:
        return install_chromium()
    if argv[:1] == ["which-s3rver"]:
        found = find_s3rver()
        print(found or "s3rver is not installed")
        return 0 if found else 1
    if argv[:1] in (["install-node-adapter"], ["which-node-adapter"]):
        from .node_adapter import find_node_adapter, install_node_adapter, node_adapter_command

        directory = argv[1] if len(argv) > 1 else None
        if argv[0] == "which-node-adapter":
            if not find_node_adapter(directory):
                print("the LanceDB Node adapter is not installed (node and "
                      "`python -m conformance.servers install-node-adapter`)", file=sys.stderr)
                return 1
            print(node_adapter_command(directory))
            return 0
        try:
            print(install_node_adapter(directory))
        except ServerUnavailable as exc:
            print(f"cannot install the LanceDB Node adapter: {exc}", file=sys.stderr)
            return 1
        return 0
    print("usage: python -m conformance.servers install-s3rver [DIR] | which-s3rver | "
          "install-chromium | install-node-adapter [DIR] | which-node-adapter [DIR]",
          file=sys.stderr)
    return 2


def install_chromium() -> int:
    """apt-get install chromium unless a chromium is already on PATH (needs root)."""
    import shutil
    import subprocess

    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            print(shutil.which(name))
            return 0
    if not shutil.which("apt-get"):
        print("cannot install chromium: no apt-get on this machine", file=sys.stderr)
        return 1
    env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        if subprocess.run(cmd, env=env).returncode != 0:
            print(f"cannot install chromium: {' '.join(cmd)} failed", file=sys.stderr)
            return 1
    print(shutil.which("chromium") or "chromium installed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
