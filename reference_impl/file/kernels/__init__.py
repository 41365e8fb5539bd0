"""Compiled kernels beside the readable decoders and encoders: a speed-up, not part of the format.

The readable modules (``reference_impl/file/encodings``, ``reference_impl/file/encode``) are
the definition of every step; a newcomer reads them and never needs this package. For the few
loops that dominate a scan or a write (FSST decompression and tokenising, FastLanes
bit-unpacking and bit-packing, gathering byte ranges, the offsets and bytes of ``variable``
mini-block chunks, a page's chunks of rep/def levels and of inline bit-packed values) this
package holds a twin compiled with numba
(the ``kernels`` extra: ``pip install lance-conformance[kernels]``). The readable modules reach
a kernel only through :func:`kernel`, one call at the top of the function it replaces (or,
where the readable function first checks its input and raises its own errors, right after
those checks)::

    fast = kernels.kernel("fsst_decode")
    if fast is not None:
        return fast(...)

:func:`kernel` returns ``None`` -- the readable path runs -- when numba is not installed, when
``LANCE_CONFORMANCE_KERNELS=0`` is set (tests use it to run the suite without kernels), or
when a kernel failed to compile. Each kernel module wraps its compiled loops in a Python
function that takes and returns what the readable twin does, checks every bound of the
untrusted bytes before a loop runs (or turns a loop's error code into the same typed
:class:`~reference_impl.errors.FormatError`, with the same rule id), and is tested equal to
the twin on random and damaged inputs (``conformance/suite/file/test_kernels.py``).

Threads: the kernels are single-threaded and release the GIL (``nogil``); the kit's decode
pool (:mod:`reference_impl.file.parallel`) runs them side by side. Nothing here uses numba's
own threading layer, so numba starts no threads of its own and cannot oversubscribe the cores.

Compilation happens on a kernel's first call and is cached on disk (numba's ``cache=True``:
``__pycache__`` beside this package, or numba's user-wide cache when that is not writable);
when no cache directory is writable the kernels compile in memory on each run.
"""

from __future__ import annotations

import importlib
import os
import threading

ENV = "LANCE_CONFORMANCE_KERNELS"

#: kernel name -> (module of this package, function in it)
KERNELS = {
    "fsst_decode": ("fsst", "decode"),
    "fsst_encode_block": ("fsst", "encode_block"),
    "unpack_blocks": ("bitpacking", "unpack_blocks"),
    "out_of_line_chunks": ("bitpacking", "out_of_line_chunks"),
    "inline_chunks": ("bitpacking", "inline_chunks"),
    "fastlanes_pack": ("bitpacking", "fastlanes_pack"),
    "gather_ranges": ("gather", "gather_ranges"),
    "variable_chunks": ("variable", "decode_chunk_set"),
}

_lock = threading.Lock()
_loaded: dict[str, object] = {}


def available() -> bool:
    """Whether numba can be imported (the ``kernels`` extra is installed)."""
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - a broken install is the same as none: readable path
        return False
    return True


def enabled() -> bool:
    """Whether kernels are used: numba installed and ``$LANCE_CONFORMANCE_KERNELS`` not ``0``."""
    if os.environ.get(ENV, "").strip().lower() in ("0", "false", "no", "off"):
        return False
    return available()


#: inputs smaller than this many bytes stay on the readable path: importing numba and loading
#: the compiled kernels costs about a second of CPU once per process, which small files (most
#: of a validation run, most tests) never repay
MIN_WORK = 1 << 16


def kernel(name: str, work: int | None = None):
    """The kernel ``name`` (see :data:`KERNELS`), or ``None`` to run the readable path (also
    when ``work``, the input's size in bytes, is below :data:`MIN_WORK`)."""
    if work is not None and work < MIN_WORK:
        return None
    if not enabled():
        return None
    try:
        return _loaded[name]
    except KeyError:
        pass
    with _lock:
        if name not in _loaded:
            module, attr = KERNELS[name]
            try:
                fn = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
            except Exception:  # noqa: BLE001 - a kernel that cannot load leaves the readable path
                fn = None
            _loaded[name] = fn
        return _loaded[name]


__all__ = ["ENV", "KERNELS", "available", "enabled", "kernel"]
