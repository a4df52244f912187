"""The rules Lifeboat reproduces from Karpenter (kubernetes-sigs/karpenter): NodePool
disruption budgets (budgets, budget_spec, budget_windows, cron, godurations), how
Karpenter counts a pool's nodes (counting), and the NodeClaim it would build for a
replacement (replacement, requirements, nodepool_hash, quantities).

Pure: no I/O. May import the pure modules of kube/ (objects, nodes, ...), lifeboat.model.target,
lifeboat.model.instants and lifeboat.errors; never boto3, kubernetes, urllib, sockets,
lifeboat.aws or kube's client (tests/unit/test_layer_rooms.py enforces it).
"""
