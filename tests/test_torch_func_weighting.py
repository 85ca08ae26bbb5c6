"""Campaigns that run torch.func paths draw most Functions in setup_context style, with vmap rules.

torch.func refuses a graph with any old-style Function (harness/paths/func.py, OLD_STYLE), and
vmap one with a Function without a vmap rule (NO_VMAP_RULE); by default most graphs have one.
A campaign selecting such a path draws from graphs(favour_torch_func=True); every other
campaign draws as before, and old style stays reachable in both.
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.campaign import fuzz
from harness.engine import favours_torch_func
from harness.spec import GraphSpec
from strategies import graphs

SAMPLE = settings(max_examples=300, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def _styles(**kwargs) -> tuple[float, float, float]:
    """(share of Functions in setup_context style, share of graphs with no old-style Function,
    share of graphs whose every Function has generate_vmap_rule)."""
    functions: list[str] = []
    whole: list[bool] = []
    vmapped: list[bool] = []

    @SAMPLE
    @given(graphs(**kwargs))
    def draw(spec: GraphSpec) -> None:
        functions.extend(fn.style for fn in spec.functions)
        whole.append(all(fn.style == "setup_context" for fn in spec.functions))
        vmapped.append(all(fn.vmap for fn in spec.functions))

    draw()
    return functions.count("setup_context") / len(functions), sum(whole) / len(whole), sum(vmapped) / len(vmapped)


def test_favouring_torch_func_draws_setup_context_and_vmap_rules_for_most_graphs() -> None:
    default_functions, default_graphs, default_vmapped = _styles()
    favoured_functions, favoured_graphs, favoured_vmapped = _styles(favour_torch_func=True)
    # by default as before: Hypothesis draws "old", the first choice, for about 2 in 3 Functions
    assert default_functions < 0.5, default_functions
    assert favoured_functions >= 0.8, favoured_functions
    assert favoured_graphs >= 0.6 and favoured_graphs >= 3 * default_graphs, (default_graphs, favoured_graphs)
    assert favoured_vmapped >= 0.4 and favoured_vmapped >= 3 * default_vmapped, (default_vmapped, favoured_vmapped)


def test_old_style_and_no_vmap_rule_stay_reachable_when_favouring_torch_func() -> None:
    search = settings(max_examples=500, database=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    find(graphs(favour_torch_func=True), lambda spec: any(fn.style == "old" for fn in spec.functions), settings=search)
    find(graphs(favour_torch_func=True), lambda spec: any(fn.style == "setup_context" and not fn.vmap
                                                          for fn in spec.functions), settings=search)


def test_a_campaign_favours_torch_func_when_a_func_path_is_selected() -> None:
    assert favours_torch_func(paths.parse("eager,func.grad"))
    assert favours_torch_func(paths.parse("func+dynamo"))
    assert not favours_torch_func(paths.parse("eager,compiled,dynamo"))


def test_the_fuzz_loop_draws_for_torch_func_in_a_func_campaign() -> None:
    """The real fuzz loop over a func path (a few examples, each really checked)."""
    drawn: list[str] = []
    fuzz(paths.parse("func.grad"), until=time.perf_counter() + 120, device="cpu", database=InMemoryExampleDatabase(),
         lifetimes=False, on_record=lambda record: None, known=set(), max_examples=30,
         on_example=lambda spec: drawn.extend(fn.style for fn in spec.functions))
    # (30 examples: the loop draws at random, 7 in 8 setup_context; over 12, 13 of 19 was seen)
    assert len(drawn) >= 30
    assert drawn.count("setup_context") / len(drawn) >= 0.7, drawn


def test_func_family_names_select_every_transform() -> None:
    plain = [p.name for p in paths.parse("func")]
    compiled = [p.name for p in paths.parse("func+dynamo")]
    assert plain and all(n.startswith("func.") and not n.endswith("+dynamo") for n in plain)
    assert compiled == [f"{n}+dynamo" for n in plain]
    assert [p.name for p in paths.parse("eager, func.vmap")] == ["eager", "func.vmap"]


def test_leaves_shared_by_the_batch_are_drawn_for_torch_func_campaigns_only() -> None:
    """GraphSpec.batch_shared (vmap's in_dims=None): drawn last, only where torch.func runs, and
    always with one leaf left batched (vmap needs one)."""
    shared: dict[bool, list[tuple[int, ...]]] = {False: [], True: []}
    leaves: list[int] = []

    for favoured in (False, True):
        @SAMPLE
        @given(graphs(favour_torch_func=favoured))
        def draw(spec: GraphSpec) -> None:
            shared[favoured].append(spec.batch_shared)
            if favoured and spec.batch_shared:
                leaves.append(len(spec.leaves) - len(spec.batch_shared))
        draw()
    assert not any(shared[False])
    assert 0.2 <= sum(map(bool, shared[True])) / len(shared[True]) <= 0.8, shared[True]
    assert min(leaves) >= 1
