# spark-kinesis: every target sets up what it needs (venv, sbt, emulator, jar) on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# The Spark 3.5 leg: its own venv (pyspark 3.5 runs Scala 2.12).
VENV35 ?= .venv-spark3.5
PY35 := $(VENV35)/bin/python
SBT := build/sbt
# Local Maven repository the build publishes the thin jar to (spark-submit --packages reads it).
M2_REPO := $(CURDIR)/.cache/m2repo
export SBT_OPTS += -Dmaven.repo.local=$(M2_REPO)
export KINESIS_MOCK_MAIN := $(CURDIR)/tools/emulator/node_modules/kinesis-local/main.js
export SPARK_KINESIS_M2_REPO := $(M2_REPO)
# The KPL daemon's C++ SDK probes EC2 instance metadata (169.254.169.254) for a default region at
# start unless told not to; tests, demo and benchmarks talk to loopback only.
export AWS_EC2_METADATA_DISABLED := true
# Python keeps what it compiles (__pycache__, ignored by git): each of the tests' ~100 Python processes (probes, Spark's
# Python workers, servers) imports pyspark, pandas or boto3, and with PYTHONDONTWRITEBYTECODE set in the environment
# (some machines set it) every one of them compiled all of it again (docs/development.md has the figures).
unexport PYTHONDONTWRITEBYTECODE
# The short-lived JVMs the Makefile starts (Maven's, the lines' tests) compile with C1 only: C2's work does not pay for
# itself before they exit (docs/development.md has the figures; testkit's class_archive.py says the same for the tests'
# JVMs, build.sbt for the unit tests').
C1_ONLY := -XX:TieredStopAtLevel=1
MVN := MAVEN_OPTS="$$MAVEN_OPTS $(C1_ONLY)" mvn -B -q

JVM_SOURCES := $(shell find jvm/src/main jvm/src/facts jvm/kpl/src -type f 2>/dev/null) build.sbt $(wildcard project/*.sbt project/*.scala) \
	project/build.properties python/spark_kinesis/_version.py LICENSE NOTICE
JAR_STAMP := .cache/jar.stamp

.PHONY: test test-extended test-lines test-localstack release-check sbt-test unit pytest pytest35 demo soak chaos jar venv venv35 class-archives class-archives35 emulator kafka kcl platform-jars lint actionlint fmt bench bench-scale clean help

help:
	@echo "make test   - Scala unit tests (the Spark lines but the one make test-extended tests) + pytest e2e on Spark 4 and Spark 3.5 (every_line), but for make test-extended's"
	@echo "make test-extended - what make test leaves to CI: the fault scenarios, the class-path matrix, the install paths (markers faults, platforms, install), same two legs"
	@echo "make test-lines - the README's first example on every pyspark release LINES_PYSPARK lists, a venv each (~20 min)"
	@echo "make test-localstack - the e2e tests marked localstack on LocalStack through Testcontainers (a Docker engine, started here if need be)"
	@echo "make demo   - the same query without a bound and with queue_limit behind shard quotas (~2 min): live lines, a plot, every record checked"
	@echo "make soak   - 10 minutes at the queue limit behind shard limits: heap and KPL RSS must stay flat"
	@echo "make chaos  - 20 minutes of every fault at once on a seeded schedule while two queries write (CHAOS_MINUTES, CHAOS_SEED, CHAOS_SCHEDULE): every id accounted for"
	@echo "make jar    - KPL bundle + one jar per Spark line, bundled into python/ and published to $(M2_REPO)"
	@echo "make bench  - benchmarks (~80 min): vs boto3, vs a bare KPL loop, KPL settings one at a time, backpressure, scale, JMH, real-time latency -> docs/benchmarks.md"
	@echo "make bench-scale - the scale part alone (~20 min): shards x record sizes x executors -> bench/results/scale.json"
	@echo "make release-check - what a tag publishes (Maven staging, wheels), with a throwaway key: checked, installed, run"
	@echo "make lint   - scalafmt check, ruff, mypy (the library, the testkit, bench/ and tools/), actionlint (the GitHub workflow)"

# The two venvs of `make test` install with uv (pinned: UV), not pip: they are made while the JVM build, the set-up's
# longest part, competes for the same two cores, and uv spends less of them (docs/development.md, "Requirements"). It
# compiles no bytecode up front either: Python compiles what the tests import on first use, once (above). pyspark comes
# as source only: uv builds its wheel, which only this venv ever reads, so it is stored, not compressed (UV_BUILD).
UV := uv==0.13.9
UV_BUILD := --config-settings=--build-option=--compression=stored
venv: $(VENV)/.stamp
$(VENV)/.stamp: requirements-dev.txt requirements-test.txt python/pyproject.toml testkit/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q $(UV)
	$(VENV)/bin/uv pip install -q --python $(PY) $(UV_BUILD) -r requirements-dev.txt
	$(VENV)/bin/uv pip install -q --python $(PY) --no-deps -e python -e testkit
	touch $@

venv35: $(VENV35)/.stamp
$(VENV35)/.stamp: requirements-spark3.5.txt requirements-test.txt python/pyproject.toml testkit/pyproject.toml
	test -x $(PY35) || $(PYTHON) -m venv $(VENV35)
	$(PY35) -m pip install -q $(UV)
	$(VENV35)/bin/uv pip install -q --python $(PY35) $(UV_BUILD) -r requirements-spark3.5.txt
	$(VENV35)/bin/uv pip install -q --python $(PY35) --no-deps -e python -e testkit
	touch $@

# Each venv's class-data-sharing archive (.cache/cds) of what a Spark session loads at start, which the legs' JVMs map
# (testkit's class_archive.py): made here ahead of the legs, in `make test` while sbt builds the jars; not by each leg
# at its start, after the jars. At the jar build's priority, not below it: niced, they got little CPU beside sbt's Scala
# tests and the legs waited for them behind those. Made once per venv, Spark and JDK; never fails (a leg makes it
# again, or runs without one).
class-archives: venv
	$(PY) -m spark_kinesis_testkit.class_archive $(CURDIR)
class-archives35: venv35
	$(PY35) -m spark_kinesis_testkit.class_archive $(CURDIR)

emulator: $(KINESIS_MOCK_MAIN)
$(KINESIS_MOCK_MAIN): tools/emulator/package.json tools/emulator/package-lock.json tools/emulator/patch.js
	cd tools/emulator && npm ci --no-audit --no-fund --loglevel=error && node patch.js
	touch $@

# A real Kafka broker (tools/kafka/pom.xml) and Spark's Kafka connector with what it needs beyond pyspark
# (tools/kafka/spark/pom.xml), from Maven Central into .cache/kafka (testkit/spark_kinesis_testkit/kafka.py).
KAFKA_STAMP := .cache/kafka/.stamp
kafka: $(KAFKA_STAMP)
$(KAFKA_STAMP): tools/kafka/pom.xml tools/kafka/spark/pom.xml
	rm -rf .cache/kafka && mkdir -p .cache/kafka
	$(MVN) -f tools/kafka/pom.xml dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/.cache/kafka/broker
	$(MVN) -f tools/kafka/spark/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/.cache/kafka/spark
	touch $@

# The Kinesis Client Library (tools/kcl/pom.xml) and two small programs over it, the tests' consumer wherever a test
# speaks for one (testkit/spark_kinesis_testkit/kcl.py): tools/kcl/target/kcl-tools.jar and the KCL's runtime
# dependencies in .cache/kcl/lib.
KCL_STAMP := .cache/kcl/.stamp
kcl: $(KCL_STAMP)
$(KCL_STAMP): tools/kcl/pom.xml $(shell find tools/kcl/src -type f 2>/dev/null)
	rm -rf .cache/kcl && mkdir -p .cache/kcl
	$(MVN) -f tools/kcl/pom.xml package dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory=$(CURDIR)/.cache/kcl/lib
	touch $@

# Jars Spark platforms put on the class path beside ours (tools/platform-jars/pom.xml: AWS SDK bundles as EMR, Glue
# and hadoop-aws carry them, the SDK v1 bundle, hadoop-aws, a second KPL), from Maven Central into .cache/platform-jars
# for the class-path matrix (tests/test_classpath.py). About 3 GB: the SDK bundles are 0.5-0.7 GB each. Maven
# resolves them into a local repository of their own, removed once they are copied: in ~/.m2 they would be a second
# 3 GB nothing reads (a CI machine's disk ran out with them there).
PLATFORM_JARS_STAMP := .cache/platform-jars/.stamp
platform-jars: $(PLATFORM_JARS_STAMP)
$(PLATFORM_JARS_STAMP): tools/platform-jars/pom.xml
	rm -rf .cache/platform-jars .cache/platform-jars-m2 && mkdir -p .cache/platform-jars
	$(MVN) -f tools/platform-jars/pom.xml -Dmaven.repo.local=$(CURDIR)/.cache/platform-jars-m2 dependency:copy \
	  -DoutputDirectory=$(CURDIR)/.cache/platform-jars
	rm -rf .cache/platform-jars-m2
	touch $@

# sbt's `jars` (build.sbt): the KPL bundle and every line's jar into the Python package (the wheel carries them), each
# artifact and its POM into M2_REPO (spark-submit --packages).
jar: $(JAR_STAMP)
$(JAR_STAMP): $(JVM_SOURCES)
	mkdir -p .cache
	$(SBT) jars </dev/null
	touch $@

unit:
	$(SBT) test </dev/null

# What `make test` leaves to `make test-extended` (CI runs both; on GitHub each on a runner of its own): the tests whose
# cost is their scenario, not the code they cover: the fault scenarios (`faults`: kills, outages, restarts from a
# checkpoint), the class-path matrix beside platforms' jars (`platforms`: 3 GB of jars), the install paths (`install`:
# a fresh venv, spark-submit --packages; `make release-check` installs what a tag publishes too), the tests whose
# scenario is a count of executor JVMs (`fleet`: `local-cluster` applications of 2 and 4; `make test` proves the same
# code in its one JVM), and the tests of a jar `make test` does not build (`later_scala`: build.sbt's extendedLines).
# One marker expression: `make test` runs its complement, so every test runs in exactly one of the two, on the same leg
# either way.
EXTENDED := faults or platforms or install or fleet or later_scala

# Two pytest legs on one build: the tests on the default Spark 4 line, and the tests marked every_line on pyspark 3.5
# (Scala 2.12 jar) beside it at a lower CPU priority, so it uses what the first leaves idle (its output follows the
# first's). Tests marked spark35_leg (line-independent code) run on the second leg only, which ends earlier. Both run even
# if one fails; either failing sets `status` to 1 (TWO_LEGS_SH, a shell fragment; TWO_LEGS, a recipe exiting with it).
# Each leg's output is kept in .cache/leg-<leg>$(1).log; LEGS_SAID_SH repeats each leg's result (pytest's summary line:
# a JVM of the leg may still log after it) and its failures at the very end of the target's output, where a reader of a
# CI log's tail finds them.
# $(1): the target's name (its reports' and logs' suffix), $(2): the marker expression both legs add to theirs.
define TWO_LEGS_SH
	leg35="== leg spark3.5$(1): pyspark $$($(PY35) -c 'import pyspark; print(pyspark.__version__)'), -m '(every_line or spark35_leg) and not lines and ($(2))' =="; \
	echo "$$leg35 (runs beside the next leg; its output follows it)"; \
	( nice -n 5 $(PY35) -m pytest tests -m "(every_line or spark35_leg) and not lines and ($(2))" --junitxml=.cache/reports/junit-spark3.5$(1).xml $(PYTEST_ARGS) \
	  > .cache/leg-spark3.5$(1).log 2>&1; \
	  echo $$? > .cache/leg-spark3.5$(1).rc ) & \
	leg35_pid=$$!; \
	echo "== leg spark4$(1): pyspark $$($(PY) -c 'import pyspark; print(pyspark.__version__)'), -m 'not spark35_leg and not lines and ($(2))' =="; \
	( set -o pipefail; $(PY) -m pytest tests -m "not spark35_leg and not lines and ($(2))" --junitxml=.cache/reports/junit-spark4$(1).xml $(PYTEST_ARGS) \
	  2>&1 | tee .cache/leg-spark4$(1).log ) || status=1; \
	wait $$leg35_pid; echo "$$leg35"; cat .cache/leg-spark3.5$(1).log; \
	[ "$$(cat .cache/leg-spark3.5$(1).rc)" = 0 ] || status=1;
endef
define LEGS_SAID_SH
	for leg in spark4 spark3.5; do \
	  said=$$(grep -E '^=+ .* in [0-9.]+s' .cache/leg-$$leg$(1).log 2>/dev/null | tail -n 1); \
	  echo "== leg $$leg$(1): $${said:-$$(tail -n 1 .cache/leg-$$leg$(1).log 2>/dev/null || echo 'did not run')}"; \
	  grep -E '^(FAILED|ERROR) ' .cache/leg-$$leg$(1).log 2>/dev/null || true; \
	done;
endef
define TWO_LEGS
	@status=0; \
	$(call TWO_LEGS_SH,$(1),$(2)) \
	$(call LEGS_SAID_SH,$(1)) \
	exit $$status
endef

# The JVM part of `make test` (sbt's jarsThenTests): the jars as `make jar` makes them but for the lines `make
# test-extended` builds and tests (build.sbt's extendedLines), then JARS_READY, then the Scala unit tests of the same
# lines; the benchmarks' JVM sources compile too (nothing runs them in make test, and code that nothing builds rots).
# The Python package then holds not every line's jar: JAR_STAMP goes, so the next `make jar` builds them all.
JARS_READY := .cache/jars.ready
SBT_TEST := SBT_OPTS="$$SBT_OPTS -Dspark-kinesis.jarsReady=$(CURDIR)/$(JARS_READY)" $(SBT) jarsThenTests </dev/null

# sbt starts first and the venvs and the emulator are set up beside it (one make -j); the two legs start once the jars
# are in place, while sbt goes on with the Scala tests beside them at nice 10 (every thread of its JVM, and so the test
# JVMs it forks): the legs are the longer path, and the Scala tests take what they leave idle. sbt's output follows the
# legs', and the three results (with each leg's failures) come last. Any of the three failing fails the target; the legs
# do not start if the jars or the set-up failed.
test:
	mkdir -p .cache/reports
	@status=0; rm -f $(JAR_STAMP) $(JARS_READY) .cache/sbt-test.rc .cache/leg-spark4.log .cache/leg-spark3.5.log; \
	( $(SBT_TEST) > .cache/sbt-test.log 2>&1; echo $$? > .cache/sbt-test.rc ) & \
	sbt_pid=$$!; \
	echo "== sbt: the jars, then the Scala tests (output in .cache/sbt-test.log, shown after the legs) =="; \
	$(MAKE) -j4 --no-print-directory venv venv35 class-archives class-archives35 emulator kafka kcl || status=1; \
	deadline=$$((SECONDS + 3600)); \
	until [ -e $(JARS_READY) ] || [ -e .cache/sbt-test.rc ] || [ $$SECONDS -ge $$deadline ]; do sleep 1; done; \
	if [ $$status = 0 ] && [ -e $(JARS_READY) ]; then \
	  echo "== sbt: jars ready at $$SECONDS s; the Scala tests go on beside the legs at nice 10 =="; \
	  for p in $$(ps -o pid= --ppid $$sbt_pid); do renice -n 10 -p $$(ls /proc/$$p/task) > /dev/null || true; done; \
	  $(call TWO_LEGS_SH,,not ($(EXTENDED))) \
	else status=1; echo "== no legs: the set-up or the jars failed (or took an hour) =="; fi; \
	wait $$sbt_pid; echo "== sbt (jarsThenTests) =="; cat .cache/sbt-test.log; \
	[ "$$(cat .cache/sbt-test.rc 2>/dev/null)" = 0 ] || status=1; \
	echo "== sbt (jarsThenTests): $$(grep -E '^\[(success|error)\] Total time' .cache/sbt-test.log | tail -n 1)"; \
	$(call LEGS_SAID_SH,) \
	exit $$status

# Not part of `make test` (.ci/run runs it after; on GitHub a job of its own): the unit tests of the lines build.sbt's
# `extendedLines` names, then the tests marked $(EXTENDED), on the same two legs.
test-extended:
	mkdir -p .cache
	$(MAKE) -j4 --no-print-directory venv venv35 class-archives class-archives35 emulator kafka kcl platform-jars jar
	$(SBT) extendedTests </dev/null
	$(call TWO_LEGS,-extended,$(EXTENDED))

# The pyspark releases `make test-lines` runs the README's first example on (`foreach` and `format("kinesis")`, streaming
# and batch; tests marked `lines`), each in a venv of its own: the first and the newest 3.5 (EMR 7 runs 3.5.0-3.5.6),
# 4.0.0 (Databricks 17), and the newest 4.1, 4.2 and 4.3. README.md's "Tested here" names the same list
# (tests/test_platforms.py holds the two together).
LINES_PYSPARK := 3.5.0 3.5.9 4.0.0 4.1.4 4.2.1 4.3.0
LINES_DIR := .cache/lines

$(LINES_DIR)/pyspark-%/.stamp: requirements-test.txt python/pyproject.toml testkit/pyproject.toml
	rm -rf $(@D) && $(PYTHON) -m venv $(@D)
	$(@D)/bin/python -m pip install -q --no-compile pyspark==$* -r requirements-test.txt
	$(@D)/bin/python -m pip install -q --no-deps -e python -e testkit
	touch $@

# Not part of `make test` (.ci/run runs it after): every line's jar on each release of LINES_PYSPARK. Both of a line's
# bounds: an API the `4` line uses from a newer Spark than 4.0 fails here, not on Databricks 17. The JVMs compile with
# C1 and map no class archive (one per release would cost more than it saves). Each line's venv is made just before
# its run; LINES_KEEP=0 (.ci/run's) removes it after, so one is on disk at a time, not six (0.6-0.7 GB each).
LINES_KEEP ?= 1
test-lines: emulator jar
	mkdir -p .cache/reports
	@status=0; for v in $(LINES_PYSPARK); do \
	  echo "== line: pyspark $$v =="; \
	  if $(MAKE) --no-print-directory $(LINES_DIR)/pyspark-$$v/.stamp; then \
	    JAVA_TOOL_OPTIONS=$(C1_ONLY) $(LINES_DIR)/pyspark-$$v/bin/python -m pytest tests/test_readme.py \
	      -m lines --junitxml=.cache/reports/junit-lines-$$v.xml $(PYTEST_ARGS) || status=1; \
	  else status=1; fi; \
	  [ "$(LINES_KEEP)" = 1 ] || rm -rf $(LINES_DIR)/pyspark-$$v; \
	done; exit $$status

# make test's JVM part alone.
sbt-test:
	mkdir -p .cache
	rm -f $(JAR_STAMP)
	$(SBT_TEST)

# The tests marked `localstack` (the marker is the one list) on LocalStack through Testcontainers, real KPL and Spark 4:
# tools/localstack-leg.sh finds or starts a Docker engine (images in .cache/docker, sockets in /run/skd.*) and gets the
# image (the pinned Docker Hub one, else built here: testkit/localstack-image/), then stops the engine it started and
# removes what it left. Not part of `make test`.
test-localstack: venv emulator kcl jar
	PY=$(CURDIR)/$(PY) PYTEST_ARGS="$(PYTEST_ARGS)" bash tools/localstack-leg.sh

pytest: venv emulator kafka kcl platform-jars jar
	$(PY) -m pytest tests $(PYTEST_ARGS)

pytest35: venv35 emulator kcl platform-jars jar
	$(PY35) -m pytest tests -m every_line $(PYTEST_ARGS)

$(VENV)/.demo-stamp: tools/requirements-demo.txt $(VENV)/.stamp
	$(PY) -m pip install -q -r tools/requirements-demo.txt
	touch $@

demo: venv emulator jar $(VENV)/.demo-stamp
	$(PY) tools/demo.py

# Not part of `make test`: SOAK_MINUTES (default 10) at the queue limit behind enforced shard limits.
soak: venv emulator jar
	$(PY) tools/soak.py

# Not part of `make test`: tools/chaos.py (knobs in its docstring); report in bench/results/chaos.json, plot in
# docs/img/chaos.png, run logs in .cache/chaos. CI runs CHAOS_MINUTES=3 as a smoke.
chaos: venv emulator jar kcl platform-jars $(VENV)/.demo-stamp
	$(PY) tools/chaos.py

# Not part of `make test`: bench/run.py (knobs in its docstring); results in bench/results/, plots in docs/img/.
KINESALITE := bench/backend/node_modules/kinesalite/package.json
$(KINESALITE): bench/backend/package.json bench/backend/package-lock.json
	cd bench/backend && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(VENV)/.bench-stamp: bench/requirements.txt $(VENV)/.stamp
	$(PY) -m pip install -q -r bench/requirements.txt
	touch $@

bench: venv jar kafka kcl emulator $(VENV)/.bench-stamp $(KINESALITE)
	$(PY) bench/run.py

bench-scale: venv jar kcl $(VENV)/.bench-stamp $(KINESALITE)
	BENCH_PARTS=scale $(PY) bench/run.py

# Not part of `make test` (CI runs it as its own step): builds what a tag of this commit publishes into .cache/release/out
# (signed Maven staging, the wheels) with a throwaway key, checks it as Maven Central and PyPI will, and runs the README's
# first example from the Linux x86_64 wheel in a fresh venv and through spark-submit --packages from the staging
# (tools/release_check.py; docs/development.md, "Releasing").
# jar: the facts resource (the platform table the wheels are built and checked against) of this checkout.
release-check: venv emulator jar
	$(PY) tools/release_check.py

# actionlint (the GitHub workflow's checker), pinned, built from its Go module into .cache/bin.
ACTIONLINT_VERSION := 1.7.7
ACTIONLINT := .cache/bin/actionlint
$(ACTIONLINT):
	mkdir -p .cache/bin
	GOBIN=$(CURDIR)/.cache/bin GOFLAGS=-modcacherw go install github.com/rhysd/actionlint/cmd/actionlint@v$(ACTIONLINT_VERSION)

actionlint: $(ACTIONLINT)
	$(ACTIONLINT) .github/workflows/*.yml

lint: venv actionlint
	$(SBT) scalafmtCheckAll bench/scalafmtCheckAll scalafmtSbtCheck </dev/null
	$(VENV)/bin/ruff check python tests tools bench testkit
	$(VENV)/bin/ruff format --check python tests tools bench testkit
	$(VENV)/bin/mypy --config-file python/pyproject.toml python/spark_kinesis testkit/spark_kinesis_testkit
	$(VENV)/bin/mypy --config-file python/pyproject.toml $(wildcard bench/*.py tools/*.py)

# Fixes what lint checks but mypy (types are not formatting); ruff check --fix still fails on what it cannot fix.
fmt: venv
	$(SBT) scalafmtAll bench/scalafmtAll scalafmtSbt </dev/null
	$(VENV)/bin/ruff check --fix python tests tools bench testkit
	$(VENV)/bin/ruff format python tests tools bench testkit

clean:
	rm -rf jvm/target jvm/kpl/target jvm/lines target project/target python/spark_kinesis/jars/*.jar \
		python/spark_kinesis/jars/NOTICE python/spark_kinesis/jars/BUNDLED.md python/spark_kinesis/jars/spark-kinesis.json python/build python/dist $(JAR_STAMP)
