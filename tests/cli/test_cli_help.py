"""A newcomer's command line: help that lists the commands, defaults shown, one meaning of --keypoints."""

import json
import os
import subprocess
import sys

import cv2
import pytest

from lbdviewer.cli.main import build_parser, main

#: Keys both ``reconstruct --metrics`` and ``invert --metrics`` write.
SHARED_METRICS = {"output", "shape", "bit_consistency", "bit_consistency_min_site", "solver_bit_consistency",
                  "correlation", "psnr", "ssim", "covered_fraction", "seconds", "sites", "uncovered_pixels",
                  "parameters", "versions", "solver"}


@pytest.fixture(scope="module")
def image_file(write_wave_image):
    return write_wave_image(96)


def test_top_level_help_lists_every_command_and_the_version(capsys):
    _, commands = build_parser()
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for name, summary in commands.items():
        assert f"  {name}" in text and summary in text
    assert {"reconstruct", "invert", "extract", "verify-model", "figures"} <= set(commands)
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("lbdviewer ")


def test_every_option_of_every_command_has_plain_help_with_its_default(capsys):
    parser, commands = build_parser()
    for name in commands:
        assert main([name, "--help"]) == 0
        text = capsys.readouterr().out
        assert "``" not in text and ":func:" not in text and ":mod:" not in text, name
    assert set(parser.command_parsers) == set(commands)
    for name, sub in parser.command_parsers.items():
        for action in sub.options:
            if action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings or action.dest} has no help"
            if action.option_strings and action.default not in (None, False):
                shown = sub.formatter_class("x")._get_help_string(action)
                assert "default" in shown, f"{name} {action.option_strings} does not show its default"


def test_keypoints_fast_is_a_deprecated_alias_of_sites_fast(tmp_path, image_file, capsys):
    metrics = tmp_path / "m.json"
    assert main(["reconstruct", str(image_file), "-o", str(tmp_path / "o.png"), "--keypoints", "fast",
                 "--patch-size", "16", "--m", "64", "--iterations", "2", "--metrics", str(metrics)]) == 0
    captured = capsys.readouterr()
    assert "deprecated" in captured.err and "--sites fast" in captured.err
    assert "fast sites" in captured.out  # the summary line
    assert json.loads(metrics.read_text())["parameters"]["site_layout"] == "fast"


def test_invert_metrics_have_the_schema_of_reconstruct(tmp_path, image_file, capsys):
    metrics = {name: tmp_path / f"{name}.json" for name in ("reconstruct", "invert")}
    assert main(["reconstruct", str(image_file), "-o", str(tmp_path / "r.png"), "--patch-size", "16", "--m", "64",
                 "--iterations", "2", "--metrics", str(metrics["reconstruct"]), "--quiet"]) == 0
    features = tmp_path / "f.npz"
    assert main(["extract", str(image_file), "-o", str(features), "--descriptor", "opencv-brief",
                 "--keypoints", "10"]) == 0
    assert main(["invert", str(features), "-o", str(tmp_path / "i.jpg"), "--iterations", "2",
                 "--reference", str(image_file), "--metrics", str(metrics["invert"]), "--quiet"]) == 0
    reports = {name: json.loads(path.read_text()) for name, path in metrics.items()}
    for name, report in reports.items():
        assert SHARED_METRICS <= set(report), (name, SHARED_METRICS - set(report))
        assert 0.0 <= report["bit_consistency"] <= 1.0
    assert isinstance(reports["reconstruct"]["parameters"]["patch_size"], int)
    for report in reports.values():  # the solver's record says what ran, not only what was asked
        assert report["solver"]["iterations_requested"] == 2 and 1 <= report["solver"]["iterations_run"] <= 2
    assert (tmp_path / "i.jpg").read_bytes()[:2] == b"\xff\xd8"  # a JPEG under a .jpg name


def test_a_run_with_standard_error_closed_succeeds(tmp_path, image_file):
    out = tmp_path / "o.png"
    code = ("import sys; from lbdviewer.cli.main import main; "
            f"sys.exit(main(['reconstruct', {str(image_file)!r}, '-o', {str(out)!r}, '--patch-size', '16', "
            "'--m', '32', '--iterations', '2']))")
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                          preexec_fn=lambda: os.close(2), timeout=120)
    assert done.returncode == 0 and out.exists()
    assert cv2.imread(str(out), cv2.IMREAD_UNCHANGED).shape == (96, 96)
    assert str(out) in done.stdout


def test_importing_the_cli_loads_no_numeric_library():
    code = "import sys, lbdviewer.cli.main; print(sorted(m for m in ('numpy', 'cv2', 'numba') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
