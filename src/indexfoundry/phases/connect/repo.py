"""Repo sources: the files of a git repository at a ref, read from git's object store.

The ``git`` command is run with argument lists (never a shell, never a string built from
config values), ``--end-of-options`` before every user-given ref, hooks and fsmonitor off and
no terminal prompts. Files are listed with ``git ls-tree`` at the resolved commit and read with
``git cat-file --batch``, so uncommitted changes, the working tree and the index never matter:
the same commit always gives the same bytes. Symlinks and submodules are skipped.

A ``url`` repository is cloned bare into the runs folder's cache and fetched on later runs.
Cloning goes through the run's network policy: only http(s), the host checked against the
allowed/blocked domains, its addresses resolved and checked by the SSRF guard and then pinned
for git (``http.curloptResolve``), redirects and http-alternates refused, proxies ignored.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import httpx
from wcmatch import glob as wglob

from indexfoundry.errors import ConfigInvalid, FetchFailed, FetchTimeout, FileTooLarge, IndexFoundryError
from indexfoundry.models.config import RepoSource
from indexfoundry.models.records import RawRecord
from indexfoundry.phases.connect.guard import GuardedBackend
from indexfoundry.phases.connect.policy import FetchPolicy, check_url
from indexfoundry.phases.connect.sniff import extension_for, sniff_content_type
from indexfoundry.storage.hashing import sha256_text
from indexfoundry.storage.layout import RunLayout, cache_dir

_GLOB_FLAGS = wglob.GLOBSTAR | wglob.DOTGLOB | wglob.BRACE
# Options put before every git command: nothing in a repository's own config may run code.
_SAFE_OPTIONS = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "protocol.allow=never")
LOCAL_TIMEOUT_S = 120
CLONE_TIMEOUT_FACTOR = 20  # a clone may take this many times the connect timeout
SIZE_POLL_S = 0.1  # how often a clone's folder is measured against its byte limit


def _git_env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR", "LANG")}
    return {**keep, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"}


def git_executable() -> str:
    found = shutil.which("git")
    if found is None:
        raise ConfigInvalid("repo sources need the 'git' command", suggestion="Install git (apt-get install git)")
    return found


def run_git(
    args: list[str], *, repo: Path | None = None, timeout: float = LOCAL_TIMEOUT_S, extra: tuple[str, ...] = ()
) -> bytes:
    """Run git with an argument list; a failure is CONFIG_INVALID with git's own message."""
    command = [git_executable(), *_SAFE_OPTIONS, *extra]
    if repo is not None:
        command += ["-C", str(repo)]
    try:
        done = subprocess.run(
            [*command, *args],
            capture_output=True,
            timeout=timeout,
            env=_git_env(),
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise FetchTimeout(
            f"git {args[0]} took longer than {timeout:g} s",
            suggestion="Raise connect.timeout_ms, or check the repository",
        ) from None
    if done.returncode != 0:
        message = " ".join(done.stderr.decode("utf-8", "replace").split())[:500]
        raise ConfigInvalid(
            f"git {args[0]} failed: {message or f'exit code {done.returncode}'}",
            suggestion="Check the repository path or URL and the ref",
            details={"git": args[0], "exit_code": done.returncode},
        )
    return done.stdout


@dataclass(frozen=True)
class RepoFile:
    path: str
    blob: str
    size: int


def resolve_commit(repo: Path, ref: str) -> str:
    """The full commit id ``ref`` names in ``repo``."""
    out = run_git(["rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}"], repo=repo)
    return out.decode().strip()


def _hidden(path: str) -> bool:
    return any(part.startswith(".") for part in PurePosixPath(path).parts)


def list_files(repo: Path, commit: str, source: RepoSource) -> list[RepoFile]:
    """Regular files of ``commit`` matching the source's glob and excludes, sorted by path."""
    out = run_git(["ls-tree", "-r", "-z", "-l", "--full-tree", "--end-of-options", commit], repo=repo)
    files = []
    for entry in out.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        mode, kind, blob, size = meta.decode().split()
        path = raw_path.decode("utf-8", "surrogateescape")
        if kind != "blob" or mode == "120000" or _hidden(path):
            continue  # submodules, symlinks, dot-files
        if not wglob.globmatch(path, source.glob, flags=_GLOB_FLAGS):
            continue
        if any(wglob.globmatch(path, pattern, flags=_GLOB_FLAGS) for pattern in source.exclude_patterns):
            continue
        files.append(RepoFile(path, blob, int(size)))
    return sorted(files, key=lambda f: f.path)


def read_blobs(repo: Path, blobs: list[str]) -> dict[str, bytes]:
    """The contents of ``blobs`` through one ``git cat-file --batch`` process."""
    if not blobs:
        return {}
    command = [git_executable(), *_SAFE_OPTIONS, "-C", str(repo), "cat-file", "--batch"]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_git_env()
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def feed() -> None:
        try:
            stdin.write("".join(f"{b}\n" for b in blobs).encode())
        finally:
            stdin.close()

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out: dict[str, bytes] = {}
    try:
        for blob in blobs:
            header = proc.stdout.readline().decode().split()
            if len(header) != 3 or header[1] != "blob":
                raise ConfigInvalid(f"git cat-file: cannot read blob {blob}", suggestion="Check the repository")
            size = int(header[2])
            out[header[0]] = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after each object
    finally:
        writer.join(LOCAL_TIMEOUT_S)
        proc.stdout.close()
        proc.wait(LOCAL_TIMEOUT_S)
    return out


def tree_bytes(root: Path) -> int:
    """Bytes of the regular files under ``root`` (files vanishing meanwhile are skipped)."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                info = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            total += info.st_size
    return total


def _too_big(url: str, limit: int, size: int) -> FileTooLarge:
    return FileTooLarge(
        f"cloning {url} stopped: the repository passed {limit / 1048576:g} MB ({size / 1048576:.1f} MB so far)",
        suggestion="Raise max_repo_size_mb on the source, or point it at a smaller repository",
        details={"url": url, "limit_bytes": limit, "bytes": size},
    )


def run_git_bounded(
    args: list[str],
    *,
    watch: Path,
    max_bytes: int,
    url: str,
    timeout: float,
    repo: Path | None = None,
    extra: tuple[str, ...] = (),
) -> None:
    """Run a clone/fetch whose folder ``watch`` may hold at most ``max_bytes``.

    The folder is measured while git runs (git is killed as soon as it passes the limit) and
    once more when git ends, so the bound holds however fast the transfer was: FILE_TOO_LARGE.
    """
    command = [git_executable(), *_SAFE_OPTIONS, *extra, *(["-C", str(repo)] if repo is not None else []), *args]
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=_git_env()
        )
        try:
            while True:
                try:
                    returncode = proc.wait(SIZE_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                size = tree_bytes(watch)
                if size > max_bytes:
                    raise _too_big(url, max_bytes, size)
                if time.monotonic() > deadline:
                    raise FetchTimeout(
                        f"git {args[0]} took longer than {timeout:g} s",
                        suggestion="Raise connect.timeout_ms, or check the repository",
                    )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        size = tree_bytes(watch)
        if size > max_bytes:
            raise _too_big(url, max_bytes, size)
        if returncode != 0:
            err.seek(0)
            message = " ".join(err.read(4096).decode("utf-8", "replace").split())[:500]
            raise ConfigInvalid(
                f"git {args[0]} failed: {message or f'exit code {returncode}'}",
                suggestion="Check the repository path or URL and the ref",
                details={"git": args[0], "exit_code": returncode},
            )


def _clone_options(url: str, policy: FetchPolicy) -> tuple[str, ...]:
    """git ``-c`` options that keep a clone/fetch of ``url`` inside the network policy."""
    parsed = check_url(url, policy)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    addresses = GuardedBackend(policy).checked_addresses(parsed.host, port)
    pinned = ",".join(f"[{a}]" if ":" in a else a for a in addresses)
    low_speed_s = max(1, int(policy.timeout_s))
    settings = [
        "protocol.http.allow=always",
        "protocol.https.allow=always",
        "http.followRedirects=false",  # also refuses http-alternates pointing elsewhere
        "http.proxy=",
        f"http.curloptResolve={parsed.host}:{port}:{pinned}",
        "http.lowSpeedLimit=1",
        f"http.lowSpeedTime={low_speed_s}",
        f"http.userAgent={policy.user_agent}",
        "credential.helper=",
    ]
    return tuple(part for setting in settings for part in ("-c", setting))


def mirror_remote(url: str, runs_dir: Path, policy: FetchPolicy, max_bytes: int | None = None) -> Path:
    """A bare clone of ``url`` in the runs folder's cache, fetched up to date.

    With ``max_bytes``, the clone (or the mirror after a fetch) may not grow past it: git is
    stopped, the partial clone removed, and FILE_TOO_LARGE raised.
    """
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError):
        parsed = None
    if parsed is None or parsed.scheme not in ("http", "https"):
        raise ConfigInvalid(
            f"repo url '{url}' must be an http(s) URL", suggestion="Use https://...; for a local repository use 'path'"
        )
    options = _clone_options(url, policy)
    timeout = policy.timeout_s * CLONE_TIMEOUT_FACTOR
    target = cache_dir(runs_dir) / "repos" / (sha256_text(url)[:24] + ".git")
    limit = max_bytes if max_bytes is not None else 1 << 62
    try:
        if not (target / "HEAD").is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(target.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                run_git_bounded(
                    ["clone", "--bare", "--quiet", "--end-of-options", url, str(tmp)],
                    watch=tmp,
                    max_bytes=limit,
                    url=url,
                    timeout=timeout,
                    extra=options,
                )
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            os.replace(tmp, target)
        else:
            refspecs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"]
            try:
                run_git_bounded(
                    ["fetch", "--quiet", "--prune", "--force", "--end-of-options", url, *refspecs],
                    repo=target,
                    watch=target,
                    max_bytes=limit,
                    url=url,
                    timeout=timeout,
                    extra=options,
                )
            except FileTooLarge:
                shutil.rmtree(target, ignore_errors=True)  # never keep a mirror over its limit
                raise
    except ConfigInvalid as error:
        raise FetchFailed(
            f"cannot clone {url}: {error.message}", suggestion="Check the URL and the network", details={"url": url}
        ) from None
    return target


@dataclass
class RepoRead:
    """What a repo source gave: records, the commit, files left out."""

    records: list[RawRecord]
    commit: str
    errors: list[tuple[str, IndexFoundryError]]


def repo_name(source: RepoSource) -> str:
    return source.uri_root()


def local_repo(source: RepoSource) -> Path:
    assert source.path is not None
    path = Path(source.path)
    if not path.exists():
        raise ConfigInvalid(f"repo source '{source.path}' does not exist", suggestion="Check connect.sources[].path")
    return path


def read_repo(layout: RunLayout, source: RepoSource, policy: FetchPolicy) -> RepoRead:
    """Store the files of ``source`` at its ref into ``raw/``."""
    from indexfoundry.phases.connect import store_raw_bytes

    if source.path is not None:
        repo = local_repo(source)
    else:
        repo = mirror_remote(source.url or "", layout.runs_dir, policy, int(source.max_repo_size_mb * 1024 * 1024))
    commit = resolve_commit(repo, source.ref)
    name = repo_name(source)
    limit = int(source.max_file_size_mb * 1024 * 1024)
    errors: list[tuple[str, IndexFoundryError]] = []
    wanted = []
    for file in list_files(repo, commit, source):
        uri = f"{name}/{file.path}"
        if file.size > limit:
            errors.append(
                (
                    uri,
                    FileTooLarge(
                        f"{uri} is {file.size / 1048576:.1f} MB, over the {source.max_file_size_mb} MB limit",
                        suggestion="Raise max_file_size_mb on the source, or exclude the file",
                    ),
                )
            )
            continue
        wanted.append(file)
    blobs = read_blobs(repo, sorted({f.blob for f in wanted}))
    records = []
    for file in wanted:
        data = blobs[file.blob]
        content_type = sniff_content_type(PurePosixPath(file.path).name, data[:8192])
        ext = extension_for(content_type, file.path)
        digest, target = store_raw_bytes(layout, data, ext)
        records.append(
            RawRecord(
                uri=f"{name}/{file.path}",
                sha256=digest,
                size_bytes=len(data),
                content_type=content_type,
                ext=ext,
                path=target.relative_to(layout.root).as_posix(),
                source_kind="repo",
                source_name=name,
                relative_path=file.path,
                commit=commit,
            )
        )
    return RepoRead(records, commit, errors)
