"""Oracles: the comparator with its tolerances, the math oracle and gradcheck."""
