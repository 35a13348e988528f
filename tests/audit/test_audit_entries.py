"""An audit makes one task and one row per image of a feature file that holds several."""

import sys
from pathlib import Path

from lbdviewer.audit.runner import plan_tasks
from lbdviewer.audit.tasks import FROM_FILE, input_path, row_key, run_task

sys.path.insert(0, str(Path(__file__).parent.parent / "gui"))
from test_feature_choice import _bare_file  # noqa: E402  (two images, nothing named)


def test_a_file_of_two_images_makes_two_tasks_and_rows(tmp_path):
    path = _bare_file(tmp_path / "two.yml")
    path.write_text(path.read_text().replace("---\n", "---\ndescriptor: orb\nimage_size: [ 64, 64 ]\n"))
    tasks = plan_tasks([str(path), "/x/a.png"], ["orb"], ocr=False, iterations=2)
    assert [t.key for t in tasks] == [(f"{path}#left", FROM_FILE), (f"{path}#right", FROM_FILE), ("/x/a.png", "orb")]
    row, _ = run_task(tasks[1])
    assert row["input"] == f"{path}#right" and row_key(row) == tasks[1].key
    assert row["status"] == "ok" and row["keypoints"] == 3, row["status"]
    assert input_path(row["input"]) == str(path)
