"""Content-free chunks (link definitions, bare link lists, lone images, headings only) are dropped
at normalize and counted; a chunk with a few words of prose is kept."""

from __future__ import annotations

import pytest

from indexfoundry.models.config import NormalizeConfig
from indexfoundry.models.records import ExtractedDocument, Heading
from indexfoundry.phases.normalize.build import _chunked
from indexfoundry.phases.normalize.contentless import content_free, drop_content_free

LINK_DEFS = (
    "[Customizing Your Theme]: ../user-guide/customizing-your-theme.md#using-the-theme-custom_dir\n"
    "[custom_dir]: ../user-guide/configuration.md#custom_dir\n"
    '[name]: ../user-guide/configuration.md#name "The name option"\n'
)


@pytest.mark.parametrize(
    "text",
    [
        LINK_DEFS,
        "## Build directories",
        "![Screenshot](img/screenshot.png)\n\n<img src='x.png'>\n",
        "- [Themes](themes.md)\n- [Plugins](plugins.md)\n* [API][api]\n1. [Install](install.md)\n",
        "| [a](a.md) | [b](b.md) |\n|---|---|\n| [c](c.md) | |\n",
        "<!-- -->\n---\n" + LINK_DEFS,
    ],
)
def test_residue_alone_is_content_free(text: str):
    assert content_free(text)


@pytest.mark.parametrize(
    "text",
    [
        "See the [User Guide] for more.\n" + LINK_DEFS,
        "![Screenshot](img/x.png)\n\n*Above: the indexer in progress*",
        "- [Themes](themes.md): how to write one\n",
        "```yaml\ntheme: mkdocs\n```",
        "```\n$ ls\n```",
    ],
)
def test_a_few_words_of_prose_or_code_keep_a_chunk(text: str):
    assert not content_free(text)


def test_a_document_made_only_of_residue_keeps_its_chunks():
    assert drop_content_free(["## A", LINK_DEFS], str) == (["## A", LINK_DEFS], 0)
    assert drop_content_free(["## A", "Some real words here."], str) == (["Some real words here."], 1)


def test_a_sections_trailing_link_definitions_are_not_a_chunk():
    body = "The bare minimum required for a custom theme is a main.html template. " * 20
    text = f"# Developing Themes\n\n## Creating a custom theme\n\n{body}\n\n{LINK_DEFS}"
    second = text.index("## Creating")
    doc = ExtractedDocument(
        doc_id="d" * 64,
        uri="docs/themes.md",
        format="markdown",
        content_hash="c" * 64,
        content_type="text/markdown",
        text_path="extracted/x.txt",
        text_sha256="e" * 64,
        char_count=len(text),
        headings=[
            Heading(level=1, text="Developing Themes", byte_start=0, line=1),
            Heading(level=2, text="Creating a custom theme", byte_start=second, line=3),
        ],
    )
    config = NormalizeConfig(chunk_strategy="by_heading", max_chars=1500)
    out = _chunked(doc, text, None, config)
    assert out.content_free == 2  # the link block, and "# Developing Themes" alone (too long to merge)
    assert all("[custom_dir]:" not in c.content.text for c in out.chunks)
    assert [c.chunk_index for c in out.chunks] == list(range(len(out.chunks)))


def _doc(text: str, fmt: str) -> ExtractedDocument:
    return ExtractedDocument(
        doc_id="d" * 64,
        uri="doc",
        format=fmt,  # type: ignore[arg-type]
        content_hash="c" * 64,
        content_type="text/plain",
        text_path="extracted/x.txt",
        text_sha256="e" * 64,
        char_count=len(text),
        headings=[
            Heading(level=1, text="One", byte_start=0, line=1),
            Heading(level=2, text="Two", byte_start=7, line=3),
        ],
    )


def test_only_markdown_and_html_documents_lose_content_free_chunks():
    text = "# One\n\n## Two\n\n" + "Some real words in here. " * 70
    config = NormalizeConfig(chunk_strategy="by_heading")
    markdown, plain = (
        _chunked(_doc(text, "markdown"), text, None, config),
        _chunked(_doc(text, "txt"), text, None, config),
    )
    assert markdown.content_free == 1 and len(plain.chunks) == len(markdown.chunks) + 1
    assert plain.content_free == 0 and plain.chunks[0].content.text == "# One"
