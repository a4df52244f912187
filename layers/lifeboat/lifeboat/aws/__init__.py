"""What talks to AWS services other than EC2's instance lookups: the Auto Scaling
lifecycle actions (lifecycle), EventBridge Scheduler wake-ups (scheduler), SNS
notifications (notify), the Powertools idempotency ledger on DynamoDB (idempotency) and
SQS visibility changes for early redelivery (redelivery).

May import boto3/botocore (clients are passed in), model/, events/, wakeup/, kube/ and
marks/ (the sweep lists nodes by Lifeboat's labels; discovery reads EKS's CA as kube's
client wants it); never decide/, flow/, rotation/ or runtime/. Imported by the wiring
(flow, runtime), never by decide/ or karpenter/.
"""
