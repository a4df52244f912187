"""What talks to AWS services other than EC2's instance lookups: the Auto Scaling
lifecycle actions (lifecycle), EventBridge Scheduler wake-ups (scheduler), SNS
notifications (notify), the Powertools idempotency ledger on DynamoDB (idempotency) and
SQS visibility changes for early redelivery (redelivery).

May import boto3/botocore (clients are passed in), lifeboat's top-level data modules
(report, wakeup, events) and nothing of kube/ or karpenter/. Imported by the wiring
(service, handler, pipeline), never by decide/ or karpenter/.
"""
