"""Campaigns that run torch.func paths draw most Functions in setup_context style.

torch.func refuses a graph with any old-style Function (harness/paths/func.py, OLD_STYLE);
with half of the Functions old-style, most graphs never reach the func paths. A campaign
selecting such a path draws from graphs(favour_setup_context=True); every other campaign
draws as before, and old style stays reachable in both.
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis.database import InMemoryExampleDatabase

from harness import paths
from harness.campaign import favours_setup_context, fuzz
from harness.spec import GraphSpec
from strategies import graphs

SAMPLE = settings(max_examples=300, database=None, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))


def _styles(**kwargs) -> tuple[float, float]:
    """(share of Functions in setup_context style, share of graphs with no old-style Function)."""
    functions: list[str] = []
    whole: list[bool] = []

    @SAMPLE
    @given(graphs(**kwargs))
    def draw(spec: GraphSpec) -> None:
        functions.extend(fn.style for fn in spec.functions)
        whole.append(all(fn.style == "setup_context" for fn in spec.functions))

    draw()
    return functions.count("setup_context") / len(functions), sum(whole) / len(whole)


def test_favouring_setup_context_draws_it_for_most_functions_and_graphs() -> None:
    default_functions, default_graphs = _styles()
    favoured_functions, favoured_graphs = _styles(favour_setup_context=True)
    # by default as before: Hypothesis draws "old", the first choice, for about 2 in 3 Functions
    assert default_functions < 0.5, default_functions
    assert favoured_functions >= 0.8, favoured_functions
    assert favoured_graphs >= 0.6 and favoured_graphs >= 3 * default_graphs, (default_graphs, favoured_graphs)


def test_old_style_stays_reachable_when_favouring_setup_context() -> None:
    find(graphs(favour_setup_context=True), lambda spec: any(fn.style == "old" for fn in spec.functions),
         settings=settings(max_examples=500, database=None, phases=[Phase.generate],
                           suppress_health_check=list(HealthCheck)))


def test_a_campaign_favours_setup_context_when_a_func_path_is_selected() -> None:
    assert favours_setup_context(paths.parse("eager,func.grad"))
    assert favours_setup_context(paths.parse("func+dynamo"))
    assert not favours_setup_context(paths.parse("eager,compiled,dynamo"))


def test_the_fuzz_loop_draws_setup_context_for_a_func_campaign() -> None:
    """The real fuzz loop over a func path (a few examples, each really checked)."""
    drawn: list[str] = []
    fuzz(paths.parse("func.grad"), until=time.perf_counter() + 120, device="cpu", database=InMemoryExampleDatabase(),
         lifetimes=False, on_record=lambda record: None, known=set(), max_examples=12,
         on_example=lambda spec: drawn.extend(fn.style for fn in spec.functions))
    assert len(drawn) >= 12
    assert drawn.count("setup_context") / len(drawn) >= 0.7, drawn


def test_func_family_names_select_every_transform() -> None:
    plain = [p.name for p in paths.parse("func")]
    compiled = [p.name for p in paths.parse("func+dynamo")]
    assert plain and all(n.startswith("func.") and not n.endswith("+dynamo") for n in plain)
    assert compiled == [f"{n}+dynamo" for n in plain]
    assert [p.name for p in paths.parse("eager, func.vmap")] == ["eager", "func.vmap"]
