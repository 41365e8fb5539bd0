"""``lance-conformance compat``: the writer-release x reader-release compatibility matrix.

:mod:`.matrix` runs it, :mod:`.causes` names each broken cell's cause from the bytes,
:mod:`.report` renders it, :mod:`.scenarios` lists what is written, and
``release_adapter.py`` is the protocol program run inside each release's virtualenv.
"""
