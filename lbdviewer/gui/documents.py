"""What the window opens and shows: images, feature files, their pairing, a library's keypoints.

:class:`DocumentActions` is a mixin of :class:`~lbdviewer.gui.main_window.MainWindow`.
Files load on a worker thread of their own pool, so no solve can hold them
up. A feature file is paired with an image only when the image is the one
it was extracted from (the SHA-256 ``lbdviewer extract`` records; a file
without it asks), or when the user asks to compare them (File > Compare with
image); any other image opened is a new document. A library descriptor's
keypoints are detected and described by the library on a worker, and each
keypoint's view (pattern, maps, true patch) is built on one too.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os

from PyQt6.QtCore import Qt
from PyQt6.QtWidgets import QFileDialog, QMessageBox

from lbdviewer.features.files import FEATURE_SUFFIXES
from lbdviewer.gui import jobs, library_jobs, preferences
from lbdviewer.gui.menus import fill_recent_menu
from lbdviewer.gui.model import descriptor_label

DEFAULT_SAMPLE = "camera"
MAX_RECENT = 8
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.tif *.tiff *.bmp);;All files (*)"


class DocumentActions:
    """Opening, pairing and closing documents; a library's keypoints (mixed into the main window)."""

    # -- folders and recent files ----------------------------------------------------
    def last_folder(self):
        """Where the last image or feature file was opened from (the home folder if it is gone)."""
        return preferences.read_folder(self.settings, "paths/last_folder", os.path.expanduser("~"))

    def recent_files(self):
        """The files opened last, newest first (stored by Qt as a list; a one-item list reads back as a string)."""
        value = self.settings.value("paths/recent", [])
        value = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return [v for v in value if isinstance(v, str) and os.path.isabs(v)]

    def _remember_opened(self, path):
        self.settings.setValue("paths/last_folder", os.path.dirname(os.path.abspath(path)))
        recent = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("paths/recent", recent[:MAX_RECENT])
        self._update_recent_menu()

    def _update_recent_menu(self):
        fill_recent_menu(self.menu_actions.recent_menu, self.recent_files(), self.load_path)

    # -- drag and drop, dialogs --------------------------------------------------------
    def dragEnterEvent(self, event):  # noqa: N802  (Qt's name)
        if self._dropped_path(event.mimeData()) is not None:
            event.setDropAction(Qt.DropAction.CopyAction)  # never a move: the source keeps its file
            event.accept()
        else:
            event.ignore()

    def dragMoveEvent(self, event):  # noqa: N802  (Qt's name)
        self.dragEnterEvent(event)

    def dropEvent(self, event):  # noqa: N802  (Qt's name)
        path = self._dropped_path(event.mimeData())
        if path is None:
            event.ignore()
            return
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
        self.load_path(path)

    @staticmethod
    def _dropped_path(mime):
        if mime is None or not mime.hasUrls():
            return None
        for url in mime.urls():
            if url.isLocalFile():
                return url.toLocalFile()
        return None

    def open_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open image", self.last_folder(), IMAGE_FILTER)
        if path:
            self.load_path(path)

    def open_features_dialog(self):
        patterns = " ".join(f"*{suffix}" for suffix in FEATURE_SUFFIXES)
        path, _ = QFileDialog.getOpenFileName(self, "Open features", self.last_folder(),
                                              f"Feature files ({patterns});;All files (*)")
        if path:
            self.load_path(path)

    def compare_dialog(self):
        """File > Compare with image: any image of the feature file's size, shown and measured as *compared*."""
        if self.session.mode != "features":
            self.show_status("Compare with image needs an open feature file")
            return
        path, _ = QFileDialog.getOpenFileName(self, "Compare the feature file with an image", self.last_folder(),
                                              IMAGE_FILTER)
        if path:
            self.compare_with(path)

    def open_report_dialog(self):
        """Browse an ``lbdviewer audit`` report folder (asked for) in a dialog beside the window."""
        from lbdviewer.gui.report_browser import open_report_browser

        return open_report_browser(self)

    # -- loading (on a worker thread) ----------------------------------------------
    _first_launch = False

    def load_path(self, path):
        """Open an image or a feature file (``.npz`` or OpenCV FileStorage) on a worker thread.

        ``image_loaded`` follows when it is shown; on failure a message box
        says why (``load_failed``) and the current document stays.
        """
        kind = "features" if str(path).lower().endswith(FEATURE_SUFFIXES) else "image"
        options = None
        if kind == "features":  # what the file leaves open (image, descriptor, size) is asked, not flagged
            from lbdviewer.gui.feature_choice import feature_options

            try:
                options = feature_options(self, path)
            except ValueError as error:
                return self._on_load_failed(str(error))
            if options is None:
                return None
        self._reopening, self._load_purpose = None, "open"
        self.show_status(f"Opening {path}…", 0)
        self.loader.start(jobs.load_file(path, kind, patch_size=self.parameters.patch_size,
                                         feature_options=options))
        return None

    def compare_with(self, path):
        """Load the image at ``path`` to compare the open feature file with (not as its original)."""
        self._reopening, self._load_purpose = None, "compare"
        self.show_status(f"Opening {path} to compare…", 0)
        self.loader.start(jobs.load_file(path, "image", patch_size=self.parameters.patch_size))

    def load_sample(self, name):
        self._reopening, self._load_purpose = None, "open"
        self.loader.start(jobs.load_sample(name, patch_size=self.parameters.patch_size))

    def _reopen_last_image(self):
        """Open the last image again, or the default sample when there is none or it is gone.

        A first launch (nothing opened before) also reconstructs the sample's
        whole image once it is shown, so the window shows what it does.
        """
        last = preferences.read_last_image(self.settings)
        if last is None:
            self.load_sample(DEFAULT_SAMPLE)
            self._first_launch = True
        elif last.startswith("sample:"):
            self.load_sample(last.removeprefix("sample:"))
        else:
            self.load_path(last)
        self._reopening = last

    def _refuse_load(self, title, message):
        """Say why a file was not opened; a failed re-opening of the last image quietly opens the sample instead."""
        if self._reopening is not None:
            self.show_status(f"Could not reopen {self._reopening} ({message}): showing the sample {DEFAULT_SAMPLE}",
                             15000)
            self.load_sample(DEFAULT_SAMPLE)
            return
        self.show_error(title, message)
        self.load_failed.emit(message)

    def _on_loaded(self, loaded):
        self.statusBar().clearMessage()
        reopened, self._reopening = self._reopening, None
        if loaded.kind == "features":
            self._open_features(loaded)
            return
        if self._load_purpose == "compare":
            self._compare(loaded)
            return
        pairing = self.session.pairing_for(loaded.content.shape, loaded.sha256)
        if pairing == "original":
            self._pair(loaded, "original")
        elif pairing == "ask":
            self._ask_pairing(loaded)
        elif self._fits_patch(loaded.content.shape):
            self._open_image(loaded)
        else:
            self._reopening = reopened  # too small for the patch: a re-opening falls back quietly
            self._refuse_load("Image too small", self._too_small_message(loaded.content.shape, loaded.source))

    def _open_image(self, loaded):
        """``loaded`` (an image) is the new document."""
        self._stop_document_jobs()
        self.session.set_image(loaded.content, loaded.source, sha256=loaded.sha256, start_xy=loaded.start_xy,
                               preview=loaded.preview)
        preferences.write(self.settings, preferences.LAST_IMAGE_KEY, loaded.source)
        self._loaded(loaded)
        if self._first_launch:
            self._first_launch = False
            self.run_whole()
            self.show_status("First launch: the sample's whole image is rebuilt from its bits (Ctrl+R runs it again)")

    def _loaded(self, loaded, text=None):
        if not loaded.source.startswith("sample:"):
            self._remember_opened(loaded.source)
        self.show_status(text or f"Loaded {loaded.source}")
        self.image_loaded.emit(loaded.source)

    def _pair(self, loaded, relation):
        """Show ``loaded`` with the open feature file: its original, or an image compared with it."""
        self.session.pair_image(loaded.content, loaded.source, sha256=loaded.sha256, preview=loaded.preview,
                                relation=relation)
        self.describer.start(library_jobs.library_images(self.session.features, self.session.image))
        self._start_metrics()
        what = "its original (SHA-256 as recorded)" if relation == "original" and self.session.features.image_sha256 \
            else "its original" if relation == "original" else "an image compared with it, not its original"
        self._loaded(loaded, f"{self.session.name} opened with the feature file as {what}")

    def _compare(self, loaded):
        if self.session.mode != "features":
            self._refuse_load("Nothing to compare with", "open a feature file first (File > Open features)")
            return
        if tuple(loaded.content.shape) != tuple(self.session.features.image_shape):
            height, width = self.session.features.image_shape
            self._refuse_load("Not the feature file's size",
                              f"{os.path.basename(loaded.source)} is {loaded.content.shape[1]}x"
                              f"{loaded.content.shape[0]} pixels; the feature file describes a {width}x{height} image")
            return
        self._pair(loaded, "compared")

    def _ask_pairing(self, loaded):
        """The feature file records no image: ask what ``loaded`` is to it (a non-blocking box, kept in ``pairing_box``)."""
        if self.pairing_box is not None:
            self.pairing_box.close()
        name = os.path.basename(loaded.source) if not loaded.source.startswith("sample:") else loaded.source[7:]
        box = QMessageBox(QMessageBox.Icon.Question, "Is this the features' image?",
                          f"{name} has the size of the image the feature file describes, but the file does not "
                          "record which image that was (it has no SHA-256).\n\nIs it the image the features were "
                          "extracted from?", QMessageBox.StandardButton.NoButton, self)
        original = box.addButton("Yes: its original", QMessageBox.ButtonRole.YesRole)
        compared = box.addButton("No: compare with it", QMessageBox.ButtonRole.ActionRole)
        alone = box.addButton("No: open it alone", QMessageBox.ButtonRole.NoRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        actions = {original: lambda: self._pair(loaded, "original"),
                   compared: lambda: self._pair(loaded, "compared"),
                   alone: lambda: self._open_image(loaded)}

        def answered(button):
            self.pairing_box = None
            action = actions.get(button)
            if action is not None:
                action()

        box.buttonClicked.connect(answered)
        self.pairing_box = box
        box.open()

    def _on_load_failed(self, message):
        self.statusBar().clearMessage()
        self._refuse_load("Could not open the file", message)

    def _fits_patch(self, shape):
        return min(shape) >= self.parameters.patch_size

    def _too_small_message(self, shape, label):
        size = self.parameters.patch_size
        return (f"{os.path.basename(label)} is {shape[1]}x{shape[0]} pixels, smaller than the "
                f"{size}x{size} patch: choose a smaller patch size first")

    def _open_features(self, loaded):
        features = loaded.content
        self._stop_document_jobs()
        self.session.set_features(features, loaded.source, sha256=loaded.sha256)
        self.start_whole_job(self.session.start_features())
        self._loaded(loaded, f"Feature file {os.path.basename(loaded.source)}: {len(features.keypoints)} "
                             f"{descriptor_label(features.descriptor)} keypoints; inverting their bits…")

    def close_features(self):
        """File > Close features: back to the image shown with them, or the last image."""
        if self.session.mode != "features":
            return
        self._stop_document_jobs()
        if not self.session.close_features():
            self._reopen_last_image()
        self.show_status("Feature file closed")

    def _stop_document_jobs(self):
        """A new document: every job of the old one stops (their late results are dropped)."""
        for runner in (self.live_runner, self.whole_runner, self.describer, self.keypoint_runner,
                       self.metrics_runner):
            runner.stop()

    # -- a library's keypoints ----------------------------------------------------------
    def _describe_if_needed(self):
        """Start the library's description of the image when a library descriptor has none yet."""
        key = self.session.needs_library()
        if key is None:
            return
        descriptor, n_keypoints = key
        self.live_runner.stop()
        self.describer.start(library_jobs.describe_library(self.session.image, descriptor, n_keypoints=n_keypoints,
                                                           image_sha256=self.session.sha256))
        self.show_status(f"{descriptor_label(descriptor)} is detecting and describing keypoints (its first use "
                         "calibrates the model against the installed library: up to a minute)…", 0)

    def _on_described(self, item):
        """A worker's description (a library's of the image, or the model's images of a paired image)."""
        if isinstance(item, library_jobs.LibraryDocument):
            if self.session.set_library(item):
                self.show_status(f"{descriptor_label(item.descriptor)}: {len(item.features.keypoints)} keypoints "
                                 f"described in {item.seconds:.1f} s")
        elif isinstance(item, tuple):
            self.session.set_library_images(item)

    def _on_describe_failed(self, message):
        self.show_error("The library could not describe the image", message)

    def _select_default_keypoint(self):
        """The keypoint nearest the patch the user was looking at (a library's), or the strongest (a file's)."""
        features = self.session.keypoint_features
        if features is None:
            return
        if len(features.keypoints) == 0:
            self.show_status(f"{descriptor_label(features.descriptor)} kept no keypoint in this image: nothing to "
                             "show or solve", 15000)
            self.session.clear_live()
            return
        if self.session.mode == "library":
            x, y = self.source.patch_position()
            half = self.source.patch_size() / 2.0
            index = library_jobs.nearest_keypoint(features.keypoints, x + half, y + half)
        else:
            index = int(features.keypoints.response.argmax())
        self.select_keypoint(index)

    def select_keypoint(self, index):
        """Show keypoint ``index`` (its view is built on a worker) and solve it."""
        features = self.session.keypoint_features
        if features is None or not 0 <= int(index) < len(features.keypoints):
            return
        self.session.select_keypoint(int(index))

    def step_keypoint(self, step):
        """Select the next (``step`` 1) or previous (-1) keypoint."""
        features = self.session.keypoint_features
        if features is None or self.session.keypoint is None:
            return
        self.select_keypoint((self.session.keypoint + step) % len(features.keypoints))

    def _on_image_clicked(self, x, y, reach):
        """A click on the image selects the nearest keypoint, if it is within the click's reach or inside it."""
        features = self.session.keypoint_features
        if not self.session.keypoint_mode or features is None:
            return
        index = library_jobs.nearest_keypoint(features.keypoints, x, y)
        if index is None:
            return
        kp = features.keypoints
        distance = float(((kp.x[index] - x) ** 2 + (kp.y[index] - y) ** 2) ** 0.5)
        if distance <= max(reach, kp.size[index] / 2.0):
            self.select_keypoint(index)

    def _build_keypoint_view(self):
        if self.session.keypoint is None:
            return
        self.live_runner.stop()
        self.keypoint_runner.start(self.session.start_keypoint_view())

    # -- metrics (on a worker) ------------------------------------------------------------
    def _start_metrics(self):
        """Compute the inversion's metrics against the image now paired with it, on a worker."""
        items = self.session.start_metrics()
        if items is None:
            return
        result = self.session.whole.result
        self.metrics_runner.start(items)
        self._metrics_for = result

    def _on_metrics(self, metrics):
        self.session.set_metrics(self._metrics_for, metrics)

    def _on_metrics_finished(self, completed):
        if not completed:
            self.session.metrics_dropped()
        self.metrics_finished.emit(completed)
