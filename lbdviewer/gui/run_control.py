"""What the window runs: parameters to pattern, the live solver, the whole image.

:class:`RunActions` is a mixin of :class:`~lbdviewer.gui.main_window.MainWindow`.
Edits take effect after a short pause (debounced) and restart the live
solver; Play, Step and Ctrl+R apply a pending edit first. The live solver
runs on a thread pool of its own (a paused solve keeps its thread and blocks
nothing else), the whole image on another.
"""

from __future__ import annotations

from lbdviewer.gui import jobs, preferences


class RunActions:
    """Parameters, the live solver and the whole-image job (mixed into the main window)."""

    # -- parameters -> pattern, operator, views ------------------------------------
    def _on_parameter_changed(self, name, value):
        if name == "patch_size":
            self._apply_patch_size()
        self.show_status(f"{name} = {value}", 3000)
        self.parameter_timer.start()

    def _apply_patch_size(self):
        if self.session.mode == "pattern" or self.session.image is None:
            self.source.set_patch_size(self.parameters.patch_size)

    def _apply_pending_parameters(self):
        """An edit still waiting for its debounce takes effect now (before Step, Play or a run)."""
        if self.parameter_timer.isActive():
            self.rebuild()

    def rebuild(self):
        """Make the pattern and operator of the current parameters, refresh the views, restart the live solver.

        For a library descriptor the library describes the image first (on a worker).
        """
        self.parameter_timer.stop()
        if self.session.image is None:
            return
        try:
            self.session.rebuild(self.parameters.as_dict())
        except ValueError as error:
            self.show_error("Invalid parameters", str(error))
            return
        self._describe_if_needed()
        self.restart_live()

    def _on_patch_moved(self, x, y):
        if self.session.operator is None or self.session.pattern.patch_size != self.source.patch_size():
            return
        self.presenter.show_patch()
        self.patch_timer.start()

    def restretch(self):
        """View > Stretch was switched: draw the runs again by the chosen rule."""
        self.presenter.redraw_runs()

    # -- live solver -------------------------------------------------------------
    def restart_live(self, *, paused=None):
        """(Re)start the live solver on the current patch or keypoint; nothing shown stays from an older run."""
        self.patch_timer.stop()
        if self.session.keypoint_mode:
            if self.session.keypoint_view is None:
                self.live_runner.stop()
                self.session.clear_live()
                return
        elif self.session.operator is None:
            return
        paused = self._live_hold if paused is None else paused
        self.live_runner.stop()
        try:
            items = self.session.start_live(self.source.patch_position())
        except ValueError as error:  # nothing to solve
            self.session.clear_live()
            self.live.iteration_label.setText(str(error))
            return
        self.live_runner.start(items, paused=paused, delay=self.live.delay.value() / 1000.0)

    def play_pause(self):
        self._apply_pending_parameters()
        if self.live_runner.running:
            self._live_hold = not self.live_runner.paused
            self.live_runner.toggle()
        else:
            self._live_hold = False
            self.restart_live(paused=False)

    def step(self):
        self._apply_pending_parameters()
        self._live_hold = True
        if not self.live_runner.running:
            self.restart_live(paused=True)
        self.live_runner.step()

    def stop(self):
        """Esc: stop the live solver and the whole-image job."""
        self.live_runner.stop()
        self.cancel_whole()

    def _on_live_finished(self, completed):
        self.session.live_ended(completed)
        run = self.session.live
        if completed and run is not None and run.update is not None:
            self.show_status(f"Live solver {run.summary()}")
        self.live_finished.emit(completed)

    # -- whole image ----------------------------------------------------------------
    def run_whole(self):
        """Reconstruct the whole image (or invert the features) on a worker thread (progress, cancel)."""
        self._apply_pending_parameters()
        if self.session.image is None:
            return
        self.whole_runner.stop()
        self.metrics_runner.stop()
        try:
            items = self.session.start_whole()
        except ValueError as error:
            self.show_error("Nothing to reconstruct", str(error))
            return
        self.start_whole_job(items)
        what = "Inverting the features" if self.session.whole.features else "Reconstructing the whole image"
        self.show_status(f"{what}…")

    def start_whole_job(self, items):
        """Run a whole-image job whose estimates the worker maps for display (the window only draws them)."""
        reference = self.session.image if self.session.has_pixels else None
        self.whole_runner.start(jobs.with_display(items, self.presenter.choice, reference=reference,
                                                  mode=self.session.whole.mode))

    def cancel_whole(self):
        self.whole_runner.stop()
        self.metrics_runner.stop()

    def _on_whole_finished(self, completed):
        self.session.whole_ended(completed)
        run = self.session.whole
        if run is not None and run.status == "completed":
            if run.kind == "features" and not self.session.has_pixels:
                self.show_status("Feature file inverted: open the image it came from to compare")
            else:
                self.show_status("Whole image reconstructed" if run.kind == "pattern" else "Features inverted")
            self._start_metrics()
        elif run is not None:
            self.show_status("Whole-image reconstruction cancelled")
        self.whole_finished.emit(completed)

    def _on_whole_failed(self, message):
        self.session.whole_failed(message)
        self.show_error("Whole-image reconstruction failed", message)

    def _remember_parameters(self):
        preferences.save_parameters(self.settings, self.parameters)
