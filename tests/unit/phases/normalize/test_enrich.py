"""Rule-based enrichment: language, regex tags, sections, ISO dates, taxonomy, invalid rules."""

from __future__ import annotations

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.models.config import EnrichRules, NormalizeConfig
from indexfoundry.models.records import ChunkContent, ChunkMetadata, ChunkPosition, ChunkSource, DocumentChunk
from indexfoundry.phases.normalize.enrich import effective_rules, enrich_chunks, extract_dates
from indexfoundry.phases.normalize.language import detect_language
from indexfoundry.storage.hashing import sha256_text


def chunk(text: str, section: str | None = None, index: int = 0, doc: str = "d") -> DocumentChunk:
    return DocumentChunk(
        doc_id=doc * 64,
        chunk_id=sha256_text(f"{index}"),
        chunk_index=index,
        source=ChunkSource(type="markdown", uri="a.md", content_hash="c" * 64),
        content=ChunkContent(text=text, text_hash=sha256_text(text), char_count=len(text), token_count_approx=1),
        position=ChunkPosition(byte_start=0, byte_end=len(text.encode()), section=section),
        metadata=ChunkMetadata(content_type="text/markdown"),
    )


ENGLISH = (
    "The pipeline reads every document, splits it into chunks and stores their vectors in the index. "
    "Nothing is embedded twice."
)
FRENCH = (
    "Le pipeline lit chaque document, le découpe en morceaux et range leurs vecteurs dans l'index. "
    "Rien n'est calculé deux fois."
)
GERMAN = (
    "Die Pipeline liest jedes Dokument, zerlegt es in Abschnitte und speichert die Vektoren im Index. "
    "Nichts wird zweimal berechnet."
)
SPANISH = (
    "El proceso lee cada documento, lo divide en fragmentos y guarda sus vectores en el índice. "
    "Nada se calcula dos veces en ningún caso."
)


def test_language_is_detected_as_iso_639_1_and_is_deterministic():
    rules = EnrichRules()
    texts = [ENGLISH, FRENCH, GERMAN, SPANISH, "ok", "```\ncode\n```"]
    chunks = [chunk(t, index=i, doc=str(i)) for i, t in enumerate(texts)]
    out, report = enrich_chunks(chunks, rules)
    assert [c.metadata.language for c in out] == ["en", "fr", "de", "es", None, None]
    assert report["languages"] == {"de": 1, "en": 1, "es": 1, "fr": 1}
    again, _ = enrich_chunks(chunks, rules)
    assert again == out
    assert detect_language("```python\nprint('hello world, this is code')\n```\n" + FRENCH) == "fr"


def test_a_chunk_with_little_prose_takes_its_documents_language():
    chunks = [
        chunk(GERMAN, index=0, doc="a"),
        chunk("Siehe unten.", index=1, doc="a"),
        chunk("Voir plus bas.", index=2, doc="b"),
    ]
    out, _ = enrich_chunks(chunks, EnrichRules())
    assert [c.metadata.language for c in out] == ["de", "de", None]


def test_language_detection_can_be_turned_off_at_either_level():
    assert effective_rules(NormalizeConfig(detect_language=False))[1] is False
    assert effective_rules(NormalizeConfig(enrich=EnrichRules(detect_language=False)))[1] is False
    assert effective_rules(NormalizeConfig())[1] is True
    out, report = enrich_chunks([chunk(ENGLISH)], EnrichRules(detect_language=False))
    assert out[0].metadata.language is None and report["detect_language"] is False


def test_regex_tags_take_the_capture_group_and_honour_flags():
    rules = EnrichRules.model_validate(
        {
            "detect_language": False,
            "regex_tags": [
                {"pattern": r"ticket #(\d+)", "tag_name": "ticket"},
                {"pattern": r"version (\d+\.\d+)", "tag_name": "version", "flags": "i"},
                {"pattern": r"\bAPI\b", "tag_name": "mentions", "flags": "g"},
            ],
        }
    )
    text = "See Ticket #12 and ticket #7. VERSION 2.1 then version 3.0. The API."
    out, report = enrich_chunks([chunk(text)], rules)
    assert out[0].metadata.tags == ["mentions:API", "ticket:12", "ticket:7", "version:2.1"]
    assert report["tags"]["ticket:12"] == 1


@pytest.mark.parametrize(
    "rules",
    [
        {"regex_tags": [{"pattern": "(unclosed", "tag_name": "bad"}]},
        {"regex_tags": [{"pattern": "fine", "tag_name": "bad", "flags": "gq"}]},
        {"section_patterns": [{"pattern": "[z-a]", "section_name": "bad"}]},
    ],
)
def test_an_invalid_regex_or_flag_is_config_invalid_naming_the_pattern(rules: dict[str, object]):
    with pytest.raises(IndexFoundryError) as info:
        enrich_chunks([chunk(ENGLISH)], EnrichRules.model_validate(rules))
    assert info.value.code == "CONFIG_INVALID"
    pattern = next(iter(rules.values()))[0]["pattern"]  # type: ignore[index]
    assert info.value.details["pattern"] == pattern
    assert repr(pattern) in info.value.message


def test_section_patterns_name_sections_without_overriding_the_chunkers_heading():
    rules = EnrichRules.model_validate(
        {"detect_language": False, "section_patterns": [{"pattern": r"^ARTICLE \d+", "section_name": "articles"}]}
    )
    out, _ = enrich_chunks(
        [
            chunk("Preamble\nARTICLE 4 The parties agree."),
            chunk("ARTICLE 5", section="Terms", index=1),
            chunk("none", index=2),
        ],
        rules,
    )
    assert out[0].position.section == "articles" and out[0].metadata.custom == {"sections": ["articles"]}
    assert out[1].position.section == "Terms" and out[1].metadata.custom == {"sections": ["articles"]}
    assert out[2].position.section is None and out[2].metadata.custom is None


def test_dates_are_extracted_as_iso_8601():
    text = (
        "Released 2024-03-12, patched on 12 March 2024 and March 14th, 2024; planned for 2025/1/5. "
        "The roadmap covers Sept 2025. Not dates: 2024-02-30, version 1.2.3, 10/11/12, yesterday."
    )
    assert extract_dates(text) == ["2024-03-12", "2024-03-14", "2025-01-05", "2025-09"]
    rules = EnrichRules(detect_language=False, extract_dates=True)
    out, report = enrich_chunks([chunk(text)], rules)
    assert out[0].metadata.custom == {"dates": ["2024-03-12", "2024-03-14", "2025-01-05", "2025-09"]}
    assert report["dates_found"] == 4


def test_taxonomy_maps_whole_word_terms_to_categories_in_tags():
    rules = EnrichRules(
        detect_language=False, taxonomy={"safety": ["hazard", "risk"], "money": ["cost"], "none": ["zebra"]}
    )
    out, report = enrich_chunks([chunk("A Hazard to note, and the costs."), chunk("Risky costing.", index=1)], rules)
    assert out[0].metadata.tags == ["safety"]
    assert out[1].metadata.tags is None
    assert report["tags"] == {"safety": 1}
