"""File versions 2.1 and 2.2: structural layouts (``PageLayout``: mini-block, full-zip,
constant) and the ``CompressiveEncoding`` nodes inside them. Only leaf fields have
columns; struct and list structure lives in each leaf's rep/def levels (:mod:`.repdef`).
"""
