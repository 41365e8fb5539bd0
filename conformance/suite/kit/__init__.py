"""Tests of the kit as a whole (conformance/kit.py): where its fixtures are, what every report
says it was judged against, the wheel vendors install, the GitHub Action, and commands that
fail closed when they would check nothing."""
