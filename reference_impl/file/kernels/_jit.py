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


def _store_u64_intrinsic():
    """``store_u64(arr, i, value)``: the 8 bytes of ``value`` (little-endian) into the
    ``uint8`` array ``arr`` at ``i``, as one unaligned store (the caller keeps ``i + 8`` within
    ``arr``). numpy has no unaligned word store; this is the one LLVM instruction for it."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    @intrinsic
    def store_u64(typingctx, arr, idx, val):
        sig = types.void(arr, idx, val)

        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, args[0])
            ptr = builder.gep(ary.data, [args[1]])
            word = context.cast(builder, args[2], sig.args[2], types.uint64)
            store = builder.store(word, builder.bitcast(ptr, ir.IntType(64).as_pointer()))
            store.align = 1
            return context.get_dummy_value()

        return sig, codegen

    return store_u64


store_u64 = _store_u64_intrinsic()
