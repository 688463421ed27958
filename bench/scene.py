"""A natural-looking synthetic yuv420p frame for kernel benchmarks (no binary fixtures).

Sky gradient, soft clouds, a sun, hills, buildings with lit windows, a textured ground,
a few lines of text, a slight lens blur and sensor noise: edges, gradients, fine detail
and flat areas in the proportions of a real frame, unlike noise or a flat test card.
"""

from __future__ import annotations

import numpy as np


def _smooth_noise(rng: np.random.Generator, height: int, width: int, cell: int) -> np.ndarray:
    coarse = rng.normal(0.0, 1.0, (height // cell + 2, width // cell + 2))
    ys = np.linspace(0, coarse.shape[0] - 1.001, height)
    xs = np.linspace(0, coarse.shape[1] - 1.001, width)
    y0, x0 = ys.astype(int), xs.astype(int)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    top = coarse[y0][:, x0] * (1 - fx) + coarse[y0][:, x0 + 1] * fx
    bottom = coarse[y0 + 1][:, x0] * (1 - fx) + coarse[y0 + 1][:, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def _landscape(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    u, v = x / width, y / height
    rgb = np.empty((height, width, 3))
    for c, (top, bottom) in enumerate(((40, 200), (90, 220), (180, 250))):
        rgb[..., c] = top + (bottom - top) * v
    rgb += 18 * _smooth_noise(rng, height, width, max(4, width // 24))[..., None]
    sun = (u - 0.78) ** 2 + ((v - 0.22) * height / width) ** 2 < 0.0025
    rgb[sun] = (255, 236, 180)
    hills = v > 0.55 + 0.08 * np.sin(u * 9.0) + 0.03 * np.sin(u * 31.0)
    ground = 60 + 25 * _smooth_noise(rng, height, width, max(2, width // 160))
    rgb[hills] = np.stack([ground * 0.6, ground * 1.1, ground * 0.4], axis=-1)[hills]
    _buildings(rng, rgb, height, width)
    return rgb


def _buildings(rng: np.random.Generator, rgb: np.ndarray, height: int, width: int) -> None:
    for _ in range(9):
        w = int(rng.uniform(0.04, 0.09) * width)
        h = int(rng.uniform(0.15, 0.35) * height)
        left = int(rng.uniform(0.02, 0.6) * width)
        top = int(0.72 * height) - h
        rgb[top : top + h, left : left + w] = rng.uniform(70, 140)
        step = max(3, width // 160)
        windows = rgb[top + step : top + h - step, left + step : left + w - step]
        lit = rng.random((windows.shape[0] // (2 * step) + 1, windows.shape[1] // (2 * step) + 1))
        mask = np.kron(lit > 0.5, np.ones((2 * step, 2 * step)))
        mask = mask[: windows.shape[0], : windows.shape[1]]
        pattern = np.kron(np.ones_like(lit), np.pad(np.ones((step, step)), ((0, step), (0, step))))
        windows[(mask * pattern[: mask.shape[0], : mask.shape[1]]) > 0] = (250, 220, 120)


def _text(rgb: np.ndarray) -> None:
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:  # Pillow is a runtime dependency; keep the scene without it anyway
        return
    height, width = rgb.shape[:2]
    canvas = Image.new("L", (width, height), 0)
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=max(8, height // 28))
    lines = ("AVATAR SERVICE  1080p -> 2160p", "Lanczos3 / bicubic / bilinear")
    for line, words in enumerate(lines):
        draw.text((width // 20, height // 20 + line * height // 22), words, fill=255, font=font)
    ink = np.asarray(canvas, dtype=np.float64)[..., None] / 255.0
    rgb *= 1 - ink
    rgb += 250 * ink


def _blur(plane: np.ndarray) -> np.ndarray:
    padded = np.pad(plane, 1, mode="edge")
    rows = (padded[:-2] + 2 * padded[1:-1] + padded[2:]) / 4
    return (rows[:, :-2] + 2 * rows[:, 1:-1] + rows[:, 2:]) / 4


def natural_yuv420p(width: int, height: int, seed: int = 7) -> tuple[np.ndarray, ...]:
    """(Y, U, V) uint8 planes of a width x height frame, BT.709 limited range."""
    rng = np.random.default_rng(seed)
    rgb = _landscape(rng, height, width)
    _text(rgb)
    rgb = np.stack([_blur(rgb[..., c]) for c in range(3)], axis=-1)
    rgb = np.clip(rgb + rng.normal(0, 1.5, rgb.shape), 0, 255) / 255.0
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    luma = 0.2126 * r + 0.7152 * g + 0.0722 * b
    cb = (b - luma) / 1.8556
    cr = (r - luma) / 1.5748

    def quarter(c: np.ndarray) -> np.ndarray:
        return (c[0::2, 0::2] + c[1::2, 0::2] + c[0::2, 1::2] + c[1::2, 1::2]) / 4

    y = np.clip(np.rint(16 + 219 * luma), 0, 255).astype(np.uint8)
    u = np.clip(np.rint(128 + 224 * quarter(cb)), 0, 255).astype(np.uint8)
    v = np.clip(np.rint(128 + 224 * quarter(cr)), 0, 255).astype(np.uint8)
    return y, u, v
