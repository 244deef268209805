"""The job's own process (spark-submit's driver program; app/job.py is its entry point): its flags
(`flags`, shared with submit-job), the checks before Spark starts (`preflight`), the run (`main`), the
executors' warm-up (`warmup`), the live executor cores the source sizes each batch by (`executors`),
when a run is done (`completion`), and what it reports per batch (`monitor` prints `batch_line` for
people and `metrics`' EMF documents for CloudWatch).
"""
