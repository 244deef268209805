"""The job EMR Serverless runs: `spark-submit app/job.py --queue-url ... --format ... --schema ...`.
Its flags and what it does are in s3sqs/job/ (main.py, flags.py); `job.py --help` lists them."""
import os
import sys

# Run from a checkout without installing: app/ holds the s3sqs package.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from s3sqs.job.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
