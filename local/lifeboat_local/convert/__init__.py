"""``lifeboat convert``: node groups (EKS managed, Auto Scaling groups, settings ConfigMaps,
a cluster file's nodes) to Karpenter NodePools and EC2NodeClasses."""
