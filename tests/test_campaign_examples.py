"""A campaign's examples are distinct graphs: Hypothesis starts each batch of the fuzz loop from the
simplest graph again, and the same graph checked twice is one example, not two."""

from __future__ import annotations

from harness import paths
from harness.campaign import BATCH, run_campaign


def test_a_graph_is_checked_and_counted_once_per_campaign(tmp_path):
    hashes: list[str] = []
    seen: list = []
    examples = 4 * BATCH  # several batches, each starting from the simplest graph
    result = run_campaign([paths.get("eager")], budget_s=300, out_dir=tmp_path, max_examples=examples,
                          lifetimes=False, on_example=seen.append,
                          on_record=lambda r: hashes.append(r["hash"]) if r["kind"] == "example" else None)
    assert result.examples == len(hashes) == examples
    assert len(set(hashes)) == len(hashes)  # no graph twice
    assert len(seen) == examples  # and none checked twice: on_example sees each graph it checks
    smallest = min(seen, key=lambda spec: (len(spec.functions), sum(len(fn.args) for fn in spec.functions)))
    assert sum(spec == smallest for spec in seen) == 1
