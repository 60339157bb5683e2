"""The hash embedder's vectors."""

from __future__ import annotations

from indexfoundry.backends.embedding.hashing import HashEmbedder


def test_hash_vectors_do_not_depend_on_batch_composition():
    embedder = HashEmbedder(64)
    alone = embedder.embed(["alpha beta"])[0]
    together = embedder.embed(["gamma", "alpha beta", "delta"])[1]
    assert alone.tobytes() == together.tobytes()


def test_hash_vectors_keep_their_bytes_from_the_word_by_word_implementation():
    # sha256 of the vectors the word-by-word loop (before numpy counting) made for these texts.
    import hashlib

    texts = ["The cat sat on the mat; the CAT sat.", "", "d\u00e9lta \u72ac a_b 42 x x x"]
    texts.append("theme colours and fonts " * 50)
    digests = [hashlib.sha256(HashEmbedder(n).embed(texts).tobytes()).hexdigest() for n in (384, 7)]
    assert digests == [
        "8a33f2579fbae053fc9e24333f6544938d0b3dd9b9d98df6f2fbe4aed4f29474",
        "74af4352cccc2c2b3dfb86a54259e8a4937f638f6a2469aa30b8f79d94d030a5",
    ]
