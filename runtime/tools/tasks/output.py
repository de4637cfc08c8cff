"""Recording a background task's output as it is drained: each stream
decoded, redacted as a stream (:class:`~.stream.StreamRedactor`), appended to
its artifact file and, in bounded pieces, to the task log."""

from __future__ import annotations

import codecs
import json
import threading
import time
from collections.abc import Mapping

from charter.runtime.redact import Redactor
from charter.runtime.tools.tasks.store import AppendFile
from charter.runtime.tools.tasks.stream import StreamRedactor

__all__ = ["LOG_ENTRY_CHARS", "TERMINAL_TAIL_CHARS", "TaskOutput"]

LOG_ENTRY_CHARS = 8192  # at most this much text in one task-log line
# seed 000: characters of each stream's end kept, by ``terminal`` (the shell
# tool's other face, charter.runtime.tools.shell) and by its background tasks
TERMINAL_TAIL_CHARS = 12_000


class TaskOutput:
    """The ``on_output`` sink of one task: decodes each stream, redacts it
    as a stream, appends it to the stream's artifact file and to the task
    log. Called from both drain threads, hence the lock. Any exception
    propagates to the drain, which stops calling it and has the tree
    stopped."""

    def __init__(
        self,
        redactor: Redactor,
        streams: Mapping[str, AppendFile],
        log: AppendFile,
    ) -> None:
        self._streams = dict(streams)
        self._log = log
        self._lock = threading.Lock()
        self._decoders = {
            name: codecs.getincrementaldecoder("utf-8")(errors="replace") for name in streams
        }
        self._redactors = {name: StreamRedactor(redactor) for name in streams}
        self._offsets = dict.fromkeys(streams, 0)  # bytes written to each artifact file
        self._seq = 0
        self._started = time.monotonic()
        self._closed = False

    def __call__(self, stream: str, chunk: bytes) -> None:
        with self._lock:
            if self._closed:
                raise OSError("output arrived after the task's files were closed")
            text = self._decoders[stream].decode(chunk)
            self._emit(stream, self._redactors[stream].feed(text))

    def _emit(self, stream: str, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8")
        self._streams[stream].write(data)
        lines: list[bytes] = []
        offset = self._offsets[stream]
        t = round(time.monotonic() - self._started, 3)
        for i in range(0, len(text), LOG_ENTRY_CHARS):
            piece = text[i : i + LOG_ENTRY_CHARS]
            entry = {"seq": self._seq, "t": t, "stream": stream, "offset": offset, "text": piece}
            lines.append(json.dumps(entry, ensure_ascii=False).encode("utf-8") + b"\n")
            self._seq += 1
            offset += len(piece.encode("utf-8"))
        self._log.write(b"".join(lines))
        self._offsets[stream] += len(data)

    def finish(self) -> None:
        """Both pipes reached their end: flush what the decoders and the
        redactors held back, then sync every file to disk."""
        with self._lock:
            if self._closed:
                raise OSError("the task's files were already closed")
            for stream in self._streams:
                tail = self._decoders[stream].decode(b"", final=True)
                self._emit(stream, self._redactors[stream].feed(tail, final=True))
            for handle in (*self._streams.values(), self._log):
                handle.sync()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for handle in (*self._streams.values(), self._log):
                try:
                    handle.close()
                except OSError:
                    pass
