"""Every refusal says the way out on the console, and the way out works.

Real ``indexfoundry`` processes: a run that comes out empty, the crawl of a site on 127.0.0.1
(then the same crawl with the fix the console named), and embedding models that are not on this
machine, refused before a run exists without any network message.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import folder_config, write_config, write_tree
from tests.integration.connect_servers import body, serve_script

PAGE = (
    b"<html><head><title>Local handbook</title></head><body><main><h1>Local handbook</h1>"
    b"<p>This page is served from the loopback interface for the crawl test, with enough words "
    b"in it to make a chunk of its own.</p></main></body></html>"
)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "indexfoundry", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_an_empty_run_prints_empty_content_with_what_to_check(tmp_path: Path):
    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nSome text that a wrong glob never reaches.\n"})
    config = write_config(
        tmp_path / "c.yaml",
        folder_config(docs, connect={"sources": [{"type": "folder", "path": str(docs), "glob": "**/*.rst"}]}),
    )
    done = cli("pipeline", "run", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 1
    assert "  EMPTY_CONTENT: the connect phase produced 0 sources" in done.stderr
    assert "    → Check connect.sources: the folder path (relative to the config file), glob" in done.stderr


@pytest.mark.slow
def test_a_loopback_crawl_names_allowed_private_hosts_and_that_fix_lets_it_through(tmp_path: Path):
    runs = str(tmp_path / "runs")
    with serve_script({"/": body(PAGE, "text/html")}) as site:
        source = {"type": "crawl", "url": f"{site.base}/", "max_pages": 5, "requests_per_second": 100}
        blocked = write_config(
            tmp_path / "site.yaml", {"connect": {"sources": [source]}, "index": {"embedding_model": "hash"}}
        )
        refused = cli("pipeline", "run", str(blocked), "--runs-dir", runs)
        assert refused.returncode == 1
        assert f"DOMAIN_BLOCKED {site.base}/" in refused.stderr
        fix = f"add '127.0.0.1:{site.port}' to connect.allowed_private_hosts"
        assert fix in refused.stderr
        assert "Remove the entry" not in refused.stderr  # the user never wrote a blocked_domains entry
        assert "EMPTY_CONTENT" in refused.stderr
        fixed = write_config(
            tmp_path / "site.yaml",
            {
                "connect": {"sources": [source], "allowed_private_hosts": [f"127.0.0.1:{site.port}"]},
                "index": {"embedding_model": "hash"},
            },
        )
        done = cli("pipeline", "run", str(fixed), "--runs-dir", runs)
    assert done.returncode == 0, done.stderr
    assert "completed: 1 sources" in done.stdout


def test_a_blocked_domain_the_user_wrote_says_to_remove_it(tmp_path: Path):
    source = {"type": "url", "url": "https://docs.example.org/page"}
    config = write_config(
        tmp_path / "c.yaml",
        {"connect": {"sources": [source], "blocked_domains": ["example.org"]}, "index": {"embedding_model": "hash"}},
    )
    done = cli("pipeline", "run", str(config), "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 1
    assert "host 'docs.example.org' is in blocked_domains ('example.org')" in done.stderr
    assert "→ Remove the entry from connect.blocked_domains" in done.stderr


def _hub_cache_model(cache: Path, repo: str) -> None:
    """A model laid out as the Hugging Face hub caches it (refs/main -> a snapshot folder)."""
    folder = cache / f"models--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}", encoding="utf-8")
    (snapshot / "modules.json").write_text("[]", encoding="utf-8")
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(snapshot.name, encoding="utf-8")


@pytest.mark.parametrize("command", ["config validate", "pipeline run"])
def test_a_sentence_transformers_model_not_on_disk_is_config_invalid_before_a_run_exists(tmp_path: Path, command: str):
    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nText.\n"})
    config = write_config(
        tmp_path / "c.yaml", folder_config(docs, index={"embedding_model": "sentence-transformers:no-such-model"})
    )
    empty_cache = tmp_path / "hub"
    empty_cache.mkdir()
    env = {"SENTENCE_TRANSFORMERS_HOME": str(empty_cache), "HF_HUB_OFFLINE": "1"}
    done = cli(*command.split(), str(config), env=env)  # the runs folder: ./runs, in tmp_path
    assert done.returncode == 2
    assert done.stderr.startswith("CONFIG_INVALID: pipeline config: index.embedding_model ")
    assert "'sentence-transformers/no-such-model' is not on this machine" in done.stderr
    assert str(empty_cache) in done.stderr and "Name a model folder on this machine" in done.stderr
    assert "internet" not in done.stderr.lower() and "Traceback" not in done.stderr
    assert not (tmp_path / "runs").exists()  # no run was created


def test_a_model_in_the_hub_cache_and_a_missing_cross_encoder_folder(tmp_path: Path):
    docs = write_tree(tmp_path / "docs", {"a.md": "# A\n\nText.\n"})
    cache = tmp_path / "hub"
    _hub_cache_model(cache, "sentence-transformers/all-mpnet-base-v2")
    env = {"SENTENCE_TRANSFORMERS_HOME": str(cache)}
    cached = write_config(
        tmp_path / "c.yaml", folder_config(docs, index={"embedding_model": "sentence-transformers:all-mpnet-base-v2"})
    )
    assert cli("config", "validate", str(cached), env=env).returncode == 0
    reranked = write_config(
        tmp_path / "r.yaml",
        folder_config(
            docs,
            serve={"retrieval": {"reranker": {"enabled": True, "model": f"cross-encoder:{tmp_path / 'no-model'}"}}},
        ),
    )
    done = cli("config", "validate", str(reranked))
    assert done.returncode == 2
    assert "serve.retrieval.reranker.model" in done.stderr and "does not exist" in done.stderr
