"""Property-based differential testing of torch.autograd.Function across execution paths.

Data flows one way: strategy -> spec (harness.spec) -> built graph (harness.build) ->
each path (harness.paths) -> results (harness.run) -> oracles (harness.oracles) ->
verdict (harness.check) -> report / reproducer (harness.campaign, harness.repro).
"""
