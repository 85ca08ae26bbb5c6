"""Public Hypothesis strategies over custom-Function graph specs.

    from strategies import graphs
    @given(graphs(max_functions=3))
    def test_something(spec): ...

Specs are plain data (`harness.spec`); `harness.build.build(spec)` makes the torch objects.
"""

from strategies._graphs import (
    INLINE_CAPACITY, function_specs, graphs, leaf_specs, tensor_input_counts,
)

__all__ = ["INLINE_CAPACITY", "function_specs", "graphs", "leaf_specs", "tensor_input_counts"]
