"""``local`` under ONNX Runtime: batched, bit-identical whatever the batch, no torch once exported.

The default file is the fused, row-wise int8 one (``onnx_fused``); ``INDEXFOUNDRY_LOCAL_BACKEND=
onnx-fp32`` runs the fp32 export, the reference it is held against. Slow (``model``): the first
use makes both files once, into the user cache (``$INDEXFOUNDRY_CACHE_DIR`` or
``~/.cache/indexfoundry``), which the rest of the suite then shares.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from indexfoundry.backends.embedding.base import embedding_backend, l2_normalize
from indexfoundry.backends.embedding.local import local_st_embedder
from indexfoundry.backends.embedding.onnx_fused import has_vnni
from indexfoundry.backends.embedding.providers import resolve_embedder

pytestmark = pytest.mark.model

SRC = Path(__file__).resolve().parents[2] / "src"

TEXTS = [
    "Install the package with pip inside a virtual environment.",
    "Change the theme colours in the configuration file.",
    "short",
    " ".join(f"token{i} word{i}" for i in range(60)),  # past tokenizer.json's 128-token default
    " ".join(f"word{i}" for i in range(400)),  # past the model's 256-token window
    "Navigation: the nav setting lists the pages in the order they appear.",
    "Plugins extend the build; each one is a Python package with an entry point.",
    "MkDocs builds a static site from Markdown files and one YAML configuration file.",
    "Éléments accentués, ünïcödé and 漢字 mixed with ASCII text.",
    "",
]


@pytest.fixture(scope="module")
def cache_dir() -> Iterator[Path]:
    from indexfoundry.backends.embedding.onnx_files import user_cache_dir

    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("INDEXFOUNDRY_LOCAL_BACKEND", raising=False)
        yield user_cache_dir()


@pytest.fixture(scope="module")
def onnx(cache_dir: Path):
    embedder = resolve_embedder("local")
    assert embedding_backend(embedder) == "onnxruntime"
    return embedder


@pytest.fixture(scope="module")
def fp32(cache_dir: Path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("INDEXFOUNDRY_LOCAL_BACKEND", "onnx-fp32")
        embedder = resolve_embedder("local")
    assert embedding_backend(embedder) == "onnxruntime"
    return embedder


def corpus_texts(n: int, size: int = 1000) -> list[str]:
    """``n`` pieces of ``size`` characters (about 256 tokens each) of this repository's own docs."""
    texts: list[str] = []
    for path in sorted((SRC.parent / "docs").rglob("*.md")):
        body = " ".join(path.read_text(encoding="utf-8", errors="replace").split())
        texts += [body[start : start + size] for start in range(0, len(body) - size, size)]
        if len(texts) >= n:
            break
    return texts[:n]


def embed_in_batches(embedder, texts: list[str], size: int, seed: int) -> list[bytes]:
    order = list(range(len(texts)))
    random.Random(seed).shuffle(order)
    out: dict[int, bytes] = {}
    for start in range(0, len(order), size):
        part = order[start : start + size]
        vectors = embedder.embed([texts[i] for i in part])
        for row, index in enumerate(part):
            out[index] = vectors[row].tobytes()
    return [out[i] for i in range(len(texts))]


def test_local_vectors_are_bit_identical_whatever_the_batch_composition_and_size(onnx, fp32):
    for embedder in (onnx, fp32):
        together = [v.tobytes() for v in embedder.embed(TEXTS)]
        for size, seed in ((1, 0), (2, 1), (3, 2), (7, 3), (len(TEXTS), 4)):
            assert embed_in_batches(embedder, TEXTS, size, seed) == together, f"batch size {size}"


def test_local_vectors_do_not_change_with_the_thread_count_here(onnx):
    from indexfoundry.backends.embedding.onnx_fp32 import OnnxEmbedder

    two = OnnxEmbedder(onnx.path, threads=2).embed(TEXTS)
    assert OnnxEmbedder(onnx.path, threads=1).embed(TEXTS).tobytes() == two.tobytes()


def test_the_fp32_file_matches_sentence_transformers_and_both_read_256_tokens(onnx, fp32):
    assert onnx._tokenizer.truncation["max_length"] == fp32._tokenizer.truncation["max_length"] == 256
    reference = l2_normalize(local_st_embedder().embed(TEXTS[:-1]))
    cosines = (l2_normalize(fp32.embed(TEXTS[:-1])) * reference).sum(axis=1)
    assert float(cosines.min()) > 0.9999


def test_the_default_int8_file_stays_close_to_fp32_on_documentation_texts(onnx, fp32):
    texts = corpus_texts(48) + TEXTS[:-1]
    cosines = (l2_normalize(onnx.embed(texts)) * l2_normalize(fp32.embed(texts))).sum(axis=1)
    if has_vnni():
        # bench/embed_bench.py, 300 texts of the corpora's markdown docs: 0.9985 at the lowest.
        assert float(cosines.min()) > 0.995 and float(cosines.mean()) > 0.998
    else:
        # Without VNNI the file has 7-bit weights (onnx_fused.weight_bits): on an AVX2-only
        # AMD EPYC these texts gave 0.9927 at the lowest and 0.9969 on average.
        assert float(cosines.min()) > 0.99 and float(cosines.mean()) > 0.996


def test_the_default_int8_file_ranks_documentation_texts_as_fp32_does(onnx, fp32):
    texts = corpus_texts(120)
    queries = [
        "how are chunk ids computed",
        "which vector stores are supported",
        "how does hybrid search fuse the two rankings",
        "what does run diff compare",
        "start the MCP server for an agent",
        "SciFact nDCG@10 of each search mode",
        "texts already embedded are taken from the cache",
        "long chunks are embedded in windows",
    ]
    top = {}
    for name, model in (("int8", onnx), ("fp32", fp32)):
        scores = l2_normalize(model.embed(queries)) @ l2_normalize(model.embed(texts)).T
        top[name] = [set(np.argsort(-row, kind="stable")[:10].tolist()) for row in scores]
    overlap = [len(a & b) / 10 for a, b in zip(top["int8"], top["fp32"], strict=True)]
    assert min(overlap) >= 0.7 and sum(overlap) / len(overlap) >= 0.85


def test_the_model_id_names_the_onnx_file_and_its_hash_is_recorded_beside_it(onnx, fp32, cache_dir: Path):
    from indexfoundry.backends.embedding.onnx_fused import RECIPE
    from indexfoundry.storage.hashing import sha256_file

    assert onnx.model_id != fp32.model_id
    for embedder, tools in (
        (onnx, {"torch", "transformers", "onnx", "onnxruntime"}),
        (fp32, {"torch", "onnx", "onnxscript"}),
    ):
        assert embedder.model_id.startswith("local:") and f"+onnx@{embedder.file_sha256[:12]}" in embedder.model_id
        side = json.loads(Path(embedder.path).with_suffix(".json").read_text(encoding="utf-8"))
        assert side["sha256"] == sha256_file(Path(embedder.path)) == embedder.file_sha256
        assert set(side["exporter"]) == tools
        assert Path(embedder.path).is_relative_to(cache_dir)
    assert onnx.recipe == RECIPE and RECIPE in Path(onnx.path).name


def test_a_manifest_model_id_picks_the_backend_that_made_its_vectors(onnx, fp32):
    assert resolve_embedder(onnx.model_id).model_id == onnx.model_id
    # A run indexed with the fp32 file keeps being searched with it, whatever the default is.
    assert resolve_embedder(fp32.model_id).model_id == fp32.model_id
    fallback = local_st_embedder()
    assert "+onnx@" not in fallback.model_id
    assert embedding_backend(resolve_embedder(fallback.model_id)) == "sentence-transformers"


def test_the_fallback_backend_is_chosen_by_the_environment(onnx, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("INDEXFOUNDRY_LOCAL_BACKEND", "sentence-transformers")
    embedder = resolve_embedder("local")
    assert embedding_backend(embedder) == "sentence-transformers"
    assert embedder.model_id == local_st_embedder().model_id


def test_embedding_with_an_exported_model_never_imports_torch(onnx, cache_dir: Path):
    code = (
        "import sys\n"
        "from indexfoundry.backends.embedding.providers import resolve_embedder\n"
        "e = resolve_embedder('local')\n"
        "v = e.embed(['how do I add a page'])\n"
        "print(e.model_id, v.shape[1], 'torch' in sys.modules, 'sentence_transformers' in sys.modules)\n"
    )
    env = {**os.environ, "INDEXFOUNDRY_CACHE_DIR": str(cache_dir), "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [onnx.model_id, "384", "False", "False"]


def test_an_empty_call_returns_no_rows(onnx):
    assert onnx.embed([]).shape == (0, 384)
    assert np.all(np.isfinite(onnx.embed([""])))


def test_the_model_sent_to_a_worker_is_the_same_onnx_file_and_embeds_the_same(onnx, fp32):
    import pickle

    from indexfoundry.backends.embedding.devices import CPU

    # A Ray worker receives the embedder pickled: it names the ONNX file by its hash.
    for embedder in (onnx, fp32):
        received = pickle.loads(pickle.dumps(embedder))
        assert received.model_id == embedder.model_id and received.device == CPU
        assert np.array_equal(received.embed(TEXTS[:3]), embedder.embed(TEXTS[:3]))


def test_two_processes_preparing_the_model_at_once_make_one_file_with_the_default_model_id(onnx, tmp_path: Path):
    """What ``scripts/setup.sh`` runs, twice at once in a fresh cache: one export, the file of the
    default model id (made again, it gives the same bytes), and only JSON on stdout."""
    cache = tmp_path / "cache"
    env = {**os.environ, "INDEXFOUNDRY_CACHE_DIR": str(cache), "PYTHONPATH": str(SRC)}
    env.pop("INDEXFOUNDRY_LOCAL_BACKEND", None)
    command = [sys.executable, "-m", "indexfoundry", "index", "prepare", "--json"]
    both = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outs = [p.communicate(timeout=900) for p in both]
    assert [p.returncode for p in both] == [0, 0], [err[-2000:] for _, err in outs]
    assert {json.loads(out)["model_id"] for out, _ in outs} == {onnx.model_id}
    assert len(list((cache / "onnx").glob("*.onnx"))) == 1
    assert not [p for p in (cache / "onnx").iterdir() if p.name.startswith(".make-")]
