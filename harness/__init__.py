"""Property-based differential testing of torch.autograd.Function across execution paths.

Data flows one way: strategy -> spec (harness.spec) -> built graph (harness.build) ->
each path (harness.paths) -> results (harness.run) -> oracles (harness.oracles) ->
verdict (harness.check) -> report / reproducer (harness.campaign, harness.repro).
"""

from typing import Any


def __getattr__(name: str) -> Any:
    # `harness.check_function(MyFunction, samples)`, imported on first use so `import harness`
    # stays light (the module is harness.function_check: a submodule named check_function would
    # replace this attribute once imported)
    if name == "check_function":
        from harness.function_check import check_function

        return check_function
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
