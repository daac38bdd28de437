# spark-kinesis: each target sets up what it needs (venvs, sbt, the emulator, the jars) on a fresh machine.
# `make help` lists the targets; docs/development.md says what each runs and where things live.
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
PY := .venv/bin/python
PY35 := .venv-spark3.5/bin/python
SBT := build/sbt
# The local Maven repository the jars are published to (spark-submit --packages reads it).
M2_REPO := $(CURDIR)/.cache/m2repo
export SBT_OPTS += -Dmaven.repo.local=$(M2_REPO)
# The KPL daemon probes EC2 instance metadata for a region unless told not to; everything here talks to loopback.
export AWS_EC2_METADATA_DISABLED := true
# Each of the tests' ~100 Python processes imports pyspark, pandas or boto3: keep what Python compiles.
unexport PYTHONDONTWRITEBYTECODE
# Maven's short-lived JVMs exit before C2's work pays for itself.
MVN := MAVEN_OPTS="$$MAVEN_OPTS -XX:TieredStopAtLevel=1" mvn -B -q
# uv, not pip: the venvs are made beside the JVM build, and uv spends less of the two cores. UV_PIP installs into the
# venv of the target it runs for.
UV := uv==0.13.9
UV_PIP = $(@D)/bin/uv pip install -q --python $(@D)/bin/python

JVM_SOURCES := $(shell find jvm/src/main jvm/src/facts jvm/kpl/src -type f 2>/dev/null) build.sbt \
	$(wildcard project/*.sbt project/*.scala) project/build.properties python/spark_kinesis/_version.py LICENSE NOTICE
JAR_STAMP := .cache/jar.stamp
KAFKA_STAMP := .cache/kafka/.stamp
KCL_STAMP := .cache/kcl/.stamp
PLATFORM_JARS_STAMP := .cache/platform-jars/.stamp
KINESIS_MOCK := tools/emulator/node_modules/kinesis-local/main.js
KINESALITE := bench/backend/node_modules/kinesalite/package.json
ACTIONLINT := .cache/bin/actionlint

# The tests `make test` leaves to `make test-extended` (one marker expression: `make test` runs its complement, so each
# test runs in exactly one): fault scenarios, the class-path matrix (3 GB of platform jars), install paths, the
# local-cluster fleets, the jar of a line's later Scala, and the other variants of a scenario `make test` runs once.
EXTENDED := faults or platforms or install or fleet or later_scala or variant
# The README's first example runs on each of these pyspark releases (README's "Tested here" lists them): `make test`'s
# legs run it on theirs (the venvs' pins), `make test-lines` on the others, a venv each.
LINES_PYSPARK := 3.5.0 3.5.9 4.0.0 4.1.4 4.2.1 4.3.0
LEGS_PYSPARK := $(shell sed -n 's/^pyspark==//p' requirements-dev.txt requirements-spark3.5.txt)
LINES_KEEP ?= 1

.PHONY: help test test-extended test-lines test-localstack unit pytest setup demo soak chaos bench bench-scale \
	release-check lint fmt jar venv venv35 emulator kafka kcl platform-jars class-archives clean

help: ## this list
	@grep -hE '^[a-z0-9.-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([^:]+):.*## /  make \1\t/' | expand -t 24

# --- tests -------------------------------------------------------------------------------------------------------
# The set-up's parts side by side (the jars are its longest), then the two pytest legs with the Scala unit tests
# beside them (tools/legs.py).
test: ## Scala unit tests + e2e tests on Spark 4 and 3.5, but test-extended's (within 20 min cold)
	$(MAKE) -j4 --no-print-directory setup jar
	$(PY) tools/legs.py -m "not ($(EXTENDED))" --beside "$(SBT) unitTests" -- $(PYTEST_ARGS)

test-extended: ## what make test leaves out: faults, class-path matrix, install paths, fleets, later Scalas
	$(MAKE) -j4 --no-print-directory setup platform-jars jar
	$(PY) tools/legs.py -m "$(EXTENDED)" --suffix=-extended --beside "$(SBT) extendedTests" -- $(PYTEST_ARGS)

unit: ## the Scala unit tests of every line
	$(SBT) test </dev/null

pytest: setup platform-jars jar ## every e2e test on Spark 4 alone (PYTEST_ARGS="-k ..." to pick)
	$(PY) -m pytest tests -m "not lines" $(PYTEST_ARGS)

test-lines: emulator jar ## README's first example on the pyspark releases the legs do not run, a venv each
	@status=0; for v in $(filter-out $(LEGS_PYSPARK),$(LINES_PYSPARK)); do \
	  $(MAKE) --no-print-directory .cache/lines/pyspark-$$v/.stamp && \
	  JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1 .cache/lines/pyspark-$$v/bin/python -m pytest tests/test_readme.py -m lines \
	    --junitxml=.cache/reports/junit-lines-$$v.xml $(PYTEST_ARGS) || status=1; \
	  [ "$(LINES_KEEP)" = 1 ] || rm -rf .cache/lines/pyspark-$$v; \
	done; exit $$status

# As the legs' venvs are made (uv, pyspark's wheel stored), with the release the target names.
.cache/lines/pyspark-%/.stamp: requirements-test.txt python/pyproject.toml testkit/pyproject.toml
	rm -rf $(@D) && $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install -q $(UV)
	$(UV_PIP) --config-settings=--build-option=--compression=stored pyspark==$* -r requirements-test.txt
	$(UV_PIP) --no-deps -e python -e testkit
	touch $@

test-localstack: venv emulator kcl jar ## the tests marked localstack on LocalStack (a Docker engine, started if need be)
	PY=$(CURDIR)/$(PY) PYTEST_ARGS="$(PYTEST_ARGS)" bash tools/localstack-leg.sh

# --- runs that show a promise ------------------------------------------------------------------------------------
demo: venv emulator jar .venv/.demo-stamp ## a query without a bound and one with queue_limit behind shard quotas
	$(PY) tools/demo.py

soak: venv emulator jar ## SOAK_MINUTES (10) at the queue limit behind shard quotas: heap and RSS stay flat
	$(PY) tools/soak.py

chaos: venv emulator jar kcl platform-jars .venv/.demo-stamp ## every fault at once for CHAOS_MINUTES (20): every id read back
	$(PY) tools/chaos.py

bench: venv jar kafka kcl emulator .venv/.bench-stamp $(KINESALITE) ## the benchmarks (~80 min) -> docs/benchmarks.md
	$(PY) bench/run.py

bench-scale: venv jar kcl .venv/.bench-stamp $(KINESALITE) ## the scale part alone (~20 min)
	BENCH_PARTS=scale $(PY) bench/run.py

release-check: venv emulator jar ## what a tag publishes, with a throwaway key: checked, installed, run
	$(PY) tools/release_check.py

# --- code --------------------------------------------------------------------------------------------------------
lint: venv $(ACTIONLINT) ## scalafmt, ruff, mypy, actionlint
	$(SBT) scalafmtCheckAll bench/scalafmtCheckAll scalafmtSbtCheck </dev/null
	.venv/bin/ruff check python tests tools bench testkit
	.venv/bin/ruff format --check python tests tools bench testkit
	.venv/bin/mypy --config-file python/pyproject.toml python/spark_kinesis testkit/spark_kinesis_testkit
	.venv/bin/mypy --config-file python/pyproject.toml $(wildcard bench/*.py tools/*.py)
	$(ACTIONLINT) .github/workflows/*.yml

fmt: venv ## fix what lint checks (but types)
	$(SBT) scalafmtAll bench/scalafmtAll scalafmtSbt </dev/null
	.venv/bin/ruff check --fix python tests tools bench testkit
	.venv/bin/ruff format python tests tools bench testkit

clean: ## the build's outputs (not the venvs or .cache's downloads)
	rm -rf jvm/target jvm/kpl/target jvm/lines target project/target python/build python/dist $(JAR_STAMP) \
	  python/spark_kinesis/jars/*.jar python/spark_kinesis/jars/{NOTICE,BUNDLED.md,spark-kinesis.json}

# --- set-up ------------------------------------------------------------------------------------------------------
setup: venv venv35 emulator kafka kcl class-archives ## what the tests need but the jars

jar: $(JAR_STAMP) ## the KPL bundle and every line's jar, into python/ and the local Maven repository
$(JAR_STAMP): $(JVM_SOURCES)
	mkdir -p .cache
	$(SBT) jars </dev/null
	touch $@

venv: .venv/.stamp
.venv/.stamp: requirements-dev.txt requirements-test.txt python/pyproject.toml testkit/pyproject.toml
venv35: .venv-spark3.5/.stamp
.venv-spark3.5/.stamp: requirements-spark3.5.txt requirements-test.txt python/pyproject.toml testkit/pyproject.toml
# Each venv from its requirements file (the first prerequisite), with python/ and testkit/ editable. pyspark comes as
# source only: uv builds its wheel, which only this venv reads, so stored, not compressed.
.venv/.stamp .venv-spark3.5/.stamp:
	test -x $(@D)/bin/python || $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install -q $(UV)
	$(UV_PIP) --config-settings=--build-option=--compression=stored -r $<
	$(UV_PIP) --no-deps -e python -e testkit
	touch $@

# Each venv's class-data-sharing archive of what a Spark session loads at start (testkit's class_archive.py); a leg
# makes it if it is missing.
class-archives: venv venv35
	$(PY) -m spark_kinesis_testkit.class_archive $(CURDIR)
	$(PY35) -m spark_kinesis_testkit.class_archive $(CURDIR)

emulator: $(KINESIS_MOCK)
$(KINESIS_MOCK): tools/emulator/package.json tools/emulator/package-lock.json tools/emulator/patch.js
	cd tools/emulator && npm ci --no-audit --no-fund --loglevel=error && node patch.js
	touch $@

# A Kafka broker and Spark's Kafka connector (tools/kafka/), from Maven Central.
kafka: $(KAFKA_STAMP)
$(KAFKA_STAMP): tools/kafka/pom.xml tools/kafka/spark/pom.xml
	rm -rf .cache/kafka && mkdir -p .cache/kafka
	$(MVN) -f tools/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/.cache/kafka/broker
	$(MVN) -f tools/kafka/spark/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/.cache/kafka/spark
	touch $@

# The KCL and the tests' two programs over it (tools/kcl/).
kcl: $(KCL_STAMP)
$(KCL_STAMP): tools/kcl/pom.xml $(shell find tools/kcl/src -type f 2>/dev/null)
	rm -rf .cache/kcl && mkdir -p .cache/kcl
	$(MVN) -f tools/kcl/pom.xml package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/.cache/kcl/lib
	touch $@

# The jars platforms put beside ours (tools/platform-jars/pom.xml), about 3 GB, resolved into a Maven repository of
# their own that is removed once they are copied (in ~/.m2 they would be 3 GB more).
platform-jars: $(PLATFORM_JARS_STAMP)
$(PLATFORM_JARS_STAMP): tools/platform-jars/pom.xml
	rm -rf .cache/platform-jars .cache/platform-jars-m2 && mkdir -p .cache/platform-jars
	$(MVN) -f tools/platform-jars/pom.xml -Dmaven.repo.local=$(CURDIR)/.cache/platform-jars-m2 dependency:copy \
	  -DoutputDirectory=$(CURDIR)/.cache/platform-jars
	rm -rf .cache/platform-jars-m2
	touch $@

.venv/.demo-stamp: tools/requirements-demo.txt .venv/.stamp
	$(PY) -m pip install -q -r tools/requirements-demo.txt
	touch $@

.venv/.bench-stamp: bench/requirements.txt .venv/.stamp
	$(PY) -m pip install -q -r bench/requirements.txt
	touch $@

$(KINESALITE): bench/backend/package.json bench/backend/package-lock.json
	cd bench/backend && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(ACTIONLINT):
	mkdir -p .cache/bin
	GOBIN=$(CURDIR)/.cache/bin GOFLAGS=-modcacherw go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.7
