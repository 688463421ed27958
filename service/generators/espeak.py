"""The built-in text to speech: eSpeak NG, called through ctypes on the library and voice data
that the `espeakng-loader` wheel ships (nothing is downloaded or run as a program).

The library synthesises synchronously into a callback that receives 22,050 Hz 16-bit samples
and events; PHONEME events (in IPA) carry the sample where each phoneme starts, which gives the
viseme timeline exactly in step with the audio. The library holds one voice and one set of
parameters for the whole process, so every call sets the voice, rate and pitch it wants and
calls are serialised by a lock. A call is quick (several hundred times real time, see
bench.voice) and ctypes releases the GIL while the library runs, so `synthesize` runs it in a
thread: the event loop keeps serving while a long text is spoken."""

from __future__ import annotations

import asyncio
import ctypes
import threading
from dataclasses import dataclass, field
from functools import cache

import espeakng_loader

from service.domain import visemes
from service.domain.speech import BUILT_IN, PremadeVoice, Speech, SpeechFailed, Voice

SAMPLE_RATE = 22_050
# espeak_AUDIO_OUTPUT: synthesise into the callback, return when done.
_SYNCHRONOUS = 2
# espeak_Initialize options: phoneme events, phoneme names in IPA, never exit() on errors.
_INIT_OPTIONS = 0x0001 | 0x0002 | 0x8000
# espeak_PARAMETER
_RATE, _VOLUME, _PITCH, _RANGE = 1, 2, 3, 4
# espeak_EVENT_TYPE
_LIST_TERMINATED, _PHONEME = 0, 7
_POS_CHARACTER, _CHARS_UTF8 = 1, 1
# The rates eSpeak NG accepts, in words per minute.
MIN_RATE, MAX_RATE = 80, 450


class _EventId(ctypes.Union):
    _fields_ = [("number", ctypes.c_int), ("name", ctypes.c_char_p), ("string", ctypes.c_char * 8)]


class _Event(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("unique_identifier", ctypes.c_uint),
        ("text_position", ctypes.c_int),
        ("length", ctypes.c_int),
        ("audio_position", ctypes.c_int),  # milliseconds
        ("sample", ctypes.c_int),  # samples since the start of the call
        ("user_data", ctypes.c_void_p),
        ("id", _EventId),
    ]


_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.POINTER(_Event)
)

# The premade voices: (id, voice, name, description, languages). English in several accents and
# both registers, and one voice of each other language SPEC 14 names (Mandarin and Cantonese).
_PREMADE = (
    ("espeak-en-us", "en-us", "Alex", "American English, male.", ("en",)),
    ("espeak-en-us-f3", "en-us+f3", "Ava", "American English, female.", ("en",)),
    ("espeak-en-gb", "en", "Oliver", "British English, male.", ("en",)),
    ("espeak-en-gb-f2", "en+f2", "Grace", "British English, female.", ("en",)),
    ("espeak-en-us-m3", "en-us+m3", "Sam", "American English, lower male voice.", ("en",)),
    ("espeak-fr", "fr+f3", "Camille", "French, female.", ("fr",)),
    ("espeak-de", "de", "Lukas", "German, male.", ("de",)),
    ("espeak-es", "es", "Mateo", "Spanish, male.", ("es",)),
    ("espeak-cmn", "cmn+f3", "Mei", "Mandarin Chinese, female.", ("zh", "cmn")),
    ("espeak-yue", "yue", "Wing", "Cantonese, male.", ("zh", "yue")),
)


@dataclass
class _Capture:
    """What one call's callback gathers."""

    chunks: list[bytes] = field(default_factory=list)
    phonemes: list[tuple[int, str]] = field(default_factory=list)  # (start sample, IPA)
    samples: int = 0


class _Library:
    """The process's one eSpeak NG instance."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(espeakng_loader.get_library_path())
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
        lib.espeak_Synth.argtypes = [
            ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint, ctypes.c_int, ctypes.c_uint,
            ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p,
        ]  # fmt: skip
        rate = lib.espeak_Initialize(
            _SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(), _INIT_OPTIONS
        )
        if rate != SAMPLE_RATE:
            raise SpeechFailed(f"eSpeak NG could not start (it answered {rate}).")
        self._lib = lib
        self._lock = threading.Lock()
        self._capture = _Capture()
        # Kept referenced: the library calls it for as long as the process lives.
        self._callback = _CALLBACK(self._on_audio)
        lib.espeak_SetSynthCallback(self._callback)

    def _on_audio(self, wav, count: int, events) -> int:
        capture = self._capture
        index = 0
        while events[index].type != _LIST_TERMINATED:
            event = events[index]
            if event.type == _PHONEME:
                capture.phonemes.append((event.sample, event.id.string.decode("utf-8", "replace")))
            index += 1
        if count > 0:
            capture.chunks.append(ctypes.string_at(wav, count * 2))
            capture.samples += count
        return 0  # go on

    def speak(self, text: str, voice: Voice) -> _Capture:
        encoded = text.encode("utf-8")
        with self._lock:
            self._capture = capture = _Capture()
            if self._lib.espeak_SetVoiceByName(voice.name.encode()) != 0:
                raise SpeechFailed(f"eSpeak NG has no voice {voice.name!r}.")
            # Global settings: set on every call, since the previous call may have changed them.
            self._lib.espeak_SetParameter(_RATE, min(max(voice.rate, MIN_RATE), MAX_RATE), 0)
            self._lib.espeak_SetParameter(_PITCH, min(max(voice.pitch, 0), 100), 0)
            self._lib.espeak_SetParameter(_RANGE, min(max(voice.pitch_range, 0), 100), 0)
            self._lib.espeak_SetParameter(_VOLUME, 100, 0)
            status = self._lib.espeak_Synth(
                encoded, len(encoded) + 1, 0, _POS_CHARACTER, 0, _CHARS_UTF8, None, None
            )
        if status != 0:
            raise SpeechFailed(f"eSpeak NG could not speak this text (error {status}).")
        return capture


@cache
def _library() -> _Library:
    return _Library()


def speak(text: str, voice: Voice) -> Speech:
    """Blocking synthesis (for callers already in a worker thread, such as the clone task)."""
    capture = _library().speak(text, voice)
    to_ms = 1000 / SAMPLE_RATE
    phonemes = [(sample * to_ms, name) for sample, name in capture.phonemes]
    cues = visemes.timeline(phonemes, capture.samples * to_ms)
    return Speech(b"".join(capture.chunks), SAMPLE_RATE, cues)


class EspeakSpeech:
    """`service.domain.speech.TextToSpeech` on eSpeak NG."""

    def premade(self) -> tuple[PremadeVoice, ...]:
        return tuple(
            PremadeVoice(id, name, description, languages, Voice(BUILT_IN, voice))
            for id, voice, name, description, languages in _PREMADE
        )

    async def synthesize(self, text: str, voice: Voice) -> Speech:
        return await asyncio.to_thread(speak, text, voice)
