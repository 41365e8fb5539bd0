"""Generate the Python bindings in ``reference_impl/proto/`` from ``protos/*.proto``.

The bindings are generated, never edited. ``protoc`` writes absolute imports
(``import file_pb2``); they are rewritten to package-relative imports so the
bindings live inside ``reference_impl.proto``. The test
``conformance/suite/test_protos.py`` regenerates into a temporary directory and
fails when the checked-in bindings differ.

Usage: python tools/gen_protos.py [--out DIR]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROTO_DIR = REPO / "protos"
DEFAULT_OUT = REPO / "reference_impl" / "proto"

_ABSOLUTE_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)
_PYI_IMPORT = re.compile(r"^import (\w+_pb2) as (\w+)$", re.MULTILINE)


def generate(out_dir: Path) -> list[Path]:
    """Run protoc over every .proto file and write fixed-up bindings to ``out_dir``."""
    import grpc_tools
    from grpc_tools import protoc  # only needed to (re)generate

    out_dir.mkdir(parents=True, exist_ok=True)
    protos = sorted(p.name for p in PROTO_DIR.glob("*.proto"))
    include = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        args = [
            "protoc",
            f"-I{PROTO_DIR}",
            f"-I{include}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            *protos,
        ]
        if protoc.main(args) != 0:
            raise SystemExit("protoc failed")
        written = []
        for src in sorted(Path(tmp).iterdir()):
            text = src.read_text()
            text = _ABSOLUTE_IMPORT.sub(r"from . import \1 as \2", text)
            dst = out_dir / src.name
            dst.write_text(text)
            written.append(dst)
    init = out_dir / "__init__.py"
    init.write_text(
        '"""Generated protobuf bindings of ``protos/`` (see tools/gen_protos.py). Do not edit."""\n'
    )
    written.append(init)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ns = parser.parse_args(argv)
    for path in generate(ns.out):
        print(path.relative_to(ns.out.parent) if path.is_relative_to(ns.out.parent) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
