"""What every process of the connector shares: the file record, the vocabulary, units, the endpoint, errors.

Pure and light: nothing here talks to AWS or starts Spark at import, so the executors' Python workers
(s3sqs.reading) may use it as freely as the driver does.
"""
