"""Fundamental frequency (F0) of speech, by the YIN method (de Cheveigné and Kawahara, 2002):
per frame, the cumulative-mean-normalised difference function, its first dip under a threshold
refined by parabolic interpolation. The clone task measures samples with it, and the built-in
voices with the same estimator, so both sides of a match are measured alike.

Everything is vectorised over frames (the difference function comes from FFT
autocorrelations), so a minute of 16 kHz audio takes well under a second."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRAME_S, HOP_S = 0.040, 0.010
MIN_F0, MAX_F0 = 60.0, 450.0
# A dip of the normalised difference under this marks a periodic (voiced) frame.
_THRESHOLD = 0.15
# Frames quieter than this fraction of the loudest frame's RMS are silence.
_SILENCE = 0.05


@dataclass(frozen=True)
class PitchStats:
    """What the matcher compares: the median F0 (Hz), its spread (semitones between the 10th
    and 90th percentiles) and how much of the audio is voiced and not silent."""

    median_hz: float
    range_semitones: float
    voiced_s: float
    sounding_s: float


def _frames(samples: np.ndarray, rate: int) -> np.ndarray:
    width, hop = int(FRAME_S * rate), int(HOP_S * rate)
    if len(samples) < width:
        return np.zeros((0, width))
    count = 1 + (len(samples) - width) // hop
    index = np.arange(width)[None, :] + hop * np.arange(count)[:, None]
    return samples[index]


def _normalised_difference(frames: np.ndarray, max_lag: int) -> np.ndarray:
    """d'(tau) for tau in [0, max_lag) of each frame (YIN steps 2 and 3)."""
    width = frames.shape[1]
    size = 1 << int(np.ceil(np.log2(2 * width)))
    spectrum = np.fft.rfft(frames, size)
    autocorrelation = np.fft.irfft(spectrum * np.conj(spectrum), size)[:, :max_lag]
    energy = np.cumsum(frames**2, axis=1)
    total = energy[:, -1:]
    # Energy of the window [tau, width) for each lag: the tail sums.
    tail = total - np.concatenate([np.zeros((len(frames), 1)), energy[:, : max_lag - 1]], axis=1)
    head = energy[:, width - np.arange(max_lag) - 1]
    difference = head + tail - 2 * autocorrelation
    difference[:, 0] = 0
    running = np.cumsum(difference[:, 1:], axis=1) / np.arange(1, max_lag)
    normalised = np.ones_like(difference)
    normalised[:, 1:] = difference[:, 1:] / np.maximum(running, 1e-12)
    return normalised


def _first_dips(normalised: np.ndarray, min_lag: int) -> np.ndarray:
    """The lag of each frame's first dip under the threshold (refined), or NaN (unvoiced)."""
    below = normalised[:, min_lag:] < _THRESHOLD
    voiced = below.any(axis=1)
    first = np.argmax(below, axis=1) + min_lag
    lags = np.full(len(normalised), np.nan)
    last = normalised.shape[1] - 1
    for row in np.flatnonzero(voiced):
        lag = first[row]
        while lag < last and normalised[row, lag + 1] < normalised[row, lag]:
            lag += 1  # walk down to the bottom of the dip
        if 0 < lag < last:
            a, b, c = normalised[row, lag - 1 : lag + 2]
            shift = 0.5 * (a - c) / (a - 2 * b + c) if a - 2 * b + c > 0 else 0.0
            lags[row] = lag + shift
        else:
            lags[row] = lag
    return lags


def f0_track(samples: np.ndarray, rate: int) -> np.ndarray:
    """F0 in Hz of each 10 ms frame (NaN where unvoiced or silent) of 16-bit PCM samples."""
    frames = _frames(samples.astype(np.float64), rate)
    if not len(frames):
        return np.zeros(0)
    frames = frames - frames.mean(axis=1, keepdims=True)
    rms = np.sqrt((frames**2).mean(axis=1))
    loud = rms > _SILENCE * max(float(rms.max()), 1.0)
    min_lag, max_lag = int(rate / MAX_F0), int(rate / MIN_F0) + 2
    lags = _first_dips(_normalised_difference(frames, max_lag), min_lag)
    track = rate / lags
    track[~loud] = np.nan
    return track


def pitch_stats(samples: np.ndarray, rate: int) -> PitchStats:
    track = f0_track(samples, rate)
    voiced = track[~np.isnan(track)]
    frames = _frames(samples.astype(np.float64), rate)
    rms = np.sqrt((frames**2).mean(axis=1)) if len(frames) else np.zeros(0)
    sounding = int((rms > _SILENCE * max(float(rms.max(initial=0)), 1.0)).sum())
    if len(voiced) < 5:
        return PitchStats(0.0, 0.0, len(voiced) * HOP_S, sounding * HOP_S)
    low, median, high = np.percentile(voiced, [10, 50, 90])
    return PitchStats(
        float(median), float(12 * np.log2(high / low)), len(voiced) * HOP_S, sounding * HOP_S
    )
