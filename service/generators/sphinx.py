"""The built-in speech to text: PocketSphinx with the US English model its wheel ships.

It is small and offline but weak, most of all on synthetic voices (docs/api.md recommends a
whisper server through AVATAR_STT_BASE_URL for real use). Recognition holds the GIL for about
half of real time, so it never runs in a server's event loop: `SphinxListener` sends it to one
worker process of its own (started on first use, the model loaded once there)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import cache

import numpy as np

from service.domain.speech import Segment, SpeechFailed, Transcript

# 100 feature frames a second (the model's frame rate).
_FRAMES_PER_S = 100
# Audio quieter than this (RMS of 16-bit samples, about -60 dBFS) holds no speech; the model
# would hear words in digital silence.
_SILENCE_RMS = 33.0
# Words further apart than this (a pause) start a new segment of the transcription.
_PAUSE_S = 0.3


@cache
def _decoder():
    """The decoder of this process, and its cepstral-mean estimate as first loaded."""
    from pocketsphinx import Decoder

    # The default model is the wheel's own en-us one; the log would go to stderr.
    decoder = Decoder(logfn="/dev/null")
    return decoder, decoder.get_cmn()


def _words(decoder) -> list[tuple[float, float, str]]:
    """(start s, end s, word) of the best hypothesis, without fillers and silences; a
    pronunciation variant "to(3)" is the word "to"."""
    words = []
    for segment in decoder.seg() or ():  # None when nothing was heard
        word = segment.word
        if word.startswith(("<", "[")):
            continue
        word = word.split("(", 1)[0]
        start, end = segment.start_frame, segment.end_frame + 1
        words.append((start / _FRAMES_PER_S, end / _FRAMES_PER_S, word))
    return words


def _segments(words: list[tuple[float, float, str]]) -> list[Segment]:
    segments: list[Segment] = []
    for start, end, word in words:
        if segments and start - segments[-1].end_s < _PAUSE_S:
            last = segments[-1]
            segments[-1] = Segment(last.start_s, end, f"{last.text} {word}")
        else:
            segments.append(Segment(start, end, word))
    return segments


def recognize(pcm: bytes) -> Transcript:
    """Blocking recognition of 16 kHz 16-bit mono PCM (what the worker process runs)."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float32)
    if not samples.size or float(np.sqrt(np.mean(samples * samples))) < _SILENCE_RMS:
        return Transcript("", [])
    decoder, first_cmn = _decoder()
    # The decoder's feature stage adapts to what it heard (cepstral mean, noise estimate); each
    # recording starts afresh (50 us), so no transcript depends on earlier (other visitors')
    # recordings.
    decoder.reinit_feat()
    decoder.set_cmn(first_cmn)
    decoder.start_utt()
    decoder.process_raw(pcm, full_utt=True)
    decoder.end_utt()
    segments = _segments(_words(decoder))
    return Transcript(" ".join(segment.text for segment in segments), segments)


class SphinxListener:
    """`service.domain.speech.SpeechToText` on PocketSphinx, in a worker process; `close` it
    when the owning process stops."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            # spawn: a fork of a server process would inherit its threads and sockets.
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        return self._pool

    async def transcribe(self, pcm: bytes) -> Transcript:
        loop = asyncio.get_running_loop()
        try:
            with _without_working_directory():  # the worker starts (spawns) in this call
                done = loop.run_in_executor(self._executor(), recognize, pcm)
            return await done
        except BrokenProcessPool:
            self._pool = None  # the next call starts a new worker
            raise SpeechFailed("Speech recognition stopped unexpectedly; try again.") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


@contextlib.contextmanager
def _without_working_directory():
    """sys.path without the working directory while a worker is spawned (it takes this path).
    Granian puts the working directory first on its workers' path; run from a source checkout
    of this project, that directory's engine/ (no compiled _native) would shadow the installed
    package in the worker, which would die on import."""
    here = os.path.realpath(os.getcwd())
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if os.path.realpath(p or ".") != here]
    try:
        yield
    finally:
        sys.path[:] = saved
