"""Lance releases as writers and readers: one cached virtualenv per PyPI release.

Every release of pylance (and of lancedb, which bundles its own Lance core) is an oracle for
the data it writes. This package installs a release into a virtualenv of its own, runs the
writer scenarios and the read-back inside it, and keeps the results as a corpus that the
validator and the reference reader are judged against.
"""
