"""The PDF facts helper: PDF dates, and encrypted or broken PDFs."""

from __future__ import annotations

from pathlib import Path

import pytest

from indexfoundry.errors import IndexFoundryError
from indexfoundry.phases.connect.pdf import pdf_date_to_iso, pdf_info


@pytest.mark.parametrize(
    ("raw", "iso"),
    [
        ("D:20080424142424+09'00'", "2008-04-24T14:24:24+09:00"),
        ("D:20201002001208Z", "2020-10-02T00:12:08Z"),
        ("D:20150722100404Z00'00'", "2015-07-22T10:04:04Z"),
        ("D:2021", "2021-01-01T00:00:00"),
        ("", None),
        ("yesterday", None),
    ],
)
def test_pdf_dates_become_iso_8601(raw: str, iso: str | None):
    assert pdf_date_to_iso(raw) == iso


def test_pdf_info_of_an_encrypted_or_broken_pdf_is_a_parse_error(corpora: Path):
    with pytest.raises(IndexFoundryError) as encrypted:
        pdf_info(corpora / "pdf/edge/password.pdf")
    assert encrypted.value.code == "PARSE_ERROR" and encrypted.value.details["encrypted"]
    with pytest.raises(IndexFoundryError) as broken:
        pdf_info(corpora / "pdf/edge/invalid.pdf")
    assert broken.value.code == "PARSE_ERROR"
