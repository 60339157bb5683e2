"""Peak memory of this process alone, for the benches' ``peak_rss_mb`` figures.

``VmHWM`` (``/proc/self/status``) is the high-water mark of this process's own address space
since ``exec``. ``ru_maxrss`` is not: Linux carries the parent's peak across fork and exec into
it, so a bench process started by a large parent would report the parent's memory.
"""

from __future__ import annotations

import resource


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB (``ru_maxrss`` where ``/proc`` is absent)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
