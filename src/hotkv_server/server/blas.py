"""numpy's BLAS held to one thread in the server process (a process-level setting, made
once by ``Server._open_subsystems``)."""

from __future__ import annotations

import ctypes
from pathlib import Path

#: OpenBLAS's "set the number of threads" under the names its builds export (numpy's
#: wheels bundle scipy-openblas with the 64-bit-index suffix)
_OPENBLAS_SET_THREADS = (
    "scipy_openblas_set_num_threads64_",
    "scipy_openblas_set_num_threads",
    "openblas_set_num_threads64_",
    "openblas_set_num_threads",
)


def loaded_openblas() -> list[ctypes.CDLL]:
    """The OpenBLAS libraries mapped into this process (numpy's pip wheels bundle one);
    [] when there is none, or off Linux (no ``/proc/self/maps``)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux
        return []
    paths = {line.split()[-1] for line in maps.splitlines()
             if "openblas" in line.rsplit("/", 1)[-1].lower()}
    libs: list[ctypes.CDLL] = []
    for path in sorted(paths):
        try:
            libs.append(ctypes.CDLL(path))
        except OSError:
            continue
    return libs


def limit_blas_threads(threads: int = 1) -> bool:
    """Cap numpy's OpenBLAS thread pool at ``threads``; False when no OpenBLAS was found.

    The server is single-threaded apart from its search threads, and OpenBLAS's own
    threads spin for milliseconds after every matrix product: the self-check's small
    products every cron tick kept a second core busy (0.6-1.0 of a core on an idle server
    holding 100,000 x 768 facts), which the RECALL search threads need. One thread is also
    faster for products this small. (Setting ``OPENBLAS_NUM_THREADS=1`` before numpy is
    first imported does the same; by the time this module is imported numpy is loaded.)"""
    found = False
    for lib in loaded_openblas():
        for symbol in _OPENBLAS_SET_THREADS:
            setter = getattr(lib, symbol, None)
            if setter is not None:
                setter(threads)
                found = True
                break
    return found
