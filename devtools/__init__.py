"""Development tooling, for the tests, the demo, the benchmarks and the chaos runs; never shipped to EMR
and never used by the operator tools' AWS paths.

- `local_aws`: the local AWS stand-in, a moto server on 127.0.0.1 run as a child process;
- `local_spark`: app/job.py with this environment's own spark-submit;
- `fault_proxy`: an HTTP proxy in front of the stand-in that delays, fails or freezes chosen calls;
- `committed`: what a Spark file sink really committed, read as Spark reads it.
"""
