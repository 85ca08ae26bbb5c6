"""Instruction counts per execution path, measured with callgrind.

One valgrind process imports torch once and counts many regions (see `callgrind` and
`worker`); `cases` says what to count, `workloads` what runs, `report` renders,
compares and gates, `bench` holds the CLI entry points. Importing this package does
not import torch.
"""

from harness.counting.bench import bench_main, compare_main, run_bench
from harness.counting.callgrind import (
    CountingError,
    Measurement,
    ValgrindNotFound,
    measure,
    parse_dump,
)
from harness.counting.cases import CaseError, CaseSpec, register_case, registered_cases
from harness.counting.report import (
    Attribution,
    CheckResult,
    ReportError,
    attribute,
    attribute_reports,
    baseline_path,
    check,
    compare,
    load_report,
    render_attribution,
    render_compare,
    render_table,
)

__all__ = [
    "Attribution",
    "CaseError",
    "CaseSpec",
    "CheckResult",
    "CountingError",
    "Measurement",
    "ReportError",
    "ValgrindNotFound",
    "attribute",
    "attribute_reports",
    "baseline_path",
    "bench_main",
    "check",
    "compare",
    "compare_main",
    "load_report",
    "measure",
    "parse_dump",
    "register_case",
    "registered_cases",
    "render_attribution",
    "render_compare",
    "render_table",
    "run_bench",
]
