"""API keys: sources, constant-time lookup, namespaces, and refusing bad key files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.surfaces.http.auth import KeyRing, presented_key


def test_keys_come_from_the_environment_variable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("KEYS", "first-key-0123456789, second-key-0123456789")
    ring = KeyRing.load("KEYS", None)
    assert len(ring) == 2
    principal = ring.authenticate("second-key-0123456789")
    assert principal is not None and principal.namespaces is None
    assert ring.authenticate("third-key-0123456789") is None
    assert ring.authenticate("") is None


def test_key_file_entries_match_by_sha256_and_carry_their_namespaces(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("NOPE", raising=False)
    path = tmp_path / "keys.json"
    digest = hashlib.sha256(b"hashed-key-0123456789").hexdigest()
    path.write_text(json.dumps({"keys": [{"name": "ci", "sha256": digest, "namespaces": ["docs"]}]}), "utf-8")
    principal = KeyRing.load("NOPE", path).authenticate("hashed-key-0123456789")
    assert principal is not None
    assert principal.name == "ci" and principal.namespaces == frozenset({"docs"})


@pytest.mark.parametrize(
    "content",
    [
        {"keys": [{"name": "x"}]},
        {"keys": [{"name": "x", "key": "short"}]},
        {"keys": [{"name": "x", "sha256": "zz"}]},
        {"keys": [{"name": "x", "key": "k" * 20, "sha256": "a" * 64}]},
        {"keys": [], "extra": 1},
    ],
)
def test_a_bad_key_file_is_config_invalid(tmp_path: Path, content):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(IndexFoundryError) as info:
        KeyRing.load("NOPE", path)
    assert info.value.code == "CONFIG_INVALID"


def test_a_short_key_in_the_environment_is_refused(monkeypatch):
    monkeypatch.setenv("KEYS", "tiny")
    with pytest.raises(IndexFoundryError) as info:
        KeyRing.load("KEYS", None)
    assert info.value.code == "CONFIG_INVALID"


@pytest.mark.parametrize(
    ("authorization", "x_api_key", "expected"),
    [
        ("Bearer abc", None, "abc"),
        ("bearer  abc ", None, "abc"),
        ("Basic abc", None, None),
        (None, "xyz", "xyz"),
        ("Bearer abc", "xyz", "xyz"),
        (None, None, None),
    ],
)
def test_the_key_is_read_from_x_api_key_or_a_bearer_token(authorization, x_api_key, expected):
    assert presented_key(authorization, x_api_key) == expected
