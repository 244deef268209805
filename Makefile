# Two entry points: `make demo` and `make test`. Each builds what it needs on a fresh machine. An operator who
# only deploys and runs the job needs `make tools`; `make local-spark` adds what `local-stack run-job` runs on.
PY ?= python3.11
VENV := .venv
VENV40 := .venv-spark40
STAMP := $(VENV)/.installed
STAMP40 := $(VENV40)/.installed
JARS_STAMP := $(VENV40)/.jars-installed
NODE_STAMP := node_modules/.installed
TOOLS_STAMP := $(VENV)/.tools-installed
SPARK40_STAMP := $(VENV40)/.spark-installed
S3A_STAMP := $(VENV40)/.s3a-jars-installed

export CDK_DISABLE_VERSION_CHECK := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export PYTHONDONTWRITEBYTECODE := 1

# Make `VENV/bin/spark-submit` work without activating the venv: give find-spark-home a
# SPARK_HOME to find, and default the driver and workers to the venv's Python.
define spark_submit_ready
	ln -sfn ../lib/python3.11/site-packages/pyspark $(1)/bin/spark-distribution
	mkdir -p $(1)/lib/python3.11/site-packages/pyspark/conf
	echo 'export PYSPARK_PYTHON="$${PYSPARK_PYTHON:-$(abspath $(1))/bin/python}"' > $(1)/lib/python3.11/site-packages/pyspark/conf/spark-env.sh
endef

# The local stack: a moto server with the stack's wiring and its cdk-outputs.json (docs/operations.md);
# CDK_JSON=FILE builds it from another cdk.json than the checkout's.
PORT ?= 5000
LOCAL_STACK_DIR ?= .local-stack
OUTPUTS_FILE ?= cdk-outputs.json

.PHONY: demo test test-serial test-spark40 setup tools local-spark clean local-stack local-stack-stop s3a-jars

# Bytecode for the pyspark.zip Spark puts first on the path of every Python process it starts: a .pth
# file in each venv (app/s3sqs/core/zipped_pyspark.py; seconds off each query's start).
ZIPPED := lib/python3.11/site-packages/s3sqs-zipped-pyspark.pth
PTHS := $(VENV)/$(ZIPPED) $(VENV40)/$(ZIPPED)

setup: $(STAMP) $(STAMP40) $(PTHS) $(JARS_STAMP) $(NODE_STAMP)

# pip prints each package it collects and installs: on a fresh machine these steps take minutes, and a
# banner per step says which one is running and roughly how long it takes.
PIP_INSTALL = --progress-bar off --no-input --disable-pip-version-check

# Main environment: PySpark 4.3 (newest) plus everything the tests and the CDK app need.
$(STAMP): pyproject.toml
	@echo "==> setup 1/4: $(VENV), PySpark 4.3 with the CDK and test tools (the longest step: several minutes on a fresh machine)"
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_INSTALL) --quiet --upgrade pip
	$(VENV)/bin/pip install $(PIP_INSTALL) -e '.[spark,dev]'
	$(call spark_submit_ready,$(VENV))
	touch $(TOOLS_STAMP) $@
	@echo "==> setup 1/4 done: $(VENV)"

# Second environment: PySpark 4.0.2, the version EMR's emr-spark-8.0.0 runs.
$(STAMP40): pyproject.toml
	@echo "==> setup 2/4: $(VENV40), PySpark 4.0.2 (EMR's version) for make test (a few minutes on a fresh machine)"
	$(PY) -m venv $(VENV40)
	$(VENV40)/bin/pip install $(PIP_INSTALL) --quiet --upgrade pip
	$(VENV40)/bin/pip install $(PIP_INSTALL) -e '.[dev]' pyspark==4.0.2
	$(call spark_submit_ready,$(VENV40))
	touch $(SPARK40_STAMP) $@
	@echo "==> setup 2/4 done: $(VENV40)"

# One rule for both venvs: the stem is the venv.
%/$(ZIPPED): app/s3sqs/core/zipped_pyspark.py %/.installed
	$*/bin/python -c 'import sysconfig, s3sqs.core.zipped_pyspark as z; print("wrote", z.write_pth(sysconfig.get_paths()["purelib"]))'

# Spark's own Delta 4.0.0 and Iceberg 1.10.1 writers for $(VENV40) (Spark 4.0 / Scala 2.13 builds, the
# versions emr-spark-8.0.0 bundles), from Maven Central into ~/.cache/s3sqs/jars, each checked against the
# SHA-1 pinned in devtools/jars.py; tests then start Spark with --jars and resolve nothing at run time.
$(JARS_STAMP): devtools/jars.py $(STAMP40)
	@echo "==> setup 3/4: Spark's Delta and Iceberg jars for $(VENV40) (55 MB from Maven Central, seconds)"
	$(VENV40)/bin/python -m devtools.jars fetch tables
	touch $@
	@echo "==> setup 3/4 done: jars in ~/.cache/s3sqs/jars"

# Hadoop's S3A filesystem (hadoop-aws 3.4.1, PySpark 4.0.2's Hadoop, and the 558 MB AWS SDK bundle it
# needs): for local-stack run-job (make local-spark), its tests, and the benchmarks' --s3 runs.
s3a-jars: $(S3A_STAMP)

# The operator's tools alone: .venv with the connector, the tools and the CDK app's libraries (no Spark, no
# test tools), and the pinned CDK CLI. Everything `cdk deploy`, package-job, submit-job and the other tools
# need, and the local stack.
tools: $(TOOLS_STAMP) $(NODE_STAMP)

$(TOOLS_STAMP): pyproject.toml
	@echo "==> tools: $(VENV), the operator tools and the CDK app's libraries, without Spark (a minute or two on a fresh machine)"
	$(PY) -m venv $(VENV)
	$(VENV)/bin/pip install $(PIP_INSTALL) --quiet --upgrade pip
	$(VENV)/bin/pip install $(PIP_INSTALL) -e '.[tools]'
	touch $@
	@echo "==> tools done: $(VENV)/bin"

# What `local-stack run-job` runs the packaged job on: EMR's Spark (PySpark 4.0.2, alone in $(VENV40)) and
# Hadoop's S3A filesystem for its s3:// checkpoint and output (hadoop-aws and the AWS SDK bundle, 560 MB).
local-spark: $(SPARK40_STAMP) $(S3A_STAMP)

$(SPARK40_STAMP):
	@echo "==> local-spark 1/2: $(VENV40), EMR's Spark 4.0.2 (PySpark alone, about 320 MB)"
	$(PY) -m venv $(VENV40)
	$(VENV40)/bin/pip install $(PIP_INSTALL) --quiet --upgrade pip
	$(VENV40)/bin/pip install $(PIP_INSTALL) pyspark==4.0.2
	$(call spark_submit_ready,$(VENV40))
	touch $@

$(S3A_STAMP): devtools/jars.py $(TOOLS_STAMP)
	@echo "==> local-spark 2/2: Hadoop's S3A jars into ~/.cache/s3sqs/jars (560 MB from Maven Central)"
	$(VENV)/bin/python -m devtools.jars fetch s3a
	mkdir -p $(VENV40) && touch $@

# The CDK CLI, pinned exactly in package.json.
$(NODE_STAMP): package.json package-lock.json
	@echo "==> setup 4/4: node_modules, the CDK CLI pinned in package.json (npm ci, under a minute)"
	npm ci --no-audit --no-fund --loglevel=error
	touch $@
	@echo "==> setup 4/4 done: node_modules"

demo: $(STAMP) $(VENV)/$(ZIPPED) $(NODE_STAMP)
	$(VENV)/bin/python scripts/demo.py

# The whole suite on Spark 4.3 and, beside it, the Spark-driving tests again on Spark 4.0.2 (three lanes at
# once: devtools/test_lanes.py; `make test-serial` runs them one after the other).
test: $(STAMP) $(STAMP40) $(PTHS) $(JARS_STAMP) $(S3A_STAMP) $(NODE_STAMP)
	$(VENV)/bin/python devtools/test_lanes.py

test-serial: $(STAMP) $(STAMP40) $(PTHS) $(JARS_STAMP) $(S3A_STAMP) $(NODE_STAMP)
	$(VENV)/bin/python devtools/test_lanes.py --serial

test-spark40: $(STAMP40) $(VENV40)/$(ZIPPED) $(JARS_STAMP)
	$(VENV40)/bin/python -m pytest -q -m "spark or chaos or cluster"

local-stack: $(TOOLS_STAMP)
	$(VENV)/bin/local-stack start --port $(PORT) --state-dir $(LOCAL_STACK_DIR) --outputs-file $(OUTPUTS_FILE)$(if $(CDK_JSON), --cdk-json $(CDK_JSON))

local-stack-stop: $(TOOLS_STAMP)
	$(VENV)/bin/local-stack stop --state-dir $(LOCAL_STACK_DIR)

clean:
	rm -rf $(VENV) $(VENV40) node_modules dist .pytest_cache .pytest-tmp
