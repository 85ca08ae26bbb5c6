"""Case specs, scenarios, the registry and option parsing (no valgrind, no torch)."""

from __future__ import annotations

import json

import pytest

from harness.counting import cases
from harness.counting.cases import CaseError, CaseSpec


def test_case_spec_is_plain_hashable_data_with_a_json_round_trip() -> None:
    case = CaseSpec.make("graph", "g", "harness.counting.workloads:returning_inputs",
                         {"outputs": 1, "inputs": 3})
    assert hash(case) == hash(CaseSpec.make("graph", "g", "harness.counting.workloads:returning_inputs",
                                            {"inputs": 3, "outputs": 1}))
    plain = json.loads(json.dumps(case.to_plain()))
    assert CaseSpec.from_plain(plain) == case
    assert case.params == {"inputs": 3, "outputs": 1}


def test_params_must_be_json() -> None:
    with pytest.raises(CaseError, match="not JSON values"):
        CaseSpec.make("graph", "g", "m:f", {"x": object()})


@pytest.mark.parametrize("name", ["nocolon", ":f", "m:"])
def test_factory_names_need_module_and_function(name: str) -> None:
    with pytest.raises(CaseError, match="module:function"):
        CaseSpec.make("graph", "g", name)


def test_resolve_factory_names_the_missing_attribute() -> None:
    from harness.counting.workloads import diamond_graph

    assert cases.resolve_factory("harness.counting.workloads:diamond_graph") is diamond_graph
    with pytest.raises(CaseError, match="has no attribute 'nope'"):
        cases.resolve_factory("harness.counting.workloads:nope")


def test_builtin_scenarios() -> None:
    (seed,) = cases.cases_for(["seed"])
    assert seed.params == {"inputs": 13, "outputs": 2} and seed.inputs == 13
    sweep = cases.cases_for(["sweep"])
    assert [c.inputs for c in sweep] == list(range(41))
    assert [c.inputs for c in cases.cases_for(["sweep"], [0, 24, 25])] == [0, 24, 25]
    assert [c.name for c in cases.cases_for(["graph"])] == ["diamond"]
    chain = cases.cases_for(["chain"])
    assert [(c.name, c.params) for c in chain] == [(f"chain-{n}", {"nodes": n}) for n in (1, 2, 4, 8)]
    with pytest.raises(cases.CaseError, match="use at least 1"):
        cases.chain_cases([0])


def test_the_compiled_path_has_no_forward_of_its_own() -> None:
    assert cases.region_phases("compiled", cases.PHASES) == ["backward"]
    assert cases.region_phases("eager", cases.PHASES) == ["forward", "backward"]
    assert "compiled" in cases.PATHS and "compiled" not in cases.DEFAULT_PATHS


def test_registered_cases_join_their_scenario_and_new_scenarios_become_valid() -> None:
    graph = cases.register_case("graph", "three", "harness.counting.workloads:returning_inputs",
                                {"inputs": 3})
    own = cases.register_case("mine", "one", "harness.counting.workloads:returning_inputs",
                              {"inputs": 1})
    try:
        assert graph in cases.cases_for(["graph"])
        assert cases.cases_for(["mine"]) == [own]
        assert "mine" in cases.scenario_names()
    finally:
        cases.unregister_case("graph", "three")
        cases.unregister_case("mine", "one")
    assert graph not in cases.cases_for(["graph"])


def test_unknown_scenario_lists_the_valid_ones() -> None:
    with pytest.raises(CaseError, match="unknown scenario 'sweeep'; valid scenarios: seed, sweep, graph"):
        cases.cases_for(["sweeep"])


def test_parse_names_and_inputs() -> None:
    assert cases.parse_names("eager, borrowed", cases.PATHS, "path") == ["eager", "borrowed"]
    with pytest.raises(CaseError, match="unknown path 'owend'; valid paths: eager, owned, borrowed"):
        cases.parse_names("owend", cases.PATHS, "path")
    assert cases.parse_inputs("0,8,24-26") == [0, 8, 24, 25, 26]
    assert cases.parse_inputs("23..25") == [23, 24, 25]
    with pytest.raises(CaseError, match="'x' is not a number"):
        cases.parse_inputs("1,x")
    with pytest.raises(CaseError, match="negative"):
        cases.sweep_cases([-1])
