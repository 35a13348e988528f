"""Screenshots of the app as a user meets it, rendered offscreen on screens of a given size.

    python scripts/app_screenshots.py [--out screens] [--readme] [--only first-launch,library,features]

``first-launch-WxH.png``: a real first launch (nothing remembered) on a WxH
screen (1280x720 and 1920x1080): the window fitted to the screen, the camera
sample, its patch solved live and its whole image rebuilt. ``--readme`` also
writes the 1920x1080 one to ``resources/docs/screenshot.png``, the README's
hero picture. ``library-NAME.png``: a library descriptor (ORB, BRISK, BEBLID,
AKAZE) on the camera sample: its keypoints, the selected keypoint's real
sampling geometry, frame vector, weight and occurrence maps, the live solve
from the library's bits. ``features.png`` and ``features-original.png``: an
ORB feature file of astronaut (``lbdviewer extract``) opened alone, then with
its original.

Each screen size runs in a process of its own (Qt's offscreen screen is set
when the application starts).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
SCREENS = ((1280, 720), (1920, 1080))
LIBRARIES = ("orb", "brisk", "beblid", "akaze")


def screen_env(width, height, folder):
    """The environment of a process whose offscreen screen is ``width x height``."""
    config = Path(folder) / f"screen-{width}x{height}.json"
    config.write_text(json.dumps({"screens": [{"name": "screen", "x": 0, "y": 0, "width": width, "height": height,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    return {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}"}


def settle(app, window, condition=lambda: True, timeout_s=600):
    """Run the event loop until the window's work is done and ``condition()`` holds."""
    from PyQt6.QtCore import QEventLoop

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)
        if window.session.image is not None and not window.busy() and condition():
            for _ in range(10):
                app.processEvents()
            return
        time.sleep(0.02)
    raise TimeoutError("the window did not settle")


def new_window(folder, *, load_sample):
    """A main window on an empty settings file (a first launch)."""
    from PyQt6.QtCore import QSettings

    from lbdviewer.gui.main_window import MainWindow

    settings = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings, load_sample=load_sample)
    window.show()
    return window


def first_launch(out, folder):
    from lbdviewer.gui.app import application

    app = application()
    window = new_window(folder, load_sample=True)
    settle(app, window, lambda: window.session.whole is not None and window.session.whole.status == "completed")
    screen = window.screen().availableGeometry()
    window.grab().save(str(out / f"first-launch-{screen.width()}x{screen.height()}.png"))
    window.close()


def libraries(out, folder):
    from lbdviewer.gui.app import application

    app = application()
    window = new_window(folder, load_sample=False)
    window.load_sample("camera")
    settle(app, window)
    for name in LIBRARIES:
        window.controls.set_value("family", name)
        window.rebuild()
        settle(app, window, lambda: window.session.keypoint_view is not None and window.session.live is not None
               and window.session.live.status == "completed")
        window.grab().save(str(out / f"library-{name}.png"))
    window.close()


def features(out, folder):
    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.files import save_features
    from lbdviewer.gui.app import application
    from lbdviewer.io.files import file_sha256
    from lbdviewer.io.images import load_image

    original = HERE / "resources" / "astronaut.png"
    path = Path(folder) / "astronaut-orb.npz"
    save_features(path, extract_features(load_image(original), "orb", n_keypoints=500,
                                         image_sha256=file_sha256(original)))
    app = application()
    window = new_window(folder, load_sample=False)
    window.load_path(str(path))
    settle(app, window, lambda: window.session.whole is not None and window.session.whole.status == "completed"
           and window.session.live is not None and window.session.live.status == "completed")
    window.grab().save(str(out / "features.png"))
    window.load_path(str(original))
    settle(app, window, lambda: window.session.has_pixels and window.session.whole.metrics is not None
           and window.session.keypoint_view is not None and window.session.keypoint_view.patch is not None)
    window.grab().save(str(out / "features-original.png"))
    window.close()


PARTS = {"first-launch": first_launch, "library": libraries, "features": features}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(HERE / "screens"), help="folder of the screenshots (default: screens/)")
    parser.add_argument("--readme", action="store_true", help="also write resources/docs/screenshot.png")
    parser.add_argument("--only", default=",".join(PARTS), help=f"comma-separated parts of {tuple(PARTS)}")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # one part in this process (run by the parent)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.part:
        with tempfile.TemporaryDirectory() as folder:
            PARTS[args.part](out, folder)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        for part in args.only.split(","):
            for width, height in SCREENS if part == "first-launch" else SCREENS[1:]:
                subprocess.run([sys.executable, __file__, "--out", str(out), "--part", part], check=True,
                               env=screen_env(width, height, folder), cwd=HERE)
                print(f"{part} on a {width}x{height} screen: done")
    if args.readme:
        shutil.copyfile(out / "first-launch-1920x1080.png", HERE / "resources" / "docs" / "screenshot.png")
        print("resources/docs/screenshot.png: the first launch on a 1920x1080 screen")
    for path in sorted(out.glob("*.png")):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
