"""What Lifeboat writes on nodes and NodeClaims: its labels, annotations and taints
(node_marks), the RFC 6902 patches that put them on and take them off (node_patches), and the
hand-over's protection of a replacement and its old node (handover), and which
maintenances hold a node (maintenance_holds).

Pure. May import kube's pure views (nodes, selectors) and model/ (the Notice, Obj); imported by
karpenter/, decide/, flow/ and the rotation, never the other way round.
"""
