"""AWS CDK app for the S3 -> SNS -> SQS -> EMR Serverless streaming wiring, and its local stand-in on moto.

Kept free of aws_cdk imports so that scripts can read STACK_NAME without starting jsii.
"""

STACK_NAME = "S3SqsStreaming"
