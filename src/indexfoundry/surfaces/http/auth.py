"""API keys: loaded from an environment variable or a key file (never from the config file).

A presented key is hashed with SHA-256 and compared with every known key's digest using
``hmac.compare_digest``, without stopping at the first match, so the time taken does not
depend on which key (if any) matched. A refused key gets the same answer as a missing one.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, ValidationError

from indexfoundry.errors import ConfigInvalid, IndexFoundryError
from indexfoundry.models.base import Strict
from indexfoundry.models.config import read_config_file
from indexfoundry.models.validation import validation_error


class KeyEntry(Strict):
    """One key of the key file: the key itself or its SHA-256, and what it may search."""

    name: str = Field(min_length=1, max_length=100, description="Label shown in the request log")
    key: str | None = Field(default=None, min_length=16, description="The key (prefer sha256)")
    sha256: str | None = Field(
        default=None, pattern=r"^[0-9a-f]{64}$", description="Hex SHA-256 of the key (the key itself is not stored)"
    )
    namespaces: list[str] | None = Field(default=None, description="Namespaces this key may search (null: all)")


class KeyFile(Strict):
    """The API key file (JSON or YAML): ``{"keys": [{"name", "sha256" | "key", "namespaces"}]}``."""

    keys: list[KeyEntry] = Field(description="Known keys")


@dataclass(frozen=True)
class Principal:
    """Who made a request: the key's label and the namespaces it may search (None: all)."""

    name: str
    namespaces: frozenset[str] | None


@dataclass(frozen=True)
class _Known:
    digest: bytes
    principal: Principal


def key_digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


class KeyRing:
    """The keys a server accepts."""

    def __init__(self, known: list[_Known]) -> None:
        self._known = known

    def __len__(self) -> int:
        return len(self._known)

    @classmethod
    def load(cls, env_var: str, key_file: Path | None) -> KeyRing:
        """Keys from ``$env_var`` (comma-separated, any namespace) and from ``key_file``."""
        known: list[_Known] = []
        raw = os.environ.get(env_var, "")
        for index, key in enumerate(k.strip() for k in raw.split(",")):
            if not key:
                continue
            if len(key) < 16:
                raise ConfigInvalid(
                    f"an API key in ${env_var} is shorter than 16 characters",
                    suggestion="Use long random keys, e.g. from secrets.token_urlsafe()",
                )
            known.append(_Known(key_digest(key), Principal(f"env-{index + 1}", None)))
        if key_file is not None:
            try:
                parsed = KeyFile.model_validate(read_config_file(key_file))
            except ValidationError as exc:
                raise validation_error(exc, f"API key file {key_file}") from None
            for entry in parsed.keys:
                if (entry.key is None) == (entry.sha256 is None):
                    raise ConfigInvalid(
                        f"API key '{entry.name}' in {key_file} needs exactly one of 'key' or 'sha256'",
                        suggestion="Store the key's SHA-256 (sha256sum) rather than the key",
                    )
                digest = bytes.fromhex(entry.sha256) if entry.sha256 else key_digest(entry.key or "")
                spaces = frozenset(entry.namespaces) if entry.namespaces is not None else None
                known.append(_Known(digest, Principal(entry.name, spaces)))
        return cls(known)

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal of ``presented``, or None; constant time in which key matched."""
        if not presented:
            return None
        digest = key_digest(presented)
        found: Principal | None = None
        for known in self._known:
            if hmac.compare_digest(digest, known.digest) and found is None:
                found = known.principal
        return found


def auth_error() -> IndexFoundryError:
    """The one answer for a missing, unknown or malformed key (no hint which)."""
    return IndexFoundryError(
        "a valid API key is required",
        code="AUTH_REQUIRED",
        suggestion="Send the key as 'Authorization: Bearer KEY' or 'X-API-Key: KEY'",
    )


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request carries, from ``X-API-Key`` or an ``Authorization: Bearer`` header."""
    if x_api_key:
        return x_api_key.strip()
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return None
