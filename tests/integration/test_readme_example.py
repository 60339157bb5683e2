"""The README's library example (``### As a library``) runs as written and finds the example docs."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_library_example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("### As a library") :]
    match = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert match is not None, "the README's library section has no python block"
    return match.group(1)


@pytest.mark.model
def test_the_readme_library_example_indexes_the_example_docs_and_searches_them(tmp_path: Path):
    # From a copy of examples/ in the test folder (the cwd): the config names docs/ next to itself.
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_library_example(), "README.md", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "True completed"
    assert len(lines) == 4
    assert all("docs/" in line or ".md" in line for line in lines[1:])
