"""Language detection with lingua (deterministic, ISO 639-1 codes).

lingua's high-accuracy models for all 75 languages take ~1 GB of memory and ~9 s to load;
the low-accuracy mode over all languages takes ~70 MB and half a second, and is reliable on
texts of a sentence or more (chunks are at least ``min_chars`` long). The detector is built
once, on first use, so runs that do not detect languages never load it.

The low-accuracy mode is unreliable on very short texts (it calls "Set theme.name in the
config file to change the theme colours and fonts." French), so a chunk with less than
``MIN_SAMPLE_CHARS`` of prose takes the language of its whole document instead, and a
document with that little prose gets no language.
"""

from __future__ import annotations

import re
import threading
from functools import cache
from typing import Any

from indexfoundry.storage.hashing import sha256_json, sha256_text
from indexfoundry.storage.memo import Memo
from indexfoundry.storage.workcache import WorkCache

# Code and links say nothing about the language of the prose around them.
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?^[ \t]*\1[ \t]*$", re.S | re.M)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\w+://\S+")
_SAMPLE_CHARS = 2000
_MIN_LETTERS = 20
MIN_SAMPLE_CHARS = 120


# Languages of samples already detected in this process (storage/memo.py; on in docs mode; the
# detector is deterministic): a refresh after one edit detects only the changed chunks' languages.
_memo: Memo[str | None] = Memo(20_000)
_samples: Memo[str | None] = Memo(20_000)


@cache
def cache_kind() -> str:
    """What a detected language depends on besides the sample: the detector's version and mode
    (the key of the runs folder's work cache, storage/workcache.py)."""
    from importlib.metadata import version

    return f"language/lingua-{version('lingua-language-detector')}/all-languages-low-accuracy"


_detector_lock = threading.Lock()


@cache
def _built_detector() -> Any:
    from lingua import LanguageDetectorBuilder

    return LanguageDetectorBuilder.from_all_languages().with_low_accuracy_mode().build()


def _detector() -> Any:
    """The detector, built once per process (the preload thread may be building it: wait)."""
    with _detector_lock:
        return _built_detector()


def prepare_detector() -> None:
    """Build the detector and load its language models (lingua loads them on the first
    detection, about 0.3 s) ahead of a normalize phase that will need them (``Phase.prepare_ahead``)."""
    _detector().detect_language_of("The language models are loaded by a first detection.")


def _sample(text: str) -> str | None:
    prose = _URL.sub(" ", _INLINE_CODE.sub(" ", _FENCED.sub(" ", text)))
    sample = " ".join(prose.split())[:_SAMPLE_CHARS]
    if sum(map(str.isalpha, sample)) < _MIN_LETTERS:
        return None
    return sample


def _code(language: Any) -> str | None:
    if language is None:
        return None
    return str(language.iso_code_639_1.name).lower()


def detect_language(text: str) -> str | None:
    """ISO 639-1 code of the text's language, or None when there is too little prose to tell."""
    sample = _sample(text)
    if sample is None:
        return None
    return _code(_detector().detect_language_of(sample))


def detect_grouped_languages(texts: list[str], groups: list[str], cache: WorkCache | None = None) -> list[str | None]:
    """Languages of ``texts``; a text with too little prose of its own takes the language of
    all texts of its group (its document) joined, when those have enough. With ``cache`` (the
    runs folder's work cache) a group whose texts an earlier run saw takes its languages from
    there without a look at its texts, and a sample detected by any earlier run is not detected
    again: a rerun after one edit reads the changed document's chunks only."""
    if cache is None:
        return _detect_grouped(texts, groups, None)
    members: dict[str, list[int]] = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    # A group's languages depend on its texts alone, in order: their hashes are its key.
    keys = {group: sha256_json([sha256_text(texts[i]) for i in idx]) for group, idx in members.items()}
    stored = cache.get_many(group_cache_kind(), keys.values())
    out: list[str | None] = [None] * len(texts)
    todo: list[str] = []
    for group, idx in members.items():
        known = stored.get(keys[group])
        if not isinstance(known, list) or len(known) != len(idx):
            todo.append(group)
            continue
        for i, language in zip(idx, known, strict=True):
            out[i] = language
    if todo:
        idx = [i for group in todo for i in members[group]]
        found = _detect_grouped([texts[i] for i in idx], [groups[i] for i in idx], cache)
        for i, language in zip(idx, found, strict=True):
            out[i] = language
        cache.put_many(group_cache_kind(), {keys[group]: [out[i] for i in members[group]] for group in todo})
    return out


@cache
def group_cache_kind() -> str:
    """The work cache kind of a group's languages (the detector's, and the grouping rule's)."""
    return f"{cache_kind()}/groups-{_SAMPLE_CHARS}-{_MIN_LETTERS}-{MIN_SAMPLE_CHARS}"


def _detect_grouped(texts: list[str], groups: list[str], cache: WorkCache | None) -> list[str | None]:
    known = _samples.get_many(texts)
    fresh = {t: _sample(t) for t in texts if t not in known}
    _samples.put_many(fresh)
    samples = [known[t] if t in known else fresh[t] for t in texts]
    own = [s if s is not None and len(s) >= MIN_SAMPLE_CHARS else None for s in samples]
    # A group's joined sample is detected only for a group with a text too short of its own
    # (a document's other chunks all have theirs: detecting its whole prose too would cost one
    # more detection per document for nothing).
    short = {group for sample, group in zip(own, groups, strict=True) if sample is None}
    joined: dict[str, list[str]] = {}
    for sample, group in zip(samples, groups, strict=True):
        if sample is not None and group in short:
            joined.setdefault(group, []).append(sample)
    group_samples = {g: " ".join(parts)[:_SAMPLE_CHARS] for g, parts in joined.items()}
    group_samples = {g: s for g, s in group_samples.items() if len(s) >= MIN_SAMPLE_CHARS}
    wanted = {s for s in own if s is not None} | set(group_samples.values())
    found = _memo.get_many(sorted(wanted))
    todo = sorted(wanted - found.keys())
    if todo and cache is not None:
        stored = cache.get_many(cache_kind(), [sha256_text(s) for s in todo])
        hits = {s: stored[sha256_text(s)] for s in todo if sha256_text(s) in stored}
        found.update(hits)
        _memo.put_many(hits)
        todo = [s for s in todo if s not in hits]
    if todo:
        fresh = {
            s: _code(lang) for s, lang in zip(todo, _detector().detect_languages_in_parallel_of(todo), strict=True)
        }
        found.update(fresh)
        _memo.put_many(fresh)
        if cache is not None:
            cache.put_many(cache_kind(), {sha256_text(s): code for s, code in fresh.items()})
    out: list[str | None] = []
    for sample, group in zip(own, groups, strict=True):
        key = sample if sample is not None else group_samples.get(group)
        out.append(found[key] if key is not None else None)
    return out
