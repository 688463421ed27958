"""The speech engines' speed, and what speaking costs the event loop.

    python -m bench.voice [--repeats 5] [--skip-conversations]

1. Real-time factors on one core (this process pinned to one CPU): seconds of audio per second
   of work, for eSpeak NG synthesis (sentences of a typical reply) and PocketSphinx recognition
   (that speech, resampled to 16 kHz); both wall clock and CPU time, medians of `--repeats`.
2. Event-loop lag: the longest stall of an asyncio loop ticking every millisecond while a long
   text is synthesised by the service's engine (`EspeakSpeech.synthesize`, in a thread) and while
   it is recognised by `SphinxListener` (a worker process), against calling the engine inline.
3. Conversations speaking at once (`bench.voice_conversations`): the time from a reply's first
   sentence being complete to its first audio frame leaving the server."""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

import engine
from service.domain.speech import BUILT_IN, STT_SAMPLE_RATE, Voice
from service.generators import espeak, sphinx

REPLY = (
    "Thanks for asking! The museum opens at nine in the morning and closes at six. "
    "Tickets are twelve euros, and children under ten go in for free. "
    "Would you like me to tell you about the current exhibitions?"
)
VOICE = Voice(BUILT_IN, "en-us")


def _timed(work) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def _rtf(duration_s: float, work, repeats: int) -> tuple[float, float]:
    runs = [_timed(work) for _ in range(repeats)]
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    return duration_s / wall, duration_s / cpu


def real_time_factors(repeats: int) -> None:
    speech = espeak.speak(REPLY, VOICE)
    pcm16k = engine.decode_audio(
        engine.wav_bytes(speech.pcm, speech.sample_rate), STT_SAMPLE_RATE, 60
    ).pcm
    sphinx.recognize(pcm16k)  # loads the model before timing
    tts = _rtf(speech.duration_s, lambda: espeak.speak(REPLY, VOICE), repeats)
    stt = _rtf(speech.duration_s, lambda: sphinx.recognize(pcm16k), repeats)
    print(f"\nReal-time factors on one core ({speech.duration_s:.1f} s of speech, "
          f"median of {repeats}):")  # fmt: skip
    print(f"{'engine':<24}{'x real time (wall)':>20}{'x real time (CPU)':>20}")
    print(f"{'eSpeak NG (TTS)':<24}{tts[0]:>20.1f}{tts[1]:>20.1f}")
    print(f"{'PocketSphinx (STT)':<24}{stt[0]:>20.2f}{stt[1]:>20.2f}")


async def _max_lag(work) -> tuple[float, float]:
    """(longest stall of a 1 ms ticker in ms, work time in s) while `work()` is awaited."""
    lags: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            lags.append((now - last) * 1000 - 1)
            last = now

    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await work()
    elapsed = time.perf_counter() - started
    done.set()
    await tick
    return max(lags), elapsed


async def loop_lag() -> None:
    long_text = " ".join([REPLY] * 8)
    pcm16k = engine.decode_audio(
        engine.wav_bytes(espeak.speak(REPLY, VOICE).pcm, espeak.SAMPLE_RATE), STT_SAMPLE_RATE, 60
    ).pcm
    listener = sphinx.SphinxListener()
    await listener.transcribe(pcm16k)  # the worker process starts and loads its model

    async def inline_tts() -> None:
        espeak.speak(long_text, VOICE)

    async def inline_stt() -> None:
        sphinx.recognize(pcm16k)

    rows = [
        ("TTS inline (blocking)", inline_tts),
        ("TTS in a thread (service)", lambda: espeak.EspeakSpeech().synthesize(long_text, VOICE)),
        ("STT inline (blocking)", inline_stt),
        ("STT in a process (service)", lambda: listener.transcribe(pcm16k)),
    ]
    print("\nEvent-loop lag while the engines work (a 1 ms ticker's longest stall):")
    print(f"{'how':<30}{'work (s)':>10}{'max lag (ms)':>14}")
    try:
        for name, work in rows:
            lag, elapsed = await _max_lag(work)
            print(f"{name:<30}{elapsed:>10.3f}{lag:>14.1f}")
    finally:
        listener.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--skip-conversations", action="store_true")
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    real_time_factors(args.repeats)
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    asyncio.run(loop_lag())
    if not args.skip_conversations:
        from bench import voice_conversations

        voice_conversations.run([])


if __name__ == "__main__":
    main()
