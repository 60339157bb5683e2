"""Decoding bytes to text: BOM, declared charset, <meta charset>, UTF-16 and cp1252 sniffing."""

from __future__ import annotations

import codecs

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.extract.text import charset_from_content_type, decode_text, meta_charset


def test_a_bom_wins_over_a_declared_charset():
    data = codecs.BOM_UTF8 + "Größe".encode()
    assert decode_text(data, declared="iso-8859-1") == ("Größe", "utf-8-sig")


def test_the_declared_charset_is_used_before_utf8():
    data = "café".encode("iso-8859-15")
    text, encoding = decode_text(data, declared="iso-8859-15")
    assert text == "café"
    assert encoding == "iso8859-15"


def test_html_reads_latin1_labels_as_windows_1252():
    data = b"<p>\x93quoted\x94 \x80</p>"
    text, encoding = decode_text(data, declared="iso-8859-1", html=True)
    assert text == "<p>\u201cquoted\u201d €</p>"
    assert encoding == "cp1252"


def test_a_meta_charset_is_honoured_for_html_only():
    data = '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r"><p>Привет</p>'.encode("koi8-r")
    assert meta_charset(data) == "koi8-r"
    assert decode_text(data, html=True)[0].endswith("Привет</p>")


def test_utf16_without_a_bom_is_sniffed():
    data = "plain text in UTF-16, no BOM\n".encode("utf-16-le")
    assert decode_text(data) == ("plain text in UTF-16, no BOM\n", "utf-16-le")


def test_undeclared_legacy_text_prefers_windows_1252():
    data = "Der Preis betrug 15,50 € und war köstlich. L'été était très chaud.".encode("cp1252")
    text, encoding = decode_text(data)
    assert encoding == "cp1252"
    assert "très" in text and "€" in text


def test_line_endings_are_normalised():
    assert decode_text(b"a\r\nb\rc\n")[0] == "a\nb\nc\n"


def test_binary_data_is_a_parse_error():
    with pytest.raises(IndexFoundryError) as caught:
        decode_text(bytes(range(256)) * 4 + b"\x00\x00\x00")
    assert caught.value.code == "PARSE_ERROR"


def test_the_charset_parameter_is_read_from_a_content_type():
    assert charset_from_content_type('text/html; charset="Shift_JIS"') == "Shift_JIS"
    assert charset_from_content_type("text/html") is None


def test_a_charset_kept_in_extract_options_is_the_declared_one():
    from indexfoundry.phases.extract.text import declared_charset

    assert declared_charset("text/html", {"charset": "koi8-r"}) == "koi8-r"
    assert declared_charset("text/html; charset=utf-8", {"charset": "koi8-r"}) == "utf-8"
    assert declared_charset("text/plain", None) is None
