"""What a portrait looks like, decided from its prompt and seed.

Every choice is drawn from SHAKE-256 of (version, seed, prompt), read as a stream of uniform
numbers: the same prompt and seed give the same portrait for as long as `VERSION` stays, on any
machine and any numpy (numpy's own random streams may change between releases). A few words in
the prompt ("red hair", "glasses", "beard", ...) steer the matching choice; everything else the
prompt changes only through the hash."""

from __future__ import annotations

import colorsys
import hashlib
import re
from dataclasses import dataclass
from typing import TypeVar

from service.generators.sdf import Colour

# Bump when the drawing changes, so a stored seed is known to mean a different picture.
VERSION = b"portrait-1"
T = TypeVar("T")


class Draw:
    """Uniform numbers from a SHAKE-256 stream."""

    def __init__(self, prompt: str, seed: int) -> None:
        material = VERSION + b"\0" + seed.to_bytes(8, "big") + prompt.encode("utf-8", "replace")
        self._bytes = hashlib.shake_256(material).digest(4 * 256)
        self._at = 0

    def unit(self) -> float:
        """A number in [0, 1)."""
        chunk = self._bytes[self._at : self._at + 4]
        self._at += 4
        return int.from_bytes(chunk, "big") / 2**32

    def between(self, low: float, high: float) -> float:
        return low + (high - low) * self.unit()

    def chance(self, probability: float) -> bool:
        return self.unit() < probability

    def pick(self, options: tuple[T, ...] | list[T]) -> T:
        return options[int(self.unit() * len(options))]


def hsl(hue: float, saturation: float, lightness: float) -> Colour:
    r, g, b = colorsys.hls_to_rgb(hue % 1.0, lightness, saturation)
    return (r, g, b)


def mix(a: Colour, b: Colour, t: float) -> Colour:
    return (a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t)


def shade(colour: Colour, factor: float) -> Colour:
    return (colour[0] * factor, colour[1] * factor, colour[2] * factor)


def _rgb(hex_colour: str) -> Colour:
    value = int(hex_colour, 16)
    return ((value >> 16) / 255, ((value >> 8) & 255) / 255, (value & 255) / 255)


SKIN = tuple(_rgb(c) for c in ("ffe0c7", "f6cfae", "eab68f", "d89f74", "c08457", "9c6640",
                               "7d4f2f", "5e3a22"))  # fmt: skip
HAIR = {
    "black": _rgb("231f20"),
    "brown": _rgb("5a3825"),
    "chestnut": _rgb("7b4424"),
    "auburn": _rgb("9b3c1e"),
    "red": _rgb("b8461f"),
    "blonde": _rgb("e0b86a"),
    "platinum": _rgb("ece3cf"),
    "grey": _rgb("a8a6a3"),
    "white": _rgb("f2f0ec"),
    "pink": _rgb("ee8fb5"),
    "blue": _rgb("4f7fd8"),
    "green": _rgb("4aa57d"),
    "purple": _rgb("8a5cc8"),
}
NATURAL_HAIR = ("black", "brown", "chestnut", "auburn", "blonde", "platinum", "grey")
EYES = tuple(_rgb(c) for c in ("5b3a1e", "7a5a2e", "4b7a4a", "3f6fa8", "6d7b86", "2e2420"))
HAIR_STYLES = ("short", "bob", "long", "bun", "curly", "buzz", "swept", "bald")
EYE_STYLES = ("round", "round", "dot", "happy")
MOUTHS = ("smile", "smile", "grin", "neutral", "smirk")
BACKDROPS = ("plain", "rings", "stripes", "dots", "bubbles")
NECKLINES = ("crew", "vee", "collar", "turtleneck")
HAIR_ALIASES = {"blond": "blonde", "gray": "grey", "silver": "grey", "ginger": "red",
                "dark": "black", "brunette": "brown"}  # fmt: skip
# Words that name a hair colour or style on their own (else "<colour> hair", "long hair").
HAIR_WORDS = {"blonde": "blonde", "blond": "blonde", "ginger": "red", "redhead": "red"}
STYLE_WORDS = {"bob": "bob", "bun": "bun", "curly": "curly", "afro": "curly", "bald": "bald",
               "buzz": "buzz", "shaved": "buzz", "ponytail": "long"}  # fmt: skip


@dataclass(frozen=True)
class Traits:
    skin: Colour
    hair: Colour
    hair_style: str
    eyes: Colour
    eye_style: str
    mouth: str
    backdrop: str
    neckline: str
    sky: Colour  # the backdrop's main colour
    accent: Colour  # its pattern colour
    shirt: Colour
    face_width: float  # half-widths and half-heights in figure units
    face_height: float
    jaw: float  # chin narrowness: 0.55 pointed .. 0.9 square
    part: float  # where the fringe parts, -1 .. 1
    brow_tilt: float
    glasses: bool
    beard: bool
    earrings: bool
    freckles: bool
    hat: bool
    blush: float
    rng: Draw  # left to draw what depends on several traits (freckle spots)


def _words(prompt: str) -> set[str]:
    return set(re.findall(r"[a-z]+", prompt.lower()))


def _hair_colour(draw: Draw, words: set[str], prompt: str) -> Colour:
    drawn = draw.pick(NATURAL_HAIR) if draw.chance(0.85) else draw.pick(list(HAIR))
    named = re.search(r"\b([a-z]+)[- ]hair", prompt.lower())
    name = HAIR_ALIASES.get(named[1], named[1]) if named else None
    if name not in HAIR:
        name = next((HAIR_WORDS[w] for w in sorted(words) if w in HAIR_WORDS), drawn)
    return HAIR[name]


def _hair_style(draw: Draw, words: set[str], prompt: str) -> str:
    drawn = draw.pick(HAIR_STYLES)
    named = re.search(r"\b(long|short)[- ]hair", prompt.lower())
    if named:
        return named[1]
    return next((STYLE_WORDS[w] for w in sorted(words) if w in STYLE_WORDS), drawn)


def _wants(draw: Draw, words: set[str], names: tuple[str, ...], probability: float) -> bool:
    """A keyword asks for the feature; otherwise the hash decides (the draw happens either
    way, so a keyword changes only its own feature)."""
    drawn = draw.chance(probability)
    return drawn or bool(words & set(names))


def traits_of(prompt: str, seed: int) -> Traits:
    draw, words = Draw(prompt, seed), _words(prompt)
    hair = _hair_colour(draw, words, prompt)
    style = _hair_style(draw, words, prompt)
    hue = draw.unit()
    sky = hsl(hue, draw.between(0.35, 0.65), draw.between(0.72, 0.86))
    accent = hsl(hue + draw.between(-0.06, 0.06), 0.5, draw.between(0.62, 0.78))
    shirt = hsl(hue + draw.between(0.33, 0.67), draw.between(0.35, 0.7), draw.between(0.35, 0.6))
    return Traits(
        skin=draw.pick(SKIN),
        hair=hair,
        hair_style=style,
        eyes=draw.pick(EYES),
        eye_style=draw.pick(EYE_STYLES),
        mouth=draw.pick(MOUTHS),
        backdrop=draw.pick(BACKDROPS),
        neckline=draw.pick(NECKLINES),
        sky=sky,
        accent=accent,
        shirt=shirt,
        face_width=draw.between(0.15, 0.18),
        face_height=draw.between(0.19, 0.22),
        jaw=draw.between(0.55, 0.9),
        part=draw.between(-1, 1),
        brow_tilt=draw.between(-0.012, 0.012),
        glasses=_wants(draw, words, ("glasses", "spectacles"), 0.25),
        beard=_wants(draw, words, ("beard", "bearded"), 0.18),
        earrings=_wants(draw, words, ("earrings", "earring"), 0.25),
        freckles=_wants(draw, words, ("freckles", "freckled"), 0.2),
        hat=_wants(draw, words, ("hat", "beanie"), 0.12),
        blush=draw.between(0.12, 0.3),
        rng=draw,
    )
