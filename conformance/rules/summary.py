"""What the version-scope rules need to know of one fragment, computed once per fragment unit.

The engine judges a fragment once however many versions list it (``Scope.FRAGMENT``), and
keeps a :class:`~.context.FragmentSummary` of it, from which it maintains the
:class:`~.context.FragmentStats` of each version: the version-scope rules that look across
the fragments (FRAG-001 to 003, FLAGS-003/004/007, DATAFILE-005/009, DELETION-006,
ROWID-003/004/006, INDEX-005, FRAG-013) read those instead of decoding the fragments again.
"""

from __future__ import annotations

import numpy as np

from .context import FragmentContext, FragmentSummary
from .datafile import normalize_version
from .fragment import unheld_field_ids
from .rowid import live_row_ids, load_sequences


def summarize(ctx: FragmentContext) -> FragmentSummary:
    """The summary of ``ctx.fragment`` (its row id sequences decoded through the ROWID
    rules' cache on ``ctx``, so after those rules ran it costs nothing more)."""
    frag = ctx.fragment
    deletion = int(frag.deletion_file.read_version) if frag.HasField("deletion_file") else None
    seqs = load_sequences(ctx, frag)
    ids = seqs["row_ids"]
    row_id_max = int(ids.max()) if ids is not None and ids.size else None
    live = live_row_ids(ctx, frag)
    live_span = None
    if live is not None and live.size:
        distinct = live.size == 1 or bool(np.all(np.diff(np.sort(live)) != 0))
        live_span = (int(live.min()), int(live.max()), distinct)
    versions = [int(s.max()) for s in (seqs["created"], seqs["last_updated"])
                if s is not None and s.size]
    return FragmentSummary(
        id=int(frag.id), deletion_read_version=deletion,
        has_row_ids=frag.WhichOneof("row_id_sequence") is not None,
        row_id_max=row_id_max, row_version_max=max(versions) if versions else None,
        file_versions=tuple(normalize_version(df.file_major_version, df.file_minor_version)
                            for df in frag.files),
        live_row_ids=live_span, unheld_field_ids=unheld_field_ids(ctx.manifest.fields, frag))

