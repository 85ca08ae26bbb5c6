"""Campaigns that run torch.compile draw most graphs so that Dynamo traces every Function.

A Function with a jvp, a vjp, untraceable forward code or one tensor passed twice breaks
Dynamo's graph and runs eagerly under the fallback, untested by the compiled path. A campaign
selecting a `dynamo` or `+dynamo` path draws from graphs(favour_dynamo=True) (strategies/_graphs.py,
_traceable): most graphs traceable whole, the others with one Function drawn freely, the loop
form of the forward kept. Every other campaign draws as before.
"""

from __future__ import annotations

import dataclasses
import time

from hypothesis import HealthCheck, find, given, settings
from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.campaign import fuzz
from harness.engine import drawing, favours_dynamo
from harness.spec import GraphSpec
from strategies import graphs

SAMPLE = settings(max_examples=300, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def _traceable(fn) -> bool:
    refs = [a.ref for a in fn.args if a.ref is not None and not a.clone]
    if fn.api == "custom_op":  # Dynamo traces an op as one node, whatever its code style
        return len(refs) == len(set(refs))
    return (fn.code == "plain" and not fn.jvp and fn.backward_method == "backward" and fn.untraceable == "none"
            and len(refs) == len(set(refs)) and all(o.kind != "dirty" or fn.dirty_return == "input"
                                                    for o in fn.outputs))


def _shares(**kwargs) -> dict[str, float]:
    seen: dict[str, list[bool]] = {"whole": [], "all but one": [], "straight": [], "forward_ad": []}

    @SAMPLE
    @given(graphs(**kwargs))
    def draw(spec: GraphSpec) -> None:
        # a graph that runs forward AD keeps its Functions' jvps, by design (strategies' _traceable):
        # Dynamo runs those eagerly, and the graph's share is forward_ad's, counted below
        traced = [_traceable(fn) or (spec.forward_ad and _traceable(dataclasses.replace(fn, jvp=False)))
                  for fn in spec.functions]
        seen["whole"].append(all(traced))
        seen["all but one"].append(sum(traced) >= len(traced) - 1)
        seen["straight"].append(spec.forward_code == "straight")
        seen["forward_ad"].append(spec.forward_ad)

    draw()
    return {k: sum(v) / len(v) for k, v in seen.items()}


def test_favouring_dynamo_draws_most_graphs_traceable_whole() -> None:
    default, favoured = _shares(), _shares(favour_dynamo=True)
    assert default["whole"] < 0.2 and default["straight"] == 0.0, default
    assert favoured["whole"] >= 0.45, favoured  # about half (TRACEABLE_SHARE)
    assert favoured["all but one"] >= 0.95, favoured
    assert 0.8 <= favoured["straight"] < 1.0, favoured
    assert 0.0 < favoured["forward_ad"] < default["forward_ad"], (default, favoured)


def test_what_breaks_the_graph_stays_reachable_when_favouring_dynamo() -> None:
    search = settings(database=None, max_examples=2000, suppress_health_check=list(HealthCheck))
    for untraceable in (lambda fn: fn.jvp, lambda fn: fn.backward_method == "vjp", lambda fn: fn.code == "generic",
                        lambda fn: fn.untraceable != "none", lambda fn: fn.dirty_return == "result" and any(
                            o.kind == "dirty" for o in fn.outputs)):
        find(graphs(favour_dynamo=True), lambda spec, u=untraceable: any(u(fn) for fn in spec.functions),
             settings=search)
    find(graphs(favour_dynamo=True), lambda spec: spec.forward_code == "loop", settings=search)
    find(graphs(favour_dynamo=True), lambda spec: spec.forward_ad, settings=search)
    # the other axes within traceable graphs: mark_dirty, many inputs, several outputs
    find(graphs(favour_dynamo=True), lambda spec: all(map(_traceable, spec.functions)) and any(
        o.kind == "dirty" for fn in spec.functions for o in fn.outputs), settings=search)
    find(graphs(favour_dynamo=True), lambda spec: all(map(_traceable, spec.functions)) and any(
        23 <= len(fn.tensor_slots) <= 26 for fn in spec.functions), settings=search)


def test_a_campaign_favours_dynamo_when_a_compiling_path_is_selected() -> None:
    assert favours_dynamo(paths.parse("eager,dynamo"))
    assert favours_dynamo(paths.parse("dynamo:inductor"))
    assert favours_dynamo(paths.parse("func.grad+dynamo"))
    assert not favours_dynamo(paths.parse("eager,owned,compiled,func.grad"))
    assert drawing(paths.parse("eager,func.grad+dynamo")) == {"favour_torch_func": True, "favour_dynamo": True}


def test_the_fuzz_loop_draws_traceable_graphs_in_a_dynamo_campaign() -> None:
    """The real fuzz loop over the dynamo path (a few examples, each really checked and traced)."""
    drawn: list[GraphSpec] = []
    traces: list[str] = []

    def on_record(record: dict) -> None:
        if record["kind"] == "example" and "trace" in record["outcomes"]["dynamo"]:
            traces.append(record["outcomes"]["dynamo"]["trace"])

    fuzz(paths.parse("dynamo"), until=time.perf_counter() + 300, device="cpu", database=InMemoryExampleDatabase(),
         lifetimes=False, on_record=on_record, known=set(), max_examples=24, on_example=drawn.append)
    assert len(drawn) >= 24
    assert sum(all(map(_traceable, spec.functions)) for spec in drawn) >= len(drawn) // 3, drawn
    assert traces.count("traced") + traces.count("partly traced") >= 3, traces
