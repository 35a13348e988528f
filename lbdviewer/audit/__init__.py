"""Privacy audit at scale: invert the descriptors of many inputs and report what they give away.

``tasks`` (one input x one descriptor -> one row, a pure function), ``runner``
(a local process pool or a Dask cluster; it runs ``lbdviewer defend``'s tasks
too), ``results_log`` (``REPORT_DIR/results.csv``, the checkpoint: one audit
at a time, read back tolerantly), ``results`` (rows read
back, text leaked, summaries), ``risk`` (levels and their rule), ``report``
(summary first, plots, ``index.html``, Parquet), ``handout`` (the PDF) and
``defences_report`` (measured defences). The commands are ``lbdviewer audit``
and ``lbdviewer defend`` (:mod:`lbdviewer.cli.commands`).
"""

from lbdviewer.audit.report import write_report
from lbdviewer.audit.results import read_results, summarise
from lbdviewer.audit.results_log import ResultsLog
from lbdviewer.audit.runner import collect_inputs, default_workers, iter_audit, plan_tasks
from lbdviewer.audit.tasks import COLUMNS, AuditTask, run_task

__all__ = ["COLUMNS", "AuditTask", "ResultsLog", "collect_inputs", "default_workers", "iter_audit", "plan_tasks",
           "read_results", "run_task", "summarise", "write_report"]
