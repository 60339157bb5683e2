"""Sections of a page: by heading or breadcrumb, ending at the next heading of the same level."""

from __future__ import annotations

from indexfoundry.models.records import ExtractedDocument, Heading
from indexfoundry.retrieval.pages import find_section, sections_of

TEXT = (
    "# Guide\n\nIntro — café.\n\n## Config\n\nConfig text.\n\n### Theme\n\nThème text.\n\n## Install\n\nInstall text.\n"
)


def _doc(text: str) -> ExtractedDocument:
    headings = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            offset = len("\n".join(text.split("\n")[: line_no - 1]).encode("utf-8")) + (1 if line_no > 1 else 0)
            headings.append(Heading(level=level, text=line.lstrip("#").strip(), byte_start=offset, line=line_no))
    return ExtractedDocument(
        doc_id="d" * 64,
        uri="docs/guide.md",
        format="markdown",
        content_hash="c" * 64,
        content_type="text/markdown",
        text_path="extracted/x.txt",
        text_sha256="t" * 64,
        char_count=len(text),
        title="Guide",
        headings=headings,
    )


def _body(section) -> str:
    return TEXT.encode("utf-8")[section.byte_start : section.byte_end].decode("utf-8")


def test_sections_carry_breadcrumbs_and_end_at_the_next_heading_of_the_same_level():
    sections = sections_of(_doc(TEXT), len(TEXT.encode("utf-8")))
    assert [s.breadcrumb for s in sections] == ["Guide", "Guide > Config", "Guide > Config > Theme", "Guide > Install"]
    config = _body(sections[1])
    assert config.startswith("## Config") and "Thème text." in config and "Install" not in config
    assert _body(sections[2]).startswith("### Theme")
    assert _body(sections[3]).endswith("Install text.\n")


def test_a_section_is_found_by_heading_text_or_by_the_tail_of_its_breadcrumb():
    sections = sections_of(_doc(TEXT), len(TEXT.encode("utf-8")))
    assert [s.breadcrumb for s in find_section(sections, "theme")] == ["Guide > Config > Theme"]
    assert [s.breadcrumb for s in find_section(sections, "## Config")] == ["Guide > Config"]
    assert [s.breadcrumb for s in find_section(sections, "Config > Theme")] == ["Guide > Config > Theme"]
    assert [s.breadcrumb for s in find_section(sections, "Guide > Config > Theme")] == ["Guide > Config > Theme"]
    assert find_section(sections, "Install > Theme") == []
    assert find_section(sections, "Nope") == []
