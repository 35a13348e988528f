"""Write the sample images shipped in ``resources/`` (deterministic).

Real photographs are copied from :mod:`skimage.data` (offline, licences in
``resources/LICENSES.md``); the synthetic images are drawn here with OpenCV:

- ``shapes``: flat shapes whose edges take many orientations (Fig. 6 of the
  paper reconstructs such an image from 128 bits per patch);
- ``book-titles``: four printed title lines, black on white, for the
  legibility check of ``scripts/legibility.py``;
- ``document``: an identity-card-like page, seven printed lines 12-35 pixels
  high in two fonts on paper with faint noise (sigma 3 grey levels): flat,
  noisy regions where near-tie tests are decided by the noise.

Run ``python scripts/make_samples.py`` from the repository root.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import skimage.data

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
BOOK_TITLES = ("MOBY DICK", "DRACULA", "THE HOBBIT", "ULYSSES")
#: Lines of ``document.png``: (text, Hershey font, cap height in pixels).
DOCUMENT_LINES = (
    ("IDENTITY CARD", cv2.FONT_HERSHEY_TRIPLEX, 35),
    ("SURNAME MARTIN", cv2.FONT_HERSHEY_SIMPLEX, 22),
    ("GIVEN NAMES CLAIRE ANNE", cv2.FONT_HERSHEY_SIMPLEX, 18),
    ("NATIONALITY FRENCH", cv2.FONT_HERSHEY_TRIPLEX, 16),
    ("PLACE OF BIRTH LYON", cv2.FONT_HERSHEY_SIMPLEX, 15),
    ("ISSUED BY PREFECTURE DU RHONE", cv2.FONT_HERSHEY_TRIPLEX, 13),
    ("VALID UNTIL MARCH", cv2.FONT_HERSHEY_SIMPLEX, 12),
)
PAPER = 236
PAPER_NOISE = 3.0


def shapes_image(size=256):
    """Flat gray shapes with edges at many angles on a flat background."""
    image = np.full((size, size), 90, dtype=np.uint8)
    cv2.circle(image, (64, 64), 40, 220, -1, lineType=cv2.LINE_AA)
    cv2.rectangle(image, (140, 28), (228, 100), 30, -1)
    square = cv2.boxPoints(((70, 190), (80, 80), 30.0)).astype(np.int32)
    cv2.fillConvexPoly(image, square, 170, lineType=cv2.LINE_AA)
    triangle = np.array([[150, 230], [240, 230], [190, 130]], dtype=np.int32)
    cv2.fillConvexPoly(image, triangle, 250, lineType=cv2.LINE_AA)
    cv2.line(image, (120, 120), (250, 110), 0, 5, lineType=cv2.LINE_AA)
    return image


def book_titles_image(titles=BOOK_TITLES, *, width=512, line_height=96):
    """Four title lines in a bold sans-serif Hershey font, black on white."""
    image = np.full((line_height * len(titles), width), 255, dtype=np.uint8)
    font, scale, thickness = cv2.FONT_HERSHEY_DUPLEX, 2.0, 5
    for row, title in enumerate(titles):
        (text_width, text_height), _ = cv2.getTextSize(title, font, scale, thickness)
        origin = ((width - text_width) // 2, row * line_height + (line_height + text_height) // 2)
        cv2.putText(image, title, origin, font, scale, 0, thickness, lineType=cv2.LINE_AA)
    return image


def document_image(lines=DOCUMENT_LINES, *, width=512, height=384, seed=11):
    """Printed lines (text, font, cap height) on paper of grey ``PAPER`` with Gaussian noise ``PAPER_NOISE``."""
    ink = np.zeros((height, width), dtype=np.uint8)
    gap = (height - sum(cap for _, _, cap in lines)) // (len(lines) + 1)
    baseline = 0
    for text, font, cap in lines:
        baseline += gap + cap
        scale = cap / cv2.getTextSize("H", font, 1.0, 1)[0][1]
        thickness = max(1, round(cap / 10))
        cv2.putText(ink, text, (24, baseline), font, scale, 255, thickness, lineType=cv2.LINE_AA)
    noise = np.random.default_rng(seed).normal(0.0, PAPER_NOISE, (height, width))
    image = PAPER + noise - (PAPER - 20) * (ink / 255.0)
    return np.clip(np.round(image), 0, 255).astype(np.uint8)


def main():
    RESOURCES.mkdir(exist_ok=True)
    cv2.imwrite(str(RESOURCES / "camera.png"), skimage.data.camera())
    cv2.imwrite(str(RESOURCES / "astronaut.png"), cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2BGR))
    cv2.imwrite(str(RESOURCES / "shapes.png"), shapes_image())
    cv2.imwrite(str(RESOURCES / "book-titles.png"), book_titles_image())
    cv2.imwrite(str(RESOURCES / "document.png"), document_image())


if __name__ == "__main__":
    main()
