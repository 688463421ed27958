"""Visemes: the mouth shapes a talking face shows, and the one table that turns phonemes into
them. The speech engines, the conversation pages and the talking-video task all use this module,
so a mouth moves the same way wherever it is drawn.

The set is the common 15-shape one (SPEC 14): `sil` (closed, at rest), `PP` (lips pressed:
p b m), `FF` (lip on teeth: f v), `TH` (tongue between teeth), `DD` (t d), `kk` (k g), `CH`
(ch j sh), `SS` (s z), `nn` (n l), `RR` (r), and the vowels `aa`, `E`, `ih`, `oh`, `ou`.

Phonemes come as IPA strings (eSpeak NG's phoneme events in IPA mode): one event may hold an
affricate ("tʃ"), a diphthong ("aɪ"), stress and length marks ("ˈɜː"), or nothing (a pause).
Stress, length and other modifiers do not change the mouth's shape and are skipped; a symbol
the table does not know is skipped too (its time goes to the shape before it)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

VISEMES = ("sil", "PP", "FF", "TH", "DD", "kk", "CH", "SS", "nn", "RR", "aa", "E", "ih", "oh", "ou")
REST = "sil"

# Each viseme's IPA symbols. Multi-symbol entries (affricates) are matched before their parts.
_SYMBOLS = {
    "PP": "p b m ɓ ɱ",
    "FF": "f v ɸ β ʋ",
    "TH": "θ ð",
    "DD": "t d ɾ ʈ ɖ ʔ ɗ",
    "kk": "k g ɡ ŋ x ɣ q ɢ χ h ɦ ħ c ɟ ç",
    "CH": "tʃ dʒ tɕ dʑ ʃ ʒ ɕ ʑ ʂ ʐ",
    "SS": "s z ts dz",
    "nn": "n l ɲ ɫ ɬ ɭ ʎ ɳ ɮ ʟ",
    "RR": "r ɹ ɻ ʁ ʀ ɽ ɚ ɝ",
    "aa": "a ɑ ɐ æ ʌ ä",
    "E": "e ɛ ə ɜ ɘ œ ɞ",
    "ih": "i ɪ j ɨ ɯ ʏ y",
    "oh": "o ɔ ɒ ɤ ø ɵ",
    "ou": "u ʊ w ʉ ɥ ɰ",
}
PHONEME_VISEMES: dict[str, str] = {
    symbol: viseme for viseme, symbols in _SYMBOLS.items() for symbol in symbols.split()
}
_LONGEST = max(len(symbol) for symbol in PHONEME_VISEMES)


def visemes_of_phoneme(phoneme: str) -> list[str]:
    """The shapes one phoneme passes through, in order ("aɪ" -> aa, ih; "tʃ" -> CH; "ˈɜː" -> E;
    "" -> nothing). Repeats collapse: "iː" is one `ih`."""
    shapes: list[str] = []
    at = 0
    while at < len(phoneme):
        for size in range(min(_LONGEST, len(phoneme) - at), 0, -1):
            viseme = PHONEME_VISEMES.get(phoneme[at : at + size])
            if viseme is not None:
                if not shapes or shapes[-1] != viseme:
                    shapes.append(viseme)
                at += size
                break
        else:
            at += 1  # a modifier (stress, length, nasal, aspiration) or an unknown symbol
    return shapes


def timeline(phonemes: Sequence[tuple[float, str]], end_ms: float) -> list[tuple[int, str]]:
    """The viseme timeline of timed phonemes: `phonemes` are (start in ms, IPA), in order, each
    lasting until the next one starts (the last until `end_ms`); a pause (empty phoneme) is
    `sil`. A phoneme with several shapes shares its time evenly among them. The answer is
    [(start ms, viseme)], with no two neighbours alike, starting at 0 and ending with `sil` at
    `end_ms` (the mouth closes when the sound ends)."""
    cues: list[tuple[int, str]] = [(0, REST)]
    ends = [start for start, _ in phonemes[1:]] + [end_ms]
    for (start, phoneme), end in zip(phonemes, ends, strict=True):
        shapes = visemes_of_phoneme(phoneme) if phoneme else [REST]
        if not shapes:
            continue
        step = max(end - start, 0) / len(shapes)
        for index, shape in enumerate(shapes):
            _add(cues, round(start + index * step), shape)
    _add(cues, round(end_ms), REST)
    return cues


def _add(cues: list[tuple[int, str]], at_ms: int, viseme: str) -> None:
    if cues[-1][1] == viseme:
        return
    if cues[-1][0] >= at_ms:  # a shape of no length is replaced by the one that follows it
        cues.pop()
        if cues and cues[-1][1] == viseme:
            return
        at_ms = max(at_ms, cues[-1][0] if cues else 0)
    cues.append((at_ms, viseme))


def scaled(cues: Iterable[tuple[int, str]], factor: float) -> list[tuple[int, str]]:
    """A timeline stretched in time by `factor` (a backend's audio lasts longer or shorter than
    the built-in engine's timing of the same text)."""
    return [(round(at * factor), viseme) for at, viseme in cues]


def viseme_at(cues: Sequence[tuple[int, str]], at_ms: float) -> str:
    """The viseme showing at `at_ms` of a timeline."""
    shown = REST
    for start, viseme in cues:
        if start > at_ms:
            break
        shown = viseme
    return shown


# The mouth model: how open (jaw drop) and how wide (lip spread) each viseme is, from 0 to 1.
# The pages' canvas and the talking-video renderer both draw the mouth from it.
MOUTH: dict[str, tuple[float, float]] = {
    "sil": (0.0, 0.5),
    "PP": (0.0, 0.45),
    "FF": (0.15, 0.55),
    "TH": (0.2, 0.55),
    "DD": (0.3, 0.55),
    "kk": (0.35, 0.55),
    "CH": (0.3, 0.35),
    "SS": (0.2, 0.65),
    "nn": (0.25, 0.55),
    "RR": (0.3, 0.4),
    "aa": (0.9, 0.6),
    "E": (0.6, 0.7),
    "ih": (0.4, 0.75),
    "oh": (0.7, 0.3),
    "ou": (0.45, 0.2),
}


# How big the drawn opening is, in widths of the face's closed mouth (corner to corner): its
# width at `wide` 0 and 1, its height when fully open, and the lips' thickness around it. The
# pages receive these with MOUTH, so the canvas and the videos open a mouth alike.
OPENING = {"narrow": 0.5, "broad": 1.0, "tall": 0.46, "lip": 0.065}


def opening_size(open_: float, wide: float, mouth_width: float) -> tuple[float, float, float]:
    """(width, height, lip thickness) in pixels of the opening drawn for a mouth shape on a
    face whose closed mouth is `mouth_width` pixels wide."""
    width = mouth_width * (OPENING["narrow"] + (OPENING["broad"] - OPENING["narrow"]) * wide)
    return width, mouth_width * OPENING["tall"] * open_, mouth_width * OPENING["lip"]
