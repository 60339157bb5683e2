"""A wheel that installs: ``python -m build`` makes an sdist and a wheel (from that sdist), the wheel
is installed (not editable) into a new virtual environment, and the README's quick start, its MCP
docs quick start and the web page run from that install — package data, static files, the
config's JSON Schema and the ``indexfoundry.surfaces`` entry point included.

The new environment gets its dependencies from the test's own environment (every package there
but IndexFoundry itself, added as a site directory), so nothing is downloaded."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.integration.mcp_support import free_port
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.model]


def run(*argv: str | Path, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-4000:])
    return done


def source_copy(into: Path) -> Path:
    """The repository's files (tracked and untracked, not ignored) copied to ``into``, so that the
    build writes its egg-info and build folders there and not in the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True, check=False
    )
    if listed.returncode != 0:
        pytest.skip("the repository is not a git checkout (the build copies its listed files)")
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    return into


def dependencies_dir(into: Path) -> Path:
    """A site directory holding every package of this environment except IndexFoundry's own
    (editable) install, as symlinks."""
    site = Path(sysconfig.get_paths()["purelib"])
    into.mkdir()
    for entry in site.iterdir():
        if re.match(r"(__editable__[._]+)?indexfoundry", entry.name, flags=re.I):
            continue
        (into / entry.name).symlink_to(entry)
    return into


def new_venv(folder: Path, wheel: Path, work: Path) -> Path:
    """A new virtual environment with ``wheel`` installed (no dependencies resolved: they come
    from ``dependencies_dir``)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = dependencies_dir(work / "dependencies")
    Path(purelib, "zz_dependencies.pth").write_text(f"import site; site.addsitedir({str(deps)!r})\n")
    env = clean_env()
    run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel, cwd=work, env=env)
    return folder


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without this checkout on the path and without IndexFoundry settings."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env = {k: v for k, v in env.items() if not k.startswith("INDEXFOUNDRY_")}
    return {**env, **extra}


async def docs_quick_start(command: Path, cwd: Path, env: dict[str, str]) -> tuple[list[str], str]:
    """The README's MCP docs quick start: ``indexfoundry mcp --docs ./docs`` with the SDK client."""
    params = StdioServerParameters(command=str(command), args=["mcp", "--docs", "./docs"], cwd=str(cwd), env=env)
    with (cwd / "mcp-stderr.log").open("a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = sorted(tool.name for tool in (await session.list_tools()).tools)
            answer = await session.call_tool("search_docs", {"query": "run the pipeline every night with cron"})
            assert not answer.is_error, answer
            return tools, json.dumps(answer.structured_content)


def test_the_built_wheel_installs_and_runs_the_quick_starts_and_the_web_page(tmp_path: Path):
    source = source_copy(tmp_path / "source")
    dist = tmp_path / "dist"
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, ".", cwd=source, env=clean_env())
    (sdist,) = dist.glob("indexfoundry-*.tar.gz")
    (wheel,) = dist.glob("indexfoundry-*-py3-none-any.whl")
    venv = new_venv(tmp_path / "venv", wheel, tmp_path)
    bin_dir = venv / "bin"
    env = clean_env(PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    work = tmp_path / "user"
    shutil.copytree(REPO / "examples", work / "examples")
    shutil.copytree(REPO / "docs", work / "docs")

    where = run(
        bin_dir / "python",
        "-c",
        "import indexfoundry, importlib.metadata as m; print(indexfoundry.__file__); "
        "print(*[e.value for e in m.entry_points(group='indexfoundry.surfaces')])",
        cwd=work,
        env=env,
    ).stdout.splitlines()
    assert where[0].startswith(str(venv)), where  # the wheel's copy, not this checkout
    assert where[1] == "indexfoundry.surfaces.http.provider:HTTP_SURFACE"
    schema = json.loads(run(bin_dir / "indexfoundry", "config", "schema", cwd=work, env=env).stdout)
    assert schema["title"] == "IndexFoundry pipeline config"

    # The README's quick start (after setup): index the example docs, search them.
    run(bin_dir / "indexfoundry", "pipeline", "run", "examples/docs.yaml", cwd=work, env=env)
    found = run(bin_dir / "indexfoundry", "search", "how do I install it", "--json", cwd=work, env=env)
    results = json.loads(found.stdout)["results"]
    assert results and all(r["source"]["uri"].startswith("docs/") for r in results)
    assert (work / "runs").is_dir()

    # The MCP docs quick start, its runs folder in the test's folder.
    docs_env = {**env, "INDEXFOUNDRY_RUNS_DIR": str(tmp_path / "docs-runs")}
    tools, answer = anyio.run(docs_quick_start, bin_dir / "indexfoundry", work, docs_env)
    assert {"search_docs", "get_page", "get_section", "list_pages"} <= set(tools)
    assert "workflows.md" in answer

    # The web page and its static files, served from the installed package.
    port = free_port()
    log = (tmp_path / "serve.log").open("w", encoding="utf-8")
    server = subprocess.Popen(
        [str(bin_dir / "indexfoundry"), "serve", "start", "--run-id", "latest", "--port", str(port)],
        cwd=work,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        root = f"http://127.0.0.1:{port}"

        def healthy() -> bool:
            if server.poll() is not None:
                raise RuntimeError((tmp_path / "serve.log").read_text())
            try:
                return httpx.get(root + "/api/v1/health", timeout=2).json()["status"] == "ok"
            except httpx.HTTPError:
                return False

        assert wait_for(healthy, timeout=120, interval=0.2)
        page = httpx.get(root + "/", timeout=10)
        assert page.status_code == 200 and "Content-Security-Policy" in page.headers
        assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page.text)
        assert any(a.endswith("vendor/marked.min.js") for a in assets), assets
        for asset in assets:
            assert httpx.get(root + asset, timeout=10).status_code == 200, asset
        spec = httpx.get(root + "/api/v1/openapi.json", timeout=10).json()
        assert "/api/v1/search" in spec["paths"]
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert any(n.endswith("src/indexfoundry/surfaces/http/static/vendor/purify.min.js") for n in names)
