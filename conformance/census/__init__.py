"""The census: what pylance's users can write, asked of pylance releases and judged by the kit
(``lance-conformance census``).

``type_census`` writes one small table per Arrow type, variant and storage version with each
release (``type_program.py``, run in the release's cached virtualenv), then asks of each
table: does our reader read it as the release reads it (or refuse it, naming the type, where
the release refuses), does the validator keep quiet, and does our writer write what the
release writes (which the release then reads back identically). ``report`` renders the
type x storage version table of ``docs/census-types.md``.

``operations`` collects the census scenarios of the cross-release corpus (every committing
operation, at every storage version a release supports) into operation x storage version x
release cells, the release's outcome beside the kit's.
"""
