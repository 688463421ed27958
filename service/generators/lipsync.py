"""Mouth shapes heard in a recording: the visemes of any speech, from its loudness and the shape
of its spectrum, when no text-to-speech timeline says what was said.

The sound is cut into 25 ms windows every 10 ms. A window is speech when it is loud enough
against the recording's own range (its quiet floor and its peaks), so the threshold follows
the recording rather than a fixed level. Each speech window is then named by where its energy
lies: mostly above 3.5 kHz is frication (`SS`, or `FF` when weak); otherwise a voiced sound
whose second-formant band (0.9-2.5 kHz) against its first (0.2-0.9 kHz) tells a rounded
vowel (`ou`, `oh`: little energy up high) from an open one (`aa`) and a spread one (`E`,
`ih`); weak voiced windows are sonorants (`nn`). A short silence between two speech windows
is a closure (`PP`: lips meet for p, b, m and stops). Shapes held for less than 30 ms are
folded into their neighbour, as a mouth cannot show them. It is a heuristic, not a phoneme
recogniser: the mouth opens and closes with the syllables and takes a plausible shape."""

from __future__ import annotations

import numpy as np

from service.domain.visemes import REST

HOP_MS = 10
_WINDOW_MS = 25
_MIN_HOLD_HOPS = 3  # 30 ms
_MAX_CLOSURE_HOPS = 8  # a silence up to 80 ms inside speech is a closure, longer a pause
_CHUNK_HOPS = 2000
# Loudness (dBFS) rules: speech is above the floor by this much and within this of the peaks.
_ABOVE_FLOOR_DB, _BELOW_PEAK_DB, _ABSOLUTE_DB = 9.0, 35.0, -60.0


def _frames(samples: np.ndarray, rate: int) -> np.ndarray:
    """Windows of `_WINDOW_MS` every `HOP_MS`, one row each (zero-padded at the end)."""
    hop, size = rate * HOP_MS // 1000, rate * _WINDOW_MS // 1000
    count = max(1, -(-len(samples) // hop))
    padded = np.zeros(count * hop + size, np.float32)
    padded[: len(samples)] = samples
    index = np.arange(size)[None, :] + hop * np.arange(count)[:, None]
    return padded[index]


def _chunks(samples: np.ndarray, rate: int):
    """The windows of `samples` a few thousand at a time (ten minutes of windows at once would
    take hundreds of megabytes)."""
    hop, size = rate * HOP_MS // 1000, rate * _WINDOW_MS // 1000
    step = _CHUNK_HOPS * hop
    for start in range(0, max(len(samples), 1), step):
        yield _frames(samples[start : start + step + size - hop], rate)[:_CHUNK_HOPS]


def loudness_db(samples: np.ndarray, rate: int) -> np.ndarray:
    """Each hop's loudness in dBFS (samples are floats in [-1, 1])."""
    rms = np.concatenate(
        [np.sqrt(np.mean(frames**2, axis=1) + 1e-12) for frames in _chunks(samples, rate)]
    )
    return 20 * np.log10(rms)


def speech_threshold(db: np.ndarray) -> float:
    """The loudness above which a hop is speech, from the recording's own floor and peaks."""
    floor, peak = np.percentile(db, 10), np.percentile(db, 99)
    return float(max(floor + _ABOVE_FLOOR_DB, peak - _BELOW_PEAK_DB, _ABSOLUTE_DB))


def _bands(samples: np.ndarray, rate: int) -> np.ndarray:
    """Each hop's energy in the low (F1), mid (F2) and high (frication) bands: (hops, 3)."""
    size = rate * _WINDOW_MS // 1000
    window, freqs = np.hanning(size).astype(np.float32), np.fft.rfftfreq(size, 1 / rate)
    edges = ((200, 900), (900, 2500), (3500, min(8000, rate / 2)))
    masks = [(freqs >= lo) & (freqs < hi) for lo, hi in edges]
    parts = []
    for frames in _chunks(samples, rate):
        spectrum = np.abs(np.fft.rfft(frames * window, axis=1)) ** 2
        parts.append(np.stack([spectrum[:, mask].sum(axis=1) for mask in masks], axis=1))
    return np.concatenate(parts)


def _name(level: float, low: float, mid: float, high: float) -> str:
    """The viseme of one speech hop; `level` is 0 (threshold) to 1 (the peaks)."""
    total = low + mid + high + 1e-12
    if high / total > 0.5:
        return "SS" if level > 0.3 else "FF"
    if level < 0.2:
        return "nn"
    ratio = mid / (low + 1e-12)
    for limit, viseme in ((0.15, "ou"), (0.35, "oh"), (1.0, "aa"), (2.0, "E")):
        if ratio < limit:
            return viseme
    return "ih"


def hop_visemes(samples: np.ndarray, rate: int) -> list[str]:
    """One viseme per hop of `samples` (floats in [-1, 1])."""
    db = loudness_db(samples, rate)
    threshold, peak = speech_threshold(db), float(np.percentile(db, 99))
    level = np.clip((db - threshold) / max(peak - threshold, 1e-6), 0, 1)
    bands = _bands(samples, rate)
    names = [
        _name(float(level[i]), *map(float, bands[i])) if db[i] > threshold else REST
        for i in range(len(db))
    ]
    return _fold_short(_closures(names))


def _closures(names: list[str]) -> list[str]:
    """Short silences between speech become `PP` (the lips meet between syllables)."""
    out, start = list(names), None
    for i, name in enumerate([*names, "end"]):
        if name == REST:
            start = i if start is None else start
            continue
        if start is not None and start > 0 and i < len(names) and i - start <= _MAX_CLOSURE_HOPS:
            out[start:i] = ["PP"] * (i - start)
        start = None
    return out


def _fold_short(names: list[str]) -> list[str]:
    """Runs shorter than `_MIN_HOLD_HOPS` take the shape before them (speech runs only: a
    real silence, however short, keeps the mouth closed)."""
    out = list(names)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j] == out[i]:
            j += 1
        if j - i < _MIN_HOLD_HOPS and i > 0 and out[i] != REST:
            out[i:j] = [out[i - 1]] * (j - i)
        i = j
    return out


def audio_timeline(pcm: bytes, rate: int) -> list[tuple[int, str]]:
    """The viseme timeline [(start ms, viseme)] of 16-bit mono `pcm`, in the form
    `visemes.timeline` gives for speech we synthesised: from 0, ending with `sil` at the end."""
    samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768
    names = hop_visemes(samples, rate)
    cues: list[tuple[int, str]] = [(0, REST)]
    for i, name in enumerate(names):
        if name != cues[-1][1]:
            if i == 0:
                cues[0] = (0, name)  # speech from the first hop: no closed mouth before it
            else:
                cues.append((i * HOP_MS, name))
    end_ms = round(len(samples) / rate * 1000)
    if cues[-1][1] != REST:
        cues.append((end_ms, REST))
    return cues
