"""Reading run manifests and frozen configs, hashing artifacts for them, and the per-run lock."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from indexfoundry.errors import ConfigInvalid, RunLocked
from indexfoundry.models.artifacts import FrozenConfigFile
from indexfoundry.models.config import PipelineConfig
from indexfoundry.models.manifests import (
    MANIFEST_SCHEMA_VERSION,
    ArtifactRecord,
    HashList,
    PhaseManifest,
    PhaseName,
    RunManifest,
    Totals,
)
from indexfoundry.storage.artifacts import check_schema_version
from indexfoundry.storage.atomic import atomic_write_json, atomic_write_text, read_json
from indexfoundry.storage.filehashes import RACY_NS, file_sha256, file_sha256_many
from indexfoundry.storage.hashing import sha256_file, sha256_json
from indexfoundry.storage.layout import RunLayout


def load_manifest(layout: RunLayout) -> RunManifest:
    """Load ``manifest.json``; a newer schema version is refused with a clear error."""
    data = read_json(layout.manifest)
    check_schema_version(data, MANIFEST_SCHEMA_VERSION, f"the manifest of run {layout.run_id}")
    try:
        return RunManifest.model_validate(data)
    except ValidationError as exc:
        raise ConfigInvalid(
            f"manifest of run {layout.run_id} is invalid: {exc.errors()[0].get('msg')}",
            suggestion="The run folder was edited or damaged; start a new run",
        ) from None


# Manifests read and not changed, shared in this process by file stat (storage/filehashes.py's
# rule and bound: a manifest modified within RACY_NS of being read is never kept). A large run's manifest
# lists every artifact, so parsing it is not free, and a run reads its base's and its siblings'
# several times. Few are kept: each holds a run's artifact list in memory.
_SHARED: OrderedDict[str, tuple[tuple[int, ...], RunManifest]] = OrderedDict()
_SHARED_LOCK = threading.Lock()
_SHARED_SIZE = 4


def read_manifest(layout: RunLayout) -> RunManifest:
    """``load_manifest`` for a reader that does not change it: the same object for every such
    reader in this process while the file's stat is unchanged (a commit replaces the file). The
    result must not be modified; a writer opens a ``RunSession``, which loads its own."""
    try:
        info = os.stat(layout.manifest)
    except OSError:
        return load_manifest(layout)  # raises what a missing manifest raises
    stamp = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    key = str(layout.manifest)
    with _SHARED_LOCK:
        hit = _SHARED.get(key)
        if hit is not None and hit[0] == stamp:
            _SHARED.move_to_end(key)
            return hit[1]
    manifest = load_manifest(layout)
    if time.time_ns() - info.st_mtime_ns > RACY_NS:
        with _SHARED_LOCK:
            _SHARED[key] = (stamp, manifest)
            _SHARED.move_to_end(key)
            while len(_SHARED) > _SHARED_SIZE:
                _SHARED.popitem(last=False)
    return manifest


def artifact_record(layout: RunLayout, path: Path, records: int | None = None) -> ArtifactRecord:
    """Hash an artifact for the manifest."""
    return ArtifactRecord(path=path.relative_to(layout.root).as_posix(), sha256=file_sha256(path), records=records)


def relative_paths(layout: RunLayout, paths: Sequence[Path]) -> list[str]:
    """Each path relative to the run folder, as in the manifest (a string prefix cut for the
    paths under it: ``Path.relative_to`` costs 0.2 s for 20,000 files; on a system whose
    separator is not "/" no path starts with the prefix, and each takes ``relative_to``)."""
    root = str(layout.root) + "/"
    out: list[str] = []
    for path in paths:
        text = str(path)
        out.append(text[len(root) :] if text.startswith(root) else path.relative_to(layout.root).as_posix())
    return out


def artifact_records(layout: RunLayout, paths: list[Path], records: dict[str, int]) -> list[ArtifactRecord]:
    """``artifact_record`` of many artifacts (sorted by path; ``records``: counts by relative path),
    their hashes known by stat where the run's file hashes know them (``storage/filehashes.py``)."""
    relative = relative_paths(layout, paths)
    digests = file_sha256_many(paths)
    out: list[ArtifactRecord] = []
    for path, rel, digest in zip(paths, relative, digests, strict=True):
        out.append(ArtifactRecord(path=rel, sha256=digest or sha256_file(path), records=records.get(rel)))
    return sorted(out, key=lambda a: a.path)


@dataclass(frozen=True)
class FetchTimes:
    """When a run read each of its sources (``fetch_times``)."""

    recorded: dict[str, str]  # uri -> ISO time, as the connect phase recorded it
    read_at: str | None  # when the phase read the local files

    def get(self, uri: str) -> str | None:
        return self.recorded.get(uri) or self.read_at


def fetch_times(connect: PhaseManifest | None) -> FetchTimes:
    """When the run read each source: the time the connect phase recorded for each fetched uri
    (``details.fetched_at``: URLs, sitemap pages, crawled pages; every source in manifests of
    schema version 1), else the time the phase started, when it read the local files (folders,
    repositories, local PDFs), whose times are not recorded one by one."""
    if connect is None:
        return FetchTimes({}, None)
    recorded = connect.details.get("fetched_at")
    return FetchTimes(dict(recorded) if isinstance(recorded, dict) else {}, connect.started_at)


def hash_list(hashes: list[str], count: int | None = None) -> HashList:
    """A phase's inputs or outputs in its manifest entry: their count (default: one per hash)
    and one hash of their hashes."""
    ordered = sorted(hashes)
    return HashList(count=len(ordered) if count is None else count, sha256=sha256_json(ordered))


def file_list_record(layout: RunLayout, target: Path, files: Mapping[str, str | None]) -> ArtifactRecord:
    """Write the file list ``target`` naming ``files`` (per-item files of one phase, by path
    relative to the run: one ``<sha256>  <path>`` line each, sorted by path: ``sha256sum -c``
    checks it from the run folder) and return its artifact record. A file's hash is the one
    given when the phase wrote or verified the file itself, else read (by stat where the run's
    file hashes know it)."""
    unknown = [rel for rel, digest in files.items() if digest is None]
    read = dict(zip(unknown, file_sha256_many([layout.root / rel for rel in unknown]), strict=True))
    lines = sorted((rel, digest or read[rel] or sha256_file(layout.root / rel)) for rel, digest in files.items())
    atomic_write_text(target, "".join(f"{digest}  {rel}\n" for rel, digest in lines))
    return ArtifactRecord(path=target.relative_to(layout.root).as_posix(), sha256=file_sha256(target), files=len(lines))


def read_file_list(path: Path) -> dict[str, str]:
    """A file list's entries: path relative to the run -> SHA-256."""
    out: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            digest, _sep, rel = line.rstrip("\n").partition("  ")
            out[rel] = digest
    return out


def listed_files(layout: RunLayout, artifacts: list[ArtifactRecord]) -> dict[str, str]:
    """Every file ``artifacts`` name, by path relative to the run -> SHA-256: the artifacts
    themselves and the files of their file lists (the lists stand for their files and are not
    included). A file list that is missing or no longer has its recorded hash names nothing."""
    out: dict[str, str] = {}
    for artifact in artifacts:
        if artifact.files is None:
            out[artifact.path] = artifact.sha256
            continue
        path = layout.root / artifact.path
        if file_sha256_many([path])[0] == artifact.sha256:
            out.update(read_file_list(path))
    return out


def artifacts_verify(layout: RunLayout, artifacts: list[ArtifactRecord]) -> bool:
    """True if every recorded artifact exists with its recorded hash, the files of a file list
    included (a file whose stat is unchanged since it was last hashed is not read again:
    ``storage/filehashes.py``)."""
    recorded = {a.path: a.sha256 for a in artifacts}
    digests = file_sha256_many([layout.root / path for path in recorded])
    if any(digest != expected for digest, expected in zip(digests, recorded.values(), strict=True)):
        return False
    for artifact in artifacts:
        if artifact.files is None:
            continue
        listed = read_file_list(layout.root / artifact.path)
        if len(listed) != artifact.files:
            return False
        root = os.fspath(layout.root)  # path strings: a list of 20,000 files makes no Path each
        held = file_sha256_many([os.path.join(root, rel) for rel in listed])
        if any(digest != expected for digest, expected in zip(held, listed.values(), strict=True)):
            return False
    return True


@contextlib.contextmanager
def run_lock(layout: RunLayout) -> Iterator[None]:
    """Hold the run's exclusive lock; another process working on the run gets RUN_LOCKED."""
    layout.root.mkdir(parents=True, exist_ok=True)
    handle: IO[str] = layout.lock.open("a+")
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(
                f"run {layout.run_id} is being worked on by another process",
                suggestion="Wait for it to finish, or start a new run",
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        yield
    finally:
        handle.close()


def lock_is_held(layout: RunLayout) -> bool:
    """True if some process holds the run's lock right now."""
    if not layout.lock.exists():
        return False
    with layout.lock.open("a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return False


def totals_of(manifest: RunManifest) -> Totals:
    """The run's totals, from the output counts of its completed phases."""

    def count(name: PhaseName) -> int:
        phase = manifest.phases.get(name)
        return phase.outputs.count if phase is not None and phase.status == "completed" else 0

    return Totals(
        sources_fetched=count("connect"),
        documents_extracted=count("extract"),
        chunks_created=count("normalize"),
        vectors_indexed=count("index"),
        errors_encountered=sum(len(p.errors) for p in manifest.phases.values()),
    )


def frozen_config(config: PipelineConfig) -> dict[str, Any]:
    """The config snapshot written to ``config.json`` (no run id: it is not content; no executor:
    where the work ran changes how fast, never what, so a Ray run and a local run freeze alike;
    no name: the manifest records the pipeline, and one content under two names freezes alike)."""
    return config.model_copy(update={"run_id": None, "force": False}).model_dump(
        mode="json", exclude={"execution", "name"}
    )


def write_frozen_config(layout: RunLayout, frozen: dict[str, Any]) -> None:
    """Write ``config.json``: the frozen config with its ``schema_version`` (the run's
    ``config_hash`` stays the hash of ``frozen`` alone)."""
    atomic_write_json(layout.config, {**frozen, "schema_version": FrozenConfigFile.SCHEMA_VERSION})


def read_frozen_config(layout: RunLayout) -> dict[str, Any]:
    """``config.json`` as written by ``frozen_config`` (a newer schema version is CONFIG_INVALID)."""
    data = read_json(layout.config)
    check_schema_version(data, FrozenConfigFile.SCHEMA_VERSION, f"config.json of run {layout.run_id}")
    frozen: dict[str, Any] = {k: v for k, v in data.items() if k != "schema_version"}
    return frozen


def load_run_config(layout: RunLayout) -> PipelineConfig:
    """The frozen config of an existing run."""
    return PipelineConfig.model_validate(read_frozen_config(layout))
