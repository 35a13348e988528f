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

The generalisation set: scenes no solver setting was chosen on, made to
resemble what a user photographs or screenshots (``scripts/readme_quality.py``
scores them in the README's generalisation table):

- ``whiteboard``: five marker lines, a box and an arrow on a board lit
  unevenly (a window's light falling off across it: grey 120 to 235);
- ``dark-screen``: a dark-mode phone settings screen at half the size of a
  1080-pixel-wide screenshot: light text with capitals 14-22 pixels high on
  grey 18 (a network name, its password, a guest key), a switch and a button;
- ``receipt``: a shop receipt, dark text 9-14 pixels high on paper lying on
  a darker table;
- ``faces``: a 10 x 10 mosaic of the 100 faces of :func:`skimage.data.lfw_subset`,
  each enlarged from 25 to 48 pixels;
- ``plate``: the back of a car, a licence plate with dark letters 36 pixels
  high on white (FAST keypoints gather on its letters).

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
#: Lines of ``whiteboard.png``: (text, cap height in pixels); an arrow leads from the last to a box.
WHITEBOARD_LINES = (("SPRINT GOALS", 28), ("FIX LOGIN PAGE", 22), ("REVIEW BUDGET", 22), ("CALL SUPPLIER", 22),
                    ("DEMO ON FRIDAY", 22))
#: Lines of ``dark-screen.png`` in reading order: (text, cap height in pixels): the app bar's title, a switch's
#: label, four settings rows (a grey label over a white value), the button's text.
DARK_SCREEN_LINES = (("Wi-Fi settings", 22), ("Use Wi-Fi", 18),
                     ("Network name", 14), ("HomeBase Fiber", 18), ("Password", 14), ("PurpleTiger42", 18),
                     ("Security", 14), ("WPA2 Personal", 18), ("Guest network key", 14), ("maple storm 7781", 18),
                     ("Forget network", 16))
#: Lines of ``receipt.png``: (text, cap height in pixels); digits are printed but not read (letters only count).
RECEIPT_LINES = (("CORNER CAFE", 16), ("ESPRESSO 2.40", 12), ("CROISSANT 1.90", 12), ("ORANGE JUICE 3.50", 12),
                 ("TOTAL 7.80", 14), ("CARD VISA", 12), ("THANK YOU", 12))
#: The characters of ``plate.png``'s licence plate.
PLATE_TEXT = "KX 482 JD"


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


def _text_lines(image, lines, *, left, top, gap, value, font=cv2.FONT_HERSHEY_SIMPLEX, thickness=None):
    """Draw ``(text, cap height)`` lines with their top ``gap`` pixels apart from ``top``; returns their boxes."""
    boxes = []
    for text, cap in lines:
        scale = cap / cv2.getTextSize("H", font, 1.0, 1)[0][1]
        weight = max(1, round(cap / 10)) if thickness is None else thickness
        baseline = top + cap
        cv2.putText(image, text, (left, baseline), font, scale, value, weight, lineType=cv2.LINE_AA)
        (width, _), _ = cv2.getTextSize(text, font, scale, weight)
        boxes.append((left, top, left + width, baseline))
        top = baseline + gap
    return boxes


def whiteboard_image(lines=WHITEBOARD_LINES, *, width=512, height=384, seed=3):
    """Marker text, a box and an arrow on a white board under uneven light (see the module notes).

    The picture is light times reflectance: the board reflects 0.95, the marker
    0.12; the light falls off smoothly from a window at the top left (0.52 to
    1.0 of full), then the camera adds noise of 1.5 grey levels.
    """
    rows, cols = np.mgrid[0:height, 0:width].astype(np.float64)
    distance = np.hypot((cols + 80.0) / width, (rows + 60.0) / height)
    light = 0.52 + 0.48 * np.exp(-0.9 * distance ** 2)
    ink = np.zeros((height, width), dtype=np.uint8)
    boxes = _text_lines(ink, lines, left=34, top=40, gap=40, value=255)
    cv2.rectangle(ink, (372, 150), (478, 236), 255, 3, lineType=cv2.LINE_AA)
    last = boxes[-1]
    cv2.arrowedLine(ink, (last[2] + 16, (last[1] + last[3]) // 2), (420, 246), 255, 3, line_type=cv2.LINE_AA,
                    tipLength=0.12)
    reflectance = 0.95 - (0.95 - 0.12) * (ink / 255.0)
    noise = np.random.default_rng(seed).normal(0.0, 1.5, (height, width))
    return np.clip(np.round(255.0 * light * reflectance + noise), 0, 255).astype(np.uint8)


def _rounded_box(image, corner0, corner1, radius, value):
    """Fill the rectangle ``corner0``-``corner1`` (x, y) with corners rounded to ``radius`` pixels."""
    (x0, y0), (x1, y1) = corner0, corner1
    cv2.rectangle(image, (x0 + radius, y0), (x1 - radius, y1), value, -1)
    cv2.rectangle(image, (x0, y0 + radius), (x1, y1 - radius), value, -1)
    for x, y in ((x0 + radius, y0 + radius), (x1 - radius, y0 + radius), (x0 + radius, y1 - radius),
                 (x1 - radius, y1 - radius)):
        cv2.circle(image, (x, y), radius, value, -1, lineType=cv2.LINE_AA)


def dark_screen_image(lines=DARK_SCREEN_LINES, *, width=540, height=720):
    """A dark-mode phone settings screen at half the size of a 1080-pixel-wide screenshot (see the module notes).

    A status bar (signal, battery), an app bar (back arrow, title), a row
    with a switch, four rows of a grey label over a white value separated by
    rules, and a button; background grey 18, text grey 150 (labels) to 232.
    """
    image = np.full((height, width), 18, dtype=np.uint8)
    for i, bar in enumerate((5, 8, 11, 14)):  # status bar: signal strength and battery
        cv2.rectangle(image, (width - 112 + 6 * i, 26 - bar), (width - 109 + 6 * i, 26), 200, -1)
    cv2.rectangle(image, (width - 70, 12), (width - 40, 26), 200, 1)
    cv2.rectangle(image, (width - 67, 15), (width - 50, 23), 200, -1)
    image[40:104] = 30  # app bar
    cv2.line(image, (24, 72), (42, 72), 232, 2, lineType=cv2.LINE_AA)
    cv2.line(image, (24, 72), (32, 64), 232, 2, lineType=cv2.LINE_AA)
    cv2.line(image, (24, 72), (32, 80), 232, 2, lineType=cv2.LINE_AA)
    title, switch, *rows, button = lines
    _text_lines(image, [title], left=64, top=72 - title[1] // 2, gap=0, value=232)
    _text_lines(image, [switch], left=24, top=150 - switch[1] // 2, gap=0, value=232)
    _rounded_box(image, (width - 88, 134), (width - 32, 166), 16, 150)  # the switch, on
    cv2.circle(image, (width - 48, 150), 12, 240, -1, lineType=cv2.LINE_AA)
    top = 196
    for (label, value) in zip(rows[::2], rows[1::2]):
        cv2.line(image, (24, top - 14), (width - 24, top - 14), 44, 1)
        _text_lines(image, [label], left=24, top=top + 8, gap=0, value=150)
        _text_lines(image, [value], left=24, top=top + 8 + label[1] + 12, gap=0, value=232)
        top += 96
    _rounded_box(image, (24, top + 20), (width - 24, top + 76), 28, 56)
    font = cv2.FONT_HERSHEY_SIMPLEX
    scale = button[1] / cv2.getTextSize("H", font, 1.0, 1)[0][1]
    (text_width, _), _ = cv2.getTextSize(button[0], font, scale, 2)
    _text_lines(image, [button], left=(width - text_width) // 2, top=top + 48 - button[1] // 2, gap=0, value=232)
    return image


def receipt_image(lines=RECEIPT_LINES, *, width=384, height=512, seed=7):
    """A receipt (dark print on slightly grey paper, a dashed rule) lying on a darker, grainy table."""
    rng = np.random.default_rng(seed)
    table = cv2.GaussianBlur(rng.normal(0.0, 14.0, (height, width)), (0, 0), 6.0)
    image = 88.0 + table + np.linspace(-12.0, 12.0, width)[None, :]
    left, right = 40, 344
    paper = 238.0 - np.linspace(0.0, 14.0, height)[:, None] * np.ones((1, right - left))
    image[:, left:right] = paper
    ink = np.zeros((height, width), dtype=np.uint8)
    _text_lines(ink, lines[:1], left=left + 38, top=34, gap=0, value=255, thickness=2)
    boxes = _text_lines(ink, lines[1:], left=left + 20, top=92, gap=30, value=255, thickness=2)
    for x in range(left + 16, right - 16, 12):
        cv2.line(ink, (x, boxes[2][3] + 15), (x + 6, boxes[2][3] + 15), 255, 1)
    image = image - (image - 40.0) * (ink / 255.0) + rng.normal(0.0, 1.0, (height, width))
    return np.clip(np.round(image), 0, 255).astype(np.uint8)


def faces_image(*, tile=48, across=10):
    """The 100 faces of :func:`skimage.data.lfw_subset` (25 x 25 each), enlarged to ``tile`` and tiled."""
    faces = skimage.data.lfw_subset()[:across * across]
    tiles = [cv2.resize((255 * face).astype(np.float32), (tile, tile), interpolation=cv2.INTER_CUBIC)
             for face in faces]
    rows = [np.hstack(tiles[r * across:(r + 1) * across]) for r in range(across)]
    return np.clip(np.round(np.vstack(rows)), 0, 255).astype(np.uint8)


def plate_image(text=PLATE_TEXT, *, width=512, height=384, seed=5):
    """The back of a car: grey body lit from above, dark rear window, bumper, lights and a white plate."""
    rows = np.arange(height, dtype=np.float64)[:, None] * np.ones((1, width))
    image = 150.0 - 50.0 * rows / height
    image[:120, 60:452] = 42.0 + 0.1 * rows[:120, 60:452]
    image[300:352] = 62.0
    for x in (20, 412):
        image[160:220, x:x + 80] = 92.0
    image[190:262, 110:402] = 246.0
    ink = np.zeros((height, width), dtype=np.uint8)
    cv2.rectangle(ink, (110, 190), (401, 261), 255, 2)
    font = cv2.FONT_HERSHEY_DUPLEX
    scale = 36 / cv2.getTextSize("H", font, 1.0, 1)[0][1]
    (text_width, _), _ = cv2.getTextSize(text, font, scale, 4)
    cv2.putText(ink, text, (256 - text_width // 2, 244), font, scale, 255, 4, lineType=cv2.LINE_AA)
    image = image - (image - 12.0) * (ink / 255.0)
    image = cv2.GaussianBlur(image, (0, 0), 0.8) + np.random.default_rng(seed).normal(0.0, 1.5, (height, width))
    return np.clip(np.round(image), 0, 255).astype(np.uint8)


#: The generalisation set: file name -> its drawing function.
GENERALISATION = {"whiteboard": whiteboard_image, "dark-screen": dark_screen_image, "receipt": receipt_image,
                  "faces": faces_image, "plate": plate_image}


def main():
    RESOURCES.mkdir(exist_ok=True)
    cv2.imwrite(str(RESOURCES / "camera.png"), skimage.data.camera())
    cv2.imwrite(str(RESOURCES / "astronaut.png"), cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2BGR))
    cv2.imwrite(str(RESOURCES / "shapes.png"), shapes_image())
    cv2.imwrite(str(RESOURCES / "book-titles.png"), book_titles_image())
    cv2.imwrite(str(RESOURCES / "document.png"), document_image())
    for name, draw in GENERALISATION.items():
        cv2.imwrite(str(RESOURCES / f"{name}.png"), draw())


if __name__ == "__main__":
    main()
