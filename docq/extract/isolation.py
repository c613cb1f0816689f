"""extract_isolated: extract() in a warm child process that a hostile file cannot outlive.

Each child of an `ExtractorPool` reads one document at a time under two limits the kernel
enforces, so they hold even while a C parser (PDFium, libtesseract, libpng) never returns
to Python:

- wall clock: a real-time timer (`setitimer`) whose SIGALRM, left at its default action,
  ends the child at timeout_s + GRACE_S (extract() itself gives up between pages at
  timeout_s); the parent waits a little longer
  and kills a child that is still there (the backstop, for one that blocked the signal);
- memory: RLIMIT_AS caps its address space at what it holds now + memory_mib, so a parser
  that grows without bound gets MemoryError (or dies) instead of the worker's host swapping.

A child that dies or overruns is replaced; its document fails as "timeout", "too_large" or
"unreadable". Children come from a forkserver that has imported the parsers, so a
replacement costs a fork, not an interpreter start (docs/performance.md gives the per-call
cost); children are reused across documents.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import resource
import signal
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from docq.errors import ExtractionFailed
from docq.extract.base import Extracted, Limits
from docq.extract.dispatch import extract

Target = Callable[[bytes, str, Limits], Extracted]
GRACE_S = 0.5  # past timeout_s: the child's own deadline check comes first
BACKSTOP_S = 2.0  # past the child's alarm: the parent kills what is still running
PRELOAD = [
    "docq.extract.dispatch", "docq.extract.text", "docq.extract.pdf",
    "docq.extract.docx", "docq.extract.images", "docq.extract.ocr",
]  # fmt: skip
MIB = 1 << 20


@dataclass
class _Child:
    process: Any  # multiprocessing's Process of the forkserver context
    conn: Connection


class ExtractorPool:
    """Up to `processes` warm children reading documents at once (thread-safe)."""

    def __init__(self, processes: int, target: Target = extract) -> None:
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(PRELOAD)
        self._target = target
        self._processes = processes
        self._slots = threading.BoundedSemaphore(processes)
        self._idle: queue.LifoQueue[_Child] = queue.LifoQueue()
        self._pid = os.getpid()

    def extract(self, data: bytes, content_type: str, limits: Limits) -> Extracted:
        """extract(data, content_type, limits) in a child; ExtractionFailed on any failure."""
        with self._slots:
            child = self._take()
            try:
                try:
                    child.conn.send((data, content_type, limits))
                except OSError:  # it died idle (killed from outside): not this file's doing
                    child.conn.close()
                    child = self._take()
                    child.conn.send((data, content_type, limits))
                if not child.conn.poll(limits.timeout_s + GRACE_S + BACKSTOP_S):
                    self._end(child)
                    raise ExtractionFailed("timeout", _late(limits) + " (killed)")
                status, payload = child.conn.recv()
            except (EOFError, OSError):  # the child died reading it
                raise self._died(child, limits) from None
            self._idle.put(child)
        if status == "ok":
            return payload  # type: ignore[no-any-return]
        raise payload

    def extract_all(
        self, documents: Iterable[tuple[bytes, str]], limits: Limits
    ) -> list[Extracted | ExtractionFailed]:
        """Each (data, content_type) read in parallel on the pool's children, in order: a
        document's failure is its item of the list, never the others'."""

        def one(document: tuple[bytes, str]) -> Extracted | ExtractionFailed:
            try:
                return self.extract(document[0], document[1], limits)
            except ExtractionFailed as exc:
                return exc

        with ThreadPoolExecutor(self._processes, thread_name_prefix="docq-extract") as threads:
            return list(threads.map(one, documents))

    def close(self) -> None:
        """End the idle children (each exits when its pipe closes)."""
        while True:
            try:
                child = self._idle.get_nowait()
            except queue.Empty:
                return
            child.conn.close()
            child.process.join(5)

    def _take(self) -> _Child:
        while True:
            try:
                child = self._idle.get_nowait()
            except queue.Empty:
                break
            if child.process.is_alive():
                return child
            child.conn.close()
        parent_end, child_end = self._context.Pipe()
        process = self._context.Process(
            target=_serve, args=(child_end, self._target), daemon=True, name="docq-extract"
        )
        process.start()
        child_end.close()
        return _Child(process, parent_end)

    def _died(self, child: _Child, limits: Limits) -> ExtractionFailed:
        child.process.join(BACKSTOP_S)
        child.conn.close()
        code = child.process.exitcode
        if code == -signal.SIGALRM:
            return ExtractionFailed("timeout", _late(limits) + " (its timer ended it)")
        if code is None:
            self._end(child)
        return ExtractionFailed("unreadable", f"the reader died on this file (exit {code})")

    @staticmethod
    def _end(child: _Child) -> None:
        child.process.kill()  # the backstop: past its own alarm
        child.process.join(BACKSTOP_S)
        child.conn.close()


def _late(limits: Limits) -> str:
    return f"reading the document took longer than {limits.timeout_s:g} s"


def _serve(conn: Connection, target: Target) -> None:
    """A child: read documents from the pipe until it closes, each under the limits."""
    signal.signal(signal.SIGALRM, signal.SIG_DFL)  # the kernel ends the child on the alarm
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C and warm shutdown: the parent's
    while True:
        try:
            data, content_type, limits = conn.recv()
        except (EOFError, OSError):
            return
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = _address_space() + limits.memory_mib * MIB
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
        signal.setitimer(signal.ITIMER_REAL, limits.timeout_s + GRACE_S)
        try:
            reply: tuple[str, object] = ("ok", target(data, content_type, limits))
        except ExtractionFailed as exc:
            reply = ("error", exc)
        except MemoryError:
            reply = ("error", ExtractionFailed("too_large", _memory(limits)))
        except BaseException as exc:  # a reader's bug is still only that file's error
            reply = ("error", ExtractionFailed("unreadable", f"{type(exc).__name__}: {exc}"))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
        conn.send(reply)


def _memory(limits: Limits) -> str:
    return f"reading the document needed more than {limits.memory_mib} MiB"


def _address_space() -> int:
    """The bytes of address space this process maps now (Linux's /proc/self/statm)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


_default: ExtractorPool | None = None
_default_lock = threading.Lock()


def default_pool() -> ExtractorPool:
    """This process's pool (DOCQ_EXTRACT_PROCESSES children), made on first use: after fork."""
    global _default
    with _default_lock:
        if _default is None or _default._pid != os.getpid():
            from docq.config import get_settings

            _default = ExtractorPool(get_settings().extract_processes)
        return _default


def extract_isolated(data: bytes, content_type: str, limits: Limits) -> Extracted:
    """extract() in a warm child with a hard wall-clock limit and an address-space cap."""
    return default_pool().extract(data, content_type, limits)


def extract_all_isolated(
    documents: Iterable[tuple[bytes, str]], limits: Limits
) -> list[Extracted | ExtractionFailed]:
    """A shard's documents read on all of this process's children at once, in order."""
    return default_pool().extract_all(documents, limits)
