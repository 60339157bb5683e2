"""Repo sources: a real git repository on disk (and one served over HTTP on 127.0.0.1)."""

from __future__ import annotations

import functools
import http.server
import random
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.storage.atomic import iter_jsonl, read_json
from indexfoundry.storage.layout import RunLayout, cache_dir
from tests.conftest import write_tree
from tests.fakes import RecordingEmbedder


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z", "HOME": str(repo)}
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={**env, "PATH": "/usr/bin:/bin"},
    )
    return done.stdout.strip()


def _doc(name: str, extra: str = "") -> str:
    return f"# {name}\n\n{name} explains one part of the widget in enough words to be a chunk.\n\n{extra}"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "widget"
    write_tree(
        root,
        {
            "docs/edit.md": _doc("Edit"),
            "docs/rename.md": _doc("Rename"),
            "docs/delete.md": _doc("Delete"),
            "docs/keep.md": _doc("Keep"),
            "src/main.py": "print('not docs')\n",
            ".github/ci.md": _doc("Hidden"),
        },
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    return root


def _config(source: dict[str, Any], **connect: Any) -> dict[str, Any]:
    return {
        "connect": {"sources": [source], **connect},
        "normalize": {"chunk_strategy": "by_heading"},
        "index": {"embedding_model": "hash"},
    }


def test_a_base_run_after_an_edit_a_rename_and_a_delete_reextracts_only_those_and_diff_names_them(
    repo: Path, runs_dir: Path
):
    config = _config({"type": "repo", "path": str(repo), "glob": "docs/**/*.md"})
    first = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder())
    assert first.status == "completed"
    old_head = git(repo, "rev-parse", "HEAD")

    (repo / "docs/edit.md").write_text(_doc("Edit", "A new paragraph was added by the second commit."))
    git(repo, "commit", "-qam", "edit")
    git(repo, "mv", "docs/rename.md", "docs/renamed.md")
    git(repo, "commit", "-qm", "rename")
    git(repo, "rm", "-q", "docs/delete.md")
    git(repo, "commit", "-qm", "delete")
    (repo / "docs/keep.md").write_text("uncommitted changes are never read")
    head = git(repo, "rev-parse", "HEAD")

    second = api.pipeline_run(config, runs_dir=runs_dir, embedder=RecordingEmbedder(), base=first.run_id)
    assert second.status == "completed"
    assert (second.phases["extract"].reused, second.phases["extract"].new) == (1, 2)  # keep.md reused

    diff = api.diff(first.run_id, second.run_id, runs_dir=runs_dir, include_chunks=True)
    assert diff.documents is not None
    assert {(d.uri, d.change) for d in diff.documents} == {
        ("widget/docs/edit.md", "modified"),
        ("widget/docs/rename.md", "removed"),
        ("widget/docs/renamed.md", "added"),
        ("widget/docs/delete.md", "removed"),
    }
    layout = RunLayout(runs_dir / second.run_id)
    connect = read_json(layout.manifest)["phases"]["connect"]
    assert connect["details"]["repo"]["widget"] == {
        "location": str(repo),
        "ref": "HEAD",
        "commit": head,
        "files": 3,
    }
    chunks = list(iter_jsonl(layout.chunks))
    assert {c["source"]["commit"] for c in chunks} == {head} != {old_head}
    assert {c["source"]["uri"] for c in chunks} == {f"widget/docs/{n}.md" for n in ("edit", "renamed", "keep")}


def test_a_ref_selects_the_files_of_that_commit_and_an_unknown_ref_is_config_invalid(repo: Path, runs_dir: Path):
    git(repo, "tag", "v1")
    git(repo, "rm", "-q", "docs/keep.md")
    git(repo, "commit", "-qm", "drop keep")
    tagged = api.pipeline_run(
        _config({"type": "repo", "path": str(repo), "ref": "v1", "glob": "**/*.md", "name": "w"}), runs_dir=runs_dir
    )
    uris = [r["uri"] for r in iter_jsonl(RunLayout(runs_dir / tagged.run_id).raw_manifest)]
    assert uris == [f"w/docs/{n}.md" for n in ("delete", "edit", "keep", "rename")]  # no .github (hidden)
    bad = api.pipeline_run(_config({"type": "repo", "path": str(repo), "ref": "no-such-branch"}), runs_dir=runs_dir)
    assert bad.status != "completed"
    errors = read_json(RunLayout(runs_dir / bad.run_id).manifest)["phases"]["connect"]["errors"]
    assert "CONFIG_INVALID" in [e["code"] for e in errors]  # (and EMPTY_CONTENT: the run is empty)


def test_a_ref_that_looks_like_an_option_is_refused_before_a_run_exists(repo: Path, runs_dir: Path):
    with pytest.raises(IndexFoundryError) as caught:
        api.pipeline_run(_config({"type": "repo", "path": str(repo), "ref": "--output=/tmp/x"}), runs_dir=runs_dir)
    assert caught.value.code == "CONFIG_INVALID"
    assert not any(runs_dir.iterdir())


@contextmanager
def _serve_dir(root: Path) -> Iterator[tuple[str, list[str]]]:
    asked: list[str] = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_a_remote_repository_is_cloned_through_the_network_policy(repo: Path, runs_dir: Path, tmp_path: Path):
    bare = tmp_path / "served" / "widget.git"
    bare.parent.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    git(bare, "update-server-info")  # git's "dumb HTTP" protocol: plain static files
    with _serve_dir(bare.parent) as (host, asked):
        url = f"http://{host}/widget.git"
        refused = api.pipeline_run(_config({"type": "repo", "url": url}), runs_dir=runs_dir)
        assert asked == []  # the SSRF guard refused before git connected
        allowed = api.pipeline_run(
            _config({"type": "repo", "url": url, "glob": "**/*.md"}, allowed_private_hosts=[host]), runs_dir=runs_dir
        )
    errors = read_json(RunLayout(runs_dir / refused.run_id).manifest)["phases"]["connect"]["errors"]
    assert "DOMAIN_BLOCKED" in [e["code"] for e in errors]
    assert allowed.status == "completed"
    uris = [r["uri"] for r in iter_jsonl(RunLayout(runs_dir / allowed.run_id).raw_manifest)]
    assert uris == [f"widget/docs/{n}.md" for n in ("delete", "edit", "keep", "rename")]


def test_a_clone_that_grows_past_max_repo_size_mb_is_stopped_with_file_too_large(tmp_path: Path, runs_dir: Path):
    big = tmp_path / "big"
    write_tree(big, {"docs/a.md": _doc("A")})
    (big / "docs" / "blob.bin").write_bytes(random.Random(7).randbytes(3 * 1024 * 1024))  # incompressible
    git(big, "init", "-q")
    git(big, "add", "-A")
    git(big, "commit", "-qm", "big")
    bare = tmp_path / "served" / "big.git"
    bare.parent.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(big), str(bare))
    git(bare, "update-server-info")
    with _serve_dir(bare.parent) as (host, _asked):
        source = {"type": "repo", "url": f"http://{host}/big.git", "max_repo_size_mb": 1}
        out = api.pipeline_run(_config(source, allowed_private_hosts=[host]), runs_dir=runs_dir)
        roomy = api.pipeline_run(
            _config({**source, "max_repo_size_mb": 10, "glob": "**/*.md"}, allowed_private_hosts=[host]),
            runs_dir=runs_dir,
        )
    errors = read_json(RunLayout(runs_dir / out.run_id).manifest)["phases"]["connect"]["errors"]
    assert errors[0]["code"] == "FILE_TOO_LARGE"  # then EMPTY_CONTENT: nothing was read
    assert roomy.status == "completed"  # the same repository under a higher limit clones
    mirrors = sorted(p.name for p in (cache_dir(runs_dir) / "repos").iterdir())
    assert len(mirrors) == 1 and mirrors[0].endswith(".git")  # the roomy clone; no partial one left behind
