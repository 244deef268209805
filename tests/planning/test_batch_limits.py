

def test_spark_4_0_plans_from_the_last_durable_plan_but_acknowledges_only_what_spark_said():
    from s3sqs.planning.batch_limits import plan_start

    assert plan_start(7, 2, 0, 9) == (7, 7)          # Spark 4.1+: its start is both
    assert plan_start(None, 0, 0, 2) == (0, 2)       # 4.0, just restarted: plan past the last plan, acknowledge 0
    assert plan_start(None, 0, 4, 2) == (4, 4)       # 4.0, in a run: the batch Spark read is committed
    assert plan_start(None, 5, 0, 2) == (5, 5)       # never below what the source acknowledged
