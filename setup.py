"""Build step of the wheel: the checkout's ``fixtures/`` goes into the package.

The golden and invalid fixtures have one source, ``fixtures/`` at the top of the checkout (in
git, never duplicated there). A wheel must carry them so that an installed kit runs its cases
from any folder, offline: ``build_py`` copies ``fixtures/golden`` and ``fixtures/invalid``
to ``conformance/_fixtures/`` of the build (``conformance/kit.py`` finds them there). The
sdist carries ``fixtures/`` (``MANIFEST.in``), so a wheel built from it has them too. An
editable install copies nothing: the package then finds the checkout's own ``fixtures/``.
Everything else is declared in ``pyproject.toml``.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

KINDS = ("golden", "invalid")


class BuildPyWithFixtures(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        source = Path(__file__).resolve().parent / "fixtures"
        missing = [k for k in KINDS if not (source / k).is_dir()]
        if missing:
            raise SystemExit(f"setup.py: {source} lacks {', '.join(missing)}: "
                             "the wheel would carry no cases")
        target = Path(self.build_lib) / "conformance" / "_fixtures"
        if target.exists():
            shutil.rmtree(target)
        for kind in KINDS:
            shutil.copytree(source / kind, target / kind,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildPyWithFixtures})
