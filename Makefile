# spark-kinesis: every target sets up what it needs (venv, sbt, emulator, jar) on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SBT := build/sbt
# Local Maven repository the build publishes the thin jar to (spark-submit --packages reads it).
M2_REPO := $(CURDIR)/.cache/m2repo
export SBT_OPTS += -Dmaven.repo.local=$(M2_REPO)
export KINESIS_MOCK_MAIN := $(CURDIR)/tools/emulator/node_modules/kinesis-local/main.js
export SPARK_KINESIS_M2_REPO := $(M2_REPO)
# The KPL daemon's C++ SDK probes EC2 instance metadata (169.254.169.254) for a default region at
# start unless told not to; tests, demo and benchmarks talk to loopback only.
export AWS_EC2_METADATA_DISABLED := true

JVM_SOURCES := $(shell find jvm/src/main -type f 2>/dev/null) build.sbt project/plugins.sbt project/build.properties python/spark_kinesis/_version.py
JAR_STAMP := .cache/jar.stamp

.PHONY: test unit pytest demo soak jar venv emulator lint fmt bench clean help

help:
	@echo "make test   - Scala unit tests + pytest e2e (real Spark, real KPL, embedded Kinesis)"
	@echo "make demo   - a streaming query into the embedded Kinesis, read back and checked"
	@echo "make soak   - 10 minutes at the queue limit behind shard limits: heap and KPL RSS must stay flat"
	@echo "make jar    - assembly jar (bundled into python/) + thin jar published to $(M2_REPO)"
	@echo "make bench  - benchmarks (~40 min): vs boto3, vs a bare KPL loop, backpressure runs, JMH -> docs/benchmarks.md"
	@echo "make lint   - scalafmt check, ruff, mypy"

venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements-dev.txt python/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements-dev.txt
	$(PY) -m pip install -q --no-deps -e python
	touch $@

emulator: $(KINESIS_MOCK_MAIN)
$(KINESIS_MOCK_MAIN): tools/emulator/package.json tools/emulator/package-lock.json
	cd tools/emulator && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The assembly goes into the Python package (the wheel carries it); the thin jar + POM into M2_REPO.
define bundle_jar
	mkdir -p python/spark_kinesis/jars && rm -f python/spark_kinesis/jars/*.jar
	cp jvm/target/scala-2.13/spark-kinesis-assembly_*.jar python/spark_kinesis/jars/
	touch $(JAR_STAMP)
endef

jar: $(JAR_STAMP)
$(JAR_STAMP): $(JVM_SOURCES)
	mkdir -p .cache
	$(SBT) sparkKinesis/assembly sparkKinesis/publishM2 </dev/null
	$(bundle_jar)

unit:
	$(SBT) sparkKinesis/test </dev/null

# One sbt launch for unit tests and both jars, then the e2e suite against them.
test: venv emulator
	mkdir -p .cache
	$(SBT) sparkKinesis/test sparkKinesis/assembly sparkKinesis/publishM2 </dev/null
	$(bundle_jar)
	$(PY) -m pytest tests $(PYTEST_ARGS)

pytest: venv emulator jar
	$(PY) -m pytest tests $(PYTEST_ARGS)

demo: venv emulator jar
	$(PY) tools/demo.py

# Not part of `make test`: SOAK_MINUTES (default 10) at the queue limit behind enforced shard limits.
soak: venv emulator jar
	$(PY) tools/soak.py

# Not part of `make test`: bench/run.py (knobs in its docstring); results in bench/results/, plots in docs/img/.
KINESALITE := bench/backend/node_modules/kinesalite/package.json
$(KINESALITE): bench/backend/package.json bench/backend/package-lock.json
	cd bench/backend && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(VENV)/.bench-stamp: bench/requirements.txt $(VENV)/.stamp
	$(PY) -m pip install -q -r bench/requirements.txt
	touch $@

bench: venv jar $(VENV)/.bench-stamp $(KINESALITE)
	$(PY) bench/run.py

lint: venv
	$(SBT) scalafmtCheckAll bench/scalafmtCheckAll scalafmtSbtCheck </dev/null
	$(VENV)/bin/ruff check python tests tools bench
	$(VENV)/bin/ruff format --check python tests tools bench
	$(VENV)/bin/mypy --config-file python/pyproject.toml python/spark_kinesis

fmt: venv
	$(SBT) scalafmtAll scalafmtSbt </dev/null
	$(VENV)/bin/ruff format python tests tools

clean:
	rm -rf jvm/target target project/target python/spark_kinesis/jars/*.jar python/build python/dist $(JAR_STAMP)
