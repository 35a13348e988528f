import json

import numpy as np

from lbdviewer.cli.main import main
from lbdviewer.io.images import load_image, save_png


def test_reconstruct_end_to_end_writes_png_and_metrics(tmp_path):
    image = np.zeros((40, 40)); image[10:30, 10:30] = 0.8
    save_png(tmp_path / "in.png", image)
    status = main(["reconstruct", str(tmp_path / "in.png"), "-o", str(tmp_path / "out.png"), "--patch-size", "16",
                   "--m", "64", "--offset", "8", "--iterations", "20", "--metrics", str(tmp_path / "m.json"),
                   "--quiet"])
    assert status == 0
    assert load_image(tmp_path / "out.png").shape == (40, 40)
    metrics = json.loads((tmp_path / "m.json").read_text())
    for key in ("bit_consistency", "correlation", "psnr", "ssim", "orientation_error_deg", "seconds", "sites"):
        assert key in metrics
    assert metrics["parameters"]["mode"] == "joint" and metrics["sites"] == 16
    # the record names the code and the solver that ran, not just the method
    assert metrics["versions"]["lbdviewer"] and metrics["versions"]["numba"]
    (stage,) = metrics["parameters"]["solver_settings"]["stages"]  # offset 8: no coarse stage
    assert stage["solver"] == "JointSignConsistency" and stage["iterations"] == 20
    assert stage["oriented"] and stage["strict_ties"] and stage["gated_after"] == 17


def test_bad_image_file_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "bad.png").write_bytes(b"nope")
    assert main(["reconstruct", str(tmp_path / "bad.png"), "-o", str(tmp_path / "out.png")]) == 2
    assert "bad.png" in capsys.readouterr().err
    assert not (tmp_path / "out.png").exists()


def test_summary_line_says_how_many_iterations_ran(tmp_path, capsys):
    image = np.zeros((40, 40)); image[10:30, 10:30] = 0.8
    save_png(tmp_path / "in.png", image)
    status = main(["reconstruct", str(tmp_path / "in.png"), "-o", str(tmp_path / "out.png"), "--patch-size", "16",
                   "--m", "64", "--offset", "8", "--iterations", "500", "--metrics", str(tmp_path / "m.json")])
    assert status == 0
    ran = json.loads((tmp_path / "m.json").read_text())["solver"]["iterations_run"]
    assert ran < 500  # the square's bits are all reproduced long before: the solve stops early
    assert f"method consistency, {ran} of 500 iterations" in capsys.readouterr().out
