"""What the tests share: paths, builders and test doubles.

- ``paths``: where the repository's samples and files are.
- ``kube``: NodePools, NodeClaims, Nodes, Pods and PodDisruptionBudgets shaped like the
  objects of a live Karpenter v1 cluster on EKS, in the manner of Karpenter's own
  ``pkg/test`` builders (an options value with complete defaults, changed by keyword).
- ``events``: AWS events from the samples in ``events/``, SQS records and batches around
  them, and ``Notice`` values for the pure policy.
- ``fakes``: a Lambda context, a metric sink, a settable clock and a lifecycle recorder.

Fixtures built on these live in ``tests/conftest.py``. Nothing here imports ``bench``'s
soak or anything under ``tests/unit`` or ``tests/integration``: those import this.
"""
