"""Files made once and then shared: by every process of a machine (the ``local`` model's ONNX
files in the user cache) or of a runs folder.

Making such a file can take a minute and is not always byte-deterministic (an ONNX export is
not), while whatever reads it may name it by its hash (the ``local`` model id does). So two
processes must never both put their own copy in place: the second would replace the file the
first one already named, and a run indexed with the first copy could no longer be searched.

- ``exclusive(lock)``: one process at a time inside the block (an advisory ``flock`` on a lock
  file beside the target); the others wait, then find the file made.
- ``publish_once(finished, target)``: put a finished temp file at ``target`` only when nothing
  is there yet, atomically (a hard link, which fails when ``target`` exists: ``O_EXCL``
  semantics), so the first writer wins even outside the lock; the temp name is removed either
  way. Where the filesystem has no hard links, a rename when ``target`` is still missing (the
  caller's ``exclusive`` block keeps that check and the rename together).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def lock_path(target: Path) -> Path:
    """The lock file that guards making ``target`` (beside it, ``.<name>.lock``)."""
    return target.with_name(f".{target.name}.lock")


@contextlib.contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock`` (created if missing) for the block; others wait."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def publish_once(finished: Path, target: Path) -> bool:
    """Place ``finished`` at ``target`` unless ``target`` exists; True when this call placed it.

    ``finished`` must be in ``target``'s folder (same filesystem); it is gone afterwards. An
    existing ``target`` is never replaced.
    """
    try:
        os.link(finished, target)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        if target.exists():
            return False
        os.replace(finished, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            finished.unlink()
    return True
