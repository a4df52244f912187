"""The rules Lifeboat reproduces from Karpenter (kubernetes-sigs/karpenter): NodePool
disruption budgets (budgets, budget_spec, budget_windows, cron, godurations), how
Karpenter counts a pool's nodes (counting), and the NodeClaim it would build for a
replacement (replacement, requirements, nodepool_hash, quantities).

Karpenter's disruption rules over nodes and pods (disruption_rules: do-not-disrupt, what
the drain evicts, stuck terminating pods) and forceful termination (forceful) live here too.

Pure: no I/O. May import model/, events/, the pure modules of kube/ (objects, nodes, ...)
and marks/ (Lifeboat's taints count as disrupting); never boto3, kubernetes, urllib, sockets,
lifeboat.aws or kube's client (tests/unit/project/test_layer_rooms.py enforces it).
"""
