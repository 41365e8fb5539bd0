"""numba's ``njit`` as the kernels use it: no Python objects, the GIL released, cached on disk
when some cache directory is writable (numba refuses ``cache=True`` at decoration time when
none is; the kernel is then compiled in memory on each run)."""

from __future__ import annotations

import numba


def jit(fn):
    try:
        return numba.njit(cache=True, nogil=True, boundscheck=False)(fn)
    except Exception:  # noqa: BLE001 - no writable cache: compile in memory
        return numba.njit(cache=False, nogil=True, boundscheck=False)(fn)
