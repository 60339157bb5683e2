"""Rule-based enrichment of chunks (no LLM): language, regex tags, sections, dates, taxonomy.

- language: lingua (see ``language.py``) → ``metadata.language`` (ISO 639-1); a chunk with
  little prose takes its document's language;
- ``regex_tags``: every match's first capture group (the whole match without groups) →
  ``metadata.tags`` as ``"<tag_name>:<value>"``; flags are JavaScript-style (``g`` all
  matches, ``i`` ignore case, ``m`` multiline, ``s`` dot-all, ``u`` no-op, ``x`` verbose);
- ``section_patterns``: matching section names → ``metadata.custom.sections``, and the first
  one becomes ``position.section`` when the chunker found none;
- ``extract_dates``: absolute dates written as ISO (2024-03-12), 2024/03/12, 12 March 2024,
  March 12, 2024 or March 2024 (English month names) → ``metadata.custom.dates`` in ISO 8601
  (``YYYY-MM-DD``, or ``YYYY-MM`` for a month). Relative dates ("yesterday") are ignored:
  they would depend on the day of the run;
- ``taxonomy``: a category whose term occurs as a whole word (case-insensitive) → its name
  in ``metadata.tags``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from indexfoundry.errors import ConfigInvalid
from indexfoundry.models.config import EnrichRules, NormalizeConfig
from indexfoundry.models.records import DocumentChunk
from indexfoundry.phases.base import package_version
from indexfoundry.storage.workcache import WorkCache

_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "u": 0, "g": 0}

_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_DATE_PATTERNS = [
    re.compile(r"(?<![\d-])" + _YEAR + r"-(?P<mon>\d{2})-(?P<d>\d{2})(?![\d])"),
    re.compile(r"(?<![\d/])" + _YEAR + r"/(?P<mon>\d{1,2})/(?P<d>\d{1,2})(?![\d/])"),
    re.compile(r"\b" + _DAY + r"\s+" + _MONTH + r",?\s+" + _YEAR + r"\b", re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r"\s+" + _DAY + r",?\s+" + _YEAR + r"\b", re.IGNORECASE),
    re.compile(r"\b" + _MONTH + r"\s+" + _YEAR + r"\b", re.IGNORECASE),
]


@dataclass(frozen=True)
class CompiledTag:
    name: str
    regex: re.Pattern[str]
    all_matches: bool


def _compile(pattern: str, flags: int, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise ConfigInvalid(
            f"{what}: invalid regex {pattern!r}: {exc}",
            suggestion="Fix the pattern (Python 're' syntax)",
            details={"pattern": pattern},
        ) from None


def compile_tags(rules: EnrichRules) -> list[CompiledTag]:
    """Compile ``regex_tags``; an invalid pattern or flag is CONFIG_INVALID naming the pattern."""
    out: list[CompiledTag] = []
    for tag in rules.regex_tags:
        flags = 0
        for flag in tag.flags:
            if flag not in _FLAGS:
                raise ConfigInvalid(
                    f"regex_tags '{tag.tag_name}': unknown flag '{flag}' for pattern {tag.pattern!r}",
                    suggestion="Use the flags g, i, m, s, u or x",
                    details={"pattern": tag.pattern},
                )
            flags |= _FLAGS[flag]
        regex = _compile(tag.pattern, flags, f"regex_tags '{tag.tag_name}'")
        out.append(CompiledTag(tag.tag_name, regex, "g" in tag.flags))
    return out


def compile_sections(rules: EnrichRules) -> list[tuple[str, re.Pattern[str]]]:
    """Compile ``section_patterns`` (multiline, so ``^`` anchors at line starts)."""
    return [
        (s.section_name, _compile(s.pattern, re.MULTILINE, f"section_patterns '{s.section_name}'"))
        for s in rules.section_patterns
    ]


def compile_taxonomy(rules: EnrichRules) -> list[tuple[str, re.Pattern[str]]]:
    """One whole-word, case-insensitive regex per category."""
    out: list[tuple[str, re.Pattern[str]]] = []
    for category, terms in sorted(rules.taxonomy.items()):
        words = [re.escape(t.strip()) for t in terms if t.strip()]
        if words:
            out.append((category, re.compile(r"(?<!\w)(?:" + "|".join(words) + r")(?!\w)", re.IGNORECASE)))
    return out


def regex_values(tag: CompiledTag, text: str) -> list[str]:
    """Values a tag rule extracts from ``text``."""
    matches = tag.regex.finditer(text) if tag.all_matches else filter(None, [tag.regex.search(text)])
    values: list[str] = []
    for match in matches:
        value = match.group(1) if tag.regex.groups else match.group(0)
        if value and value.strip():
            values.append(value.strip())
    return values


def extract_dates(text: str) -> list[str]:
    """Absolute dates in ``text`` as sorted, distinct ISO 8601 strings."""
    found: set[str] = set()
    taken: list[tuple[int, int]] = []
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in taken):
                continue  # "March 2024" inside "12 March 2024" was already read
            groups = match.groupdict()
            year = int(groups["year"])
            month = int(groups["mon"]) if groups.get("mon") else _MONTHS[groups["month"].lower()]
            day_text = groups.get("d") or groups.get("day")
            try:
                if day_text is None:
                    dt.date(year, month, 1)
                    value = f"{year:04d}-{month:02d}"
                else:
                    value = dt.date(year, month, int(day_text)).isoformat()
            except ValueError:
                continue
            found.add(value)
            taken.append((match.start(), match.end()))
    return sorted(found)


def effective_rules(config: NormalizeConfig) -> tuple[EnrichRules, bool]:
    """The enrichment rules of a pipeline config, and whether to detect languages (both the
    top-level ``detect_language`` and the rules' own must allow it)."""
    rules = config.enrich or EnrichRules()
    return rules, config.detect_language and rules.detect_language


@dataclass(frozen=True)
class Enriched:
    """What enrichment found in one chunk; the enrichment report's counts are sums of these."""

    changed: bool  # a field took another value (the chunk was copied)
    language: str | None
    tags: tuple[str, ...]
    sections: tuple[str, ...]
    dates: tuple[str, ...]


def enrich_each(
    chunks: list[DocumentChunk],
    rules: EnrichRules,
    detect_language: bool | None = None,
    cache: WorkCache | None = None,
) -> list[tuple[DocumentChunk, Enriched]]:
    """Apply ``rules`` to every chunk: each enriched chunk with what was found in it. ``cache``
    (the runs folder's work cache) keeps detected languages across runs."""
    detect = rules.detect_language if detect_language is None else detect_language
    tags = compile_tags(rules)
    sections = compile_sections(rules)
    taxonomy = compile_taxonomy(rules)
    languages: list[str | None] = [None] * len(chunks)
    if detect and chunks:
        from indexfoundry.phases.normalize.language import detect_grouped_languages

        languages = detect_grouped_languages([c.content.text for c in chunks], [c.doc_id for c in chunks], cache)
    out: list[tuple[DocumentChunk, Enriched]] = []
    for chunk, language in zip(chunks, languages, strict=True):
        text = chunk.content.text
        chunk_tags = set(chunk.metadata.tags or [])
        for tag in tags:
            chunk_tags.update(f"{tag.name}:{value}" for value in regex_values(tag, text))
        chunk_tags.update(category for category, regex in taxonomy if regex.search(text))
        custom = dict(chunk.metadata.custom or {})
        matched = [name for name, regex in sections if regex.search(text)]
        if matched:
            custom["sections"] = matched
        dates: list[str] = []
        if rules.extract_dates:
            dates = extract_dates(text)
            if dates:
                custom["dates"] = dates
        update = {
            "language": language if detect else chunk.metadata.language,
            "tags": sorted(chunk_tags) or None,
            "custom": custom or None,
        }
        section = matched[0] if matched and chunk.position.section is None else None
        if section is None and all(getattr(chunk.metadata, key) == value for key, value in update.items()):
            new = chunk  # nothing to add: the same chunk (the common case, and no copy of it)
        else:
            metadata = chunk.metadata.model_copy(update=update)
            position = chunk.position if section is None else chunk.position.model_copy(update={"section": section})
            new = chunk.model_copy(update={"metadata": metadata, "position": position})
        found = Enriched(new is not chunk, language or None, tuple(sorted(chunk_tags)), tuple(matched), tuple(dates))
        out.append((new, found))
    return out


@dataclass
class EnrichmentCounts:
    """The counts of an enrichment report, added up chunk by chunk (or document by document)."""

    chunks: int = 0
    enriched: int = 0
    languages: Counter[str] = field(default_factory=Counter)
    tags: Counter[str] = field(default_factory=Counter)
    sections: Counter[str] = field(default_factory=Counter)
    dates: int = 0

    def add(self, found: Enriched) -> None:
        self.chunks += 1
        self.enriched += found.changed
        if found.language:
            self.languages[found.language] += 1
        self.tags.update(found.tags)
        self.sections.update(found.sections)
        self.dates += len(found.dates)


def enrichment_report(rules: EnrichRules, detect: bool, counts: EnrichmentCounts) -> dict[str, Any]:
    """``metadata_enrichment.json``: the rules and what they found."""
    return {
        "rules": rules.model_dump(mode="json"),
        "detect_language": detect,
        "language_detector": f"lingua-language-detector@{package_version('lingua-language-detector')} (low accuracy)"
        if detect
        else None,
        "chunks": counts.chunks,
        "chunks_enriched": counts.enriched,
        "languages": dict(sorted(counts.languages.items())),
        "tags": dict(sorted(counts.tags.items())),
        "sections": dict(sorted(counts.sections.items())),
        "dates_found": counts.dates,
    }


def enrich_chunks(
    chunks: list[DocumentChunk],
    rules: EnrichRules,
    detect_language: bool | None = None,
    cache: WorkCache | None = None,
) -> tuple[list[DocumentChunk], dict[str, Any]]:
    """Apply ``rules`` to every chunk; returns new chunks and the enrichment report. ``cache``
    (the runs folder's work cache) keeps detected languages across runs."""
    detect = rules.detect_language if detect_language is None else detect_language
    counts = EnrichmentCounts()
    out = []
    for chunk, found in enrich_each(chunks, rules, detect, cache):
        counts.add(found)
        out.append(chunk)
    return out, enrichment_report(rules, detect, counts)
