"""Planned rotation of nodes (issue: migrate a node group to Karpenter, roll an AMI).

An operator's request (an EventBridge event, ``request``) names nodes by label or AMI; the
rotation then cordons, drains (or replaces) and checks them node by node through the same
pipeline as AWS's warnings: each node becomes a notice of kind ``rotation``, weighed against
NodePool budgets, windows, do-not-disrupt and PodDisruptionBudgets like a scheduled change.
What is the rotation's own: which node goes next and how many at once, the health gate
(the evicted pods' workloads Ready elsewhere before the next node), pause, resume and
cancel. ``plan`` decides (pure), ``observe`` reads the cluster, ``store`` keeps the state in
a ConfigMap, ``look``, ``commands`` and ``runner`` carry it out. ``messages`` names the
rotation's messages (``lifeboat.flow.classify`` tells them apart) without loading the rest:
the pipeline imports the rest only for those.

May import everything below flow/ (model, events, kube, marks, karpenter, wakeup, decide,
telemetry, aws); the flow passes in what it needs of it.
"""
