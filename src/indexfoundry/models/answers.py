"""The answers file of ``indexfoundry eval --answers``: questions keyed to the passage that answers them.

A question is found when a returned chunk holds its passage (see ``indexfoundry.app.answers``),
so the file measures what an agent reads first, not only which page it lands on.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from indexfoundry.models.base import Strict

ANSWERS_SCHEMA_VERSION = 1


class AnswerQuestion(Strict):
    """One question and the verbatim passage that answers it."""

    id: str = Field(min_length=1, description="Unique id of the question (stable across edits of the file)")
    question: str = Field(min_length=1, description="The question as a user asks it")
    passage: str = Field(
        min_length=1,
        description="A short span copied from the answering document; runs of whitespace count as one space",
    )
    file: str | None = Field(
        default=None,
        description="Path of the answering document, relative to its source root (e.g. 'user-guide/cli.md'); "
        "a chunk counts only when it comes from this document. None: any document may answer",
    )
    split: Literal["dev", "test"] | None = Field(
        default=None, description="dev: used for tuning; test: held out, reported once per change"
    )
    kind: str | None = Field(
        default=None, description="Free label grouping questions in the report (e.g. howto, default, troubleshoot)"
    )
    section: str | None = Field(
        default=None, description="Heading path above the passage when the file was written (informational)"
    )


class AnswersCorpus(Strict):
    """Which documents the questions were written against (informational)."""

    path: str = Field(description="Where the documents are, as the file's author refers to them")
    license: str | None = Field(default=None, description="License of the documents")
    note: str | None = Field(default=None, description="Anything a reader of the file should know about them")


class AnswersFile(Strict):
    """A set of passage-keyed questions (``indexfoundry eval --answers FILE``)."""

    schema_version: int = Field(default=ANSWERS_SCHEMA_VERSION, ge=1, description="Format version of this file")
    name: str | None = Field(default=None, description="Name of the question set")
    corpus: AnswersCorpus | None = Field(default=None, description="The documents the questions are about")
    how_written: str | None = Field(default=None, description="How the questions and passages were chosen")
    questions: list[AnswerQuestion] = Field(min_length=1, description="The questions, in report order")
