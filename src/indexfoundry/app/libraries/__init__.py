"""Many libraries, many versions, one MCP server (``--library NAME@VERSION=TARGET``, ``libraries.yaml``).

A library version is served from a *target*: a run id (served as is), a pipeline config file
(built with ``api.pipeline_run``, a completed run of the same config reused, rebuilt on the
previous run as base when the file changes), or a docs folder (docs mode: built, reused and
kept fresh as ``--docs`` does). Versions are compared with
``packaging``'s PEP 440 rules; a version that is not PEP 440 only matches exactly and sorts
below the others. A version query is an exact version, ``latest``, ``18.x`` / ``18.*``, or a
range (``>=18 <19``, ``>=18,<19``, ``~=18.2``), and picks the highest match.

With a ``libraries.yaml``, the file is re-read whenever it changes (checked on every call):
a library or version removed from it is no longer listed, searched or read.

Remote libraries are kept fresh: a config whose sources are fetched (url, sitemap, crawl,
llms_txt, a remote PDF) or read from git (repo) is rebuilt every ``refresh_interval_s``
(default one hour; per entry in ``libraries.yaml``) as a run on the served run
(``--base``): pages are revalidated with conditional requests (ETag / Last-Modified, 304s
download nothing), unchanged documents are not extracted or embedded again, pages that now
answer 404/410 or left the sitemap are gone from the new run. The new run replaces the served
one at once (queries meanwhile answer from the old run); a refresh that finds nothing new is
discarded, so the served run and its cursors stay the same, and a refresh that fails (or that
the shrink guard refuses) leaves the served run as it is.

The modules: ``entries`` (what a flag or the file names), ``versions`` (which version a query
picks), ``library`` (one served version: its run, built and refreshed), ``registry`` (the set one
server serves, re-read on change and refreshed in the background), ``search`` (the one merge of
a search over many libraries, and its pages within a token budget), ``reader`` (listing,
searching and reading them through ``Run`` handles).
"""

from indexfoundry.app.libraries.entries import LibrariesFile, LibraryEntry, parse_library_flag, read_libraries_file
from indexfoundry.app.libraries.library import DEFAULT_REFRESH_S, Library, has_remote_sources, same_content
from indexfoundry.app.libraries.reader import LibraryReader, iso_time
from indexfoundry.app.libraries.registry import LibraryRegistry
from indexfoundry.app.libraries.search import LibrarySearch, LibrarySearchPage, search_libraries
from indexfoundry.app.libraries.versions import pick_version, version_order

__all__ = [
    "DEFAULT_REFRESH_S",
    "LibrariesFile",
    "Library",
    "LibraryEntry",
    "LibraryReader",
    "LibraryRegistry",
    "LibrarySearch",
    "LibrarySearchPage",
    "has_remote_sources",
    "iso_time",
    "parse_library_flag",
    "pick_version",
    "read_libraries_file",
    "same_content",
    "search_libraries",
    "version_order",
]
