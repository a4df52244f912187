"""The Kubernetes API and its objects.

I/O: the client (client: KubeApi, made of transport: the requests, their retries and
pages, errors: what a failed one raises, and the verbs by API area: core_api, karpenter_api,
bookkeeping_api), its REST transport (rest), EKS authentication (eks_auth: STS-presigned
tokens) and the per-NodePool Lease (pool_lock). Pure views of objects as read (their shape,
Obj, is model/objects): selectors, labels, nodes (taints, ownership, readiness and the
well-known names Kubernetes and Karpenter use).
Lifeboat's own marks and patches are in marks/; Karpenter's disruption rules in karpenter/.

May import model/ and errors: decide/, marks/ and karpenter/ use the pure modules. Only
the client's modules, rest, eks_auth and pool_lock may import kubernetes, urllib3 or boto3
(tests/unit/project/test_layer_rooms.py).
"""
