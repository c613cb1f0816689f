"""docq/store/codec.py: shards packed on the upload's path read back as they were written."""

from __future__ import annotations

import json

import pytest

from docq.store import codec
from docq.store.codec import Document, pack_shard, pack_shards, unpack_shard


def documents(n: int) -> list[Document]:
    texts = ["plain", "ünïcödé — €", 'quotes " and \\ backslashes', "", "x" * 5000]
    out = [Document(id=f"d{i}", text=texts[i % len(texts)]) for i in range(n)]
    out.append(Document(id="f", text="", content_type="application/pdf"))
    return out


@pytest.mark.parametrize("n_chunks", [0, 1, 3, 2 * codec.PACK_THREADS + 5])
def test_shards_packed_in_parallel_come_back_in_order_and_whole(n_chunks: int) -> None:
    docs = documents(7 * n_chunks)
    chunks = [docs[i : i + 7] for i in range(0, len(docs), 7)][:n_chunks]
    packed = list(pack_shards(iter(chunks)))
    assert len(packed) == len(chunks)
    for chunk, raw in zip(chunks, packed, strict=True):
        assert unpack_shard(raw) == unpack_shard(pack_shard(chunk))
        assert [e[0] for e in unpack_shard(raw)] == [d.id for d in chunk]


def test_the_encoded_text_reads_back_as_json_dumps_wrote_it() -> None:
    docs = documents(5)
    entries = [[d.id, d.text] if d.content_type is None else None for d in docs[:5]]
    assert unpack_shard(pack_shard(docs[:5])) == json.loads(json.dumps(entries))


def test_a_lone_surrogate_is_still_packed() -> None:
    (raw,) = pack_shards([[Document(id="s", text="bad \ud800 text")]])
    assert unpack_shard(raw)[0][1] == "bad \ud800 text"
