"""Mutation testing of the modules whose bugs matter most (``make mutants``, not in ``make test``).

``python -m mutation`` runs cosmic-ray over each target in a copy of the working tree (never
the tree itself: a run that is interrupted leaves a mutant behind in the file it changed),
with the tests that cover that target, and reports the kill rate per target.
"""
