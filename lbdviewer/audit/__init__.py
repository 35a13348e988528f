"""Privacy audit at scale: invert the descriptors of many inputs and report what they give away.

``tasks`` (one input x one descriptor -> one row, a pure function), ``runner``
(a local process pool or a Dask cluster; ``REPORT_DIR/results.csv`` is the
checkpoint) and ``report`` (summary, plots, ``index.html``, Parquet). The
command is ``lbdviewer audit`` (:mod:`lbdviewer.cli.commands.audit`).
"""

from lbdviewer.audit.report import read_results, summarise, write_report
from lbdviewer.audit.runner import ResultsLog, collect_inputs, default_workers, iter_audit, plan_tasks
from lbdviewer.audit.tasks import COLUMNS, AuditTask, run_task

__all__ = ["COLUMNS", "AuditTask", "ResultsLog", "collect_inputs", "default_workers", "iter_audit", "plan_tasks",
           "read_results", "run_task", "summarise", "write_report"]
