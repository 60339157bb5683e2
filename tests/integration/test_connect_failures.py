"""Fetch failures against real misbehaving servers on 127.0.0.1: timeouts, endless bodies, SSRF
redirects, retries — and a run that loses no good source to a bad one."""

from __future__ import annotations

import http.server
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from indexfoundry import api
from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import ConnectConfig, parse_pipeline_config
from indexfoundry.phases.connect.net import Fetcher, FetchPolicy
from indexfoundry.storage.atomic import iter_jsonl
from indexfoundry.storage.layout import RunLayout
from tests.conftest import SAMPLE_DOCS
from tests.integration.connect_servers import Served, body, endless, flaky, redirect, serve_script, stall
from tests.integration.test_connect_sitemap import remote_config, rows, run_connect


def policy(**connect: Any) -> FetchPolicy:
    settings: dict[str, Any] = {"sources": [{"type": "url", "url": "http://x"}], "timeout_ms": 1000, **connect}
    return FetchPolicy.from_config(ConnectConfig.model_validate(settings))


def fetch_error(fetch_policy: FetchPolicy, url: str, **kwargs: Any) -> IndexFoundryError:
    with Fetcher(fetch_policy) as fetcher, pytest.raises(IndexFoundryError) as caught:
        fetcher.get(url, **kwargs)
    return caught.value


def test_a_server_that_stalls_fails_with_fetch_timeout_within_the_configured_timeout():
    with serve_script({"/slow": stall()}) as server:
        started = time.monotonic()
        error = fetch_error(policy(allow_private_networks=True, max_retries=0), f"{server.base}/slow")
        elapsed = time.monotonic() - started
    assert error.code == "FETCH_TIMEOUT" and error.recoverable
    assert 0.9 <= elapsed < 2.5


def test_a_timeout_is_retried_and_a_server_that_answers_the_second_time_succeeds(tmp_path: Path):
    def once_slow(handler: http.server.BaseHTTPRequestHandler, served: Served, count: int) -> None:
        if count == 1:
            served.release.wait(3)
            return
        body(b"late but fine")(handler, served, count)

    with (
        serve_script({"/p": once_slow}) as server,
        Fetcher(policy(allow_private_networks=True, max_retries=2, retry_backoff_ms=10)) as fetcher,
    ):
        result = fetcher.get(f"{server.base}/p")
    assert result.body == b"late but fine" and result.attempts == 2


def test_an_endless_body_is_cut_at_max_file_size_with_bounded_memory(tmp_path: Path):
    with serve_script({"/big": endless()}) as server:
        tracemalloc.start()
        try:
            error = fetch_error(
                policy(allow_private_networks=True, max_file_size_mb=4), f"{server.base}/big", to_dir=tmp_path
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert error.code == "FILE_TOO_LARGE"
    assert peak < 2 * 1024 * 1024  # the 4 MB read never sat in memory
    assert list(tmp_path.iterdir()) == []  # the partial temp file is gone


def test_a_declared_content_length_over_the_limit_is_refused_before_reading(tmp_path: Path):
    with serve_script({"/big": body(b"x" * 300_000)}) as server:
        error = fetch_error(policy(allow_private_networks=True, max_file_size_mb=0.1), f"{server.base}/big")
    assert error.code == "FILE_TOO_LARGE" and error.details["content_length"] == 300_000


@pytest.mark.parametrize("target", ["http://127.0.0.1:{other}/secret", "http://169.254.169.254/latest/meta-data/"])
def test_a_redirect_from_an_allowed_host_to_a_private_address_is_domain_blocked(target: str):
    with serve_script({"/secret": body(b"internal")}) as internal, serve_script({}) as public:
        location = target.format(other=internal.port)
        public_routes = {"/go": redirect(location)}
        with serve_script(public_routes) as allowed:
            # only the allowed host's exact address:port may be reached on loopback
            fetch_policy = policy(allowed_private_hosts=[f"127.0.0.1:{allowed.port}"])
            error = fetch_error(fetch_policy, f"{allowed.base}/go")
    assert error.code == "DOMAIN_BLOCKED"
    assert error.details["reason"] == "private_address"
    assert error.details["category"] in ("loopback", "link-local")
    assert internal.requests == [] and public.requests == []
    assert allowed.statuses("/go") == [302]


def test_a_redirect_to_a_non_http_scheme_is_domain_blocked():
    with serve_script({"/go": redirect("file:///etc/passwd")}) as server:
        error = fetch_error(policy(allow_private_networks=True), f"{server.base}/go")
    assert error.code == "DOMAIN_BLOCKED" and error.details["reason"] == "scheme"
    chain = error.details["redirect_chain"]
    assert chain[0] == f"{server.base}/go" and chain[1].startswith("file:") and len(chain) == 2


def test_loopback_is_blocked_unless_private_networks_are_allowed():
    with serve_script({"/p": body(b"ok")}) as server:
        error = fetch_error(policy(), f"{server.base}/p")
        assert error.code == "DOMAIN_BLOCKED" and server.requests == []
        with Fetcher(policy(allow_private_networks=True)) as fetcher:
            assert fetcher.get(f"{server.base}/p").body == b"ok"


def test_503_twice_then_200_succeeds_after_retries():
    with (
        serve_script({"/p": flaky(2, body(b"finally"))}) as server,
        Fetcher(policy(allow_private_networks=True, retry_backoff_ms=10)) as fetcher,
    ):
        result = fetcher.get(f"{server.base}/p")
        assert server.statuses("/p") == [503, 503, 200]
    assert result.body == b"finally" and result.attempts == 3


def test_retry_after_is_honoured_before_retrying_a_429():
    with (
        serve_script({"/p": flaky(1, body(b"ok"), code=429, retry_after="1")}) as server,
        Fetcher(policy(allow_private_networks=True, retry_backoff_ms=0)) as fetcher,
    ):
        started = time.monotonic()
        result = fetcher.get(f"{server.base}/p")
        elapsed = time.monotonic() - started
    assert result.body == b"ok" and elapsed >= 1.0


def test_a_404_is_not_retried_and_exhausted_retries_keep_the_last_status():
    with serve_script({"/busy": flaky(10, body(b"never"))}) as server:
        missing = fetch_error(policy(allow_private_networks=True, retry_backoff_ms=10), f"{server.base}/nope")
        busy = fetch_error(
            policy(allow_private_networks=True, retry_backoff_ms=10, max_retries=1), f"{server.base}/busy"
        )
        assert server.statuses("/nope") == [404] and server.statuses("/busy") == [503, 503]
    assert missing.code == "FETCH_FAILED" and not missing.recoverable and missing.details["status"] == 404
    assert busy.code == "FETCH_FAILED" and busy.recoverable and busy.details["attempts"] == 2


def test_a_pdf_served_as_octet_stream_is_stored_as_a_pdf(corpora: Path, runs_dir: Path):
    pdf = (corpora / "pdf/edge/simple1.pdf").read_bytes()
    with serve_script({"/download": body(pdf, "application/octet-stream")}) as server:
        layout, _ = run_connect(runs_dir, remote_config([{"type": "pdf", "source": f"{server.base}/download"}]))
    [record] = rows(layout)
    assert record["content_type"] == "application/pdf" and record["ext"] == "pdf"
    assert (layout.root / record["path"]).read_bytes() == pdf


def test_one_failing_source_loses_no_other_and_the_run_ends_partial_with_every_error_logged(tree, runs_dir: Path):
    docs = tree(SAMPLE_DOCS)
    page = b"# Remote page\n\nThe remote handbook explains retries and backoff for flaky servers.\n"
    with serve_script({"/good.md": body(page, "text/markdown"), "/slow.md": stall()}) as server:
        config = parse_pipeline_config(
            {
                "connect": {
                    "sources": [
                        {"type": "url", "url": f"{server.base}/good.md"},
                        {"type": "url", "url": f"{server.base}/missing.md"},
                        {"type": "url", "url": f"{server.base}/slow.md"},
                        {"type": "url", "url": "http://169.254.169.254/latest/meta-data/"},
                        {"type": "folder", "path": str(docs), "glob": "**/*.md"},
                    ],
                    "allowed_private_hosts": [f"127.0.0.1:{server.port}"],
                    "timeout_ms": 1000,
                    "max_retries": 0,
                },
                "normalize": {"chunk_strategy": "by_heading"},
                "index": {"embedding_model": "hash"},
            }
        )
        out = api.pipeline_run(config, runs_dir=runs_dir)
    assert out.status == "partial"
    layout = RunLayout(runs_dir / out.run_id)
    uris = {r["uri"] for r in iter_jsonl(layout.raw_manifest)}
    assert f"{server.base}/good.md" in uris and "docs/guide/install.md" in uris and len(uris) == 4
    errors = [json.loads(line) for line in layout.errors_log.read_text().splitlines()]
    codes = {e["uri"]: e["code"] for e in errors}
    assert codes == {
        f"{server.base}/missing.md": "FETCH_FAILED",
        f"{server.base}/slow.md": "FETCH_TIMEOUT",
        "http://169.254.169.254/latest/meta-data/": "DOMAIN_BLOCKED",
    }
    chunks = [c["source"]["uri"] for c in iter_jsonl(layout.chunks)]
    assert f"{server.base}/good.md" in chunks and "docs/index.md" in chunks
