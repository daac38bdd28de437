#!/usr/bin/env bash
# `make test-localstack`: the e2e tests marked `localstack` against LocalStack through Testcontainers, with the real
# KPL and Spark. Self-contained on a fresh machine:
# - a Docker engine: the one that answers (DOCKER_HOST, else the default socket); else, as root with apt-get, Debian's
#   docker.io installed if absent and a dockerd started for this run with all its state under .cache/docker/ (kept
#   between runs: the images are the cache), stopped by its pid when the run ends, whatever the tests did;
# - the image: spark_kinesis_testkit.localstack_image (the pinned Docker Hub image, else one built here from PyPI).
# No engine to be had fails the leg with the reason; it never passes without running.
# Timings go to stdout (`localstack-leg: ... N s`) and the junit report names the image and where it came from.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
STATE=$ROOT/.cache/docker
REPORT=$ROOT/.cache/reports/junit-localstack.xml
DOCKERD_PID=

say() { echo "localstack-leg: $*"; }
elapsed() { echo $(($(date +%s) - $1)); }
# Empty when an engine answers; a Python that cannot ask is a problem too, never an answer.
engine_problem() {
    "$PY" -c 'from spark_kinesis_testkit.localstack import docker_problem as p; print(p() or "")' 2>/dev/null ||
        echo "$PY cannot ask for a Docker engine (run make venv)"
}

stop_engine() {
    [ -n "$DOCKERD_PID" ] || return 0
    say "stopping dockerd (pid $DOCKERD_PID)"
    kill -TERM "$DOCKERD_PID" 2>/dev/null
    # dockerd stops its containers and its containerd first: give it 60 s, then kill it.
    local deadline=$(($(date +%s) + 60))
    while kill -0 "$DOCKERD_PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    if kill -0 "$DOCKERD_PID" 2>/dev/null; then
        say "dockerd $DOCKERD_PID still running after 60 s: killed"
        kill -KILL "$DOCKERD_PID" 2>/dev/null
    fi
    wait "$DOCKERD_PID" 2>/dev/null
    DOCKERD_PID=
}
trap stop_engine EXIT
trap 'exit 130' INT TERM

t0=$(date +%s)
problem=$(engine_problem)
if [ -z "$problem" ]; then
    say "Docker engine: the one at ${DOCKER_HOST:-unix:///var/run/docker.sock}"
else
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        say "FAILED: the LocalStack tests need a Docker engine: $problem; not root with apt-get, so none can be installed and started."
        say "Start a Docker engine (or point DOCKER_HOST at one) and run again."
        exit 1
    fi
    say "$problem: starting one for this run, state in $STATE"
    missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap) # builds the image's base where nothing can be pulled
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (Debian)"
        apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >/dev/null || { say "FAILED: apt-get install ${missing[*]}"; exit 1; }
    fi
    mkdir -p "$STATE"
    # A dockerd left by an interrupted run of this clone holds the pidfile: stop it by that pid first.
    if [ -s "$STATE/dockerd.pid" ] && [ "$(cat "/proc/$(cat "$STATE/dockerd.pid")/comm" 2>/dev/null)" = dockerd ]; then
        DOCKERD_PID=$(cat "$STATE/dockerd.pid")
        say "a previous, interrupted run's dockerd is still running"
        stop_engine
    fi
    # A unix socket path is limited to 108 bytes; a clone that deep needs DOCKER_HOST pointed at an engine instead.
    dockerd --data-root "$STATE/data" --exec-root "$STATE/exec" --pidfile "$STATE/dockerd.pid" \
        -H "unix://$STATE/docker.sock" >"$STATE/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    export DOCKER_HOST=unix://$STATE/docker.sock
    deadline=$(($(date +%s) + 60))
    while :; do
        problem=$(engine_problem)
        [ -z "$problem" ] && break
        if ! kill -0 "$DOCKERD_PID" 2>/dev/null || [ "$(date +%s)" -ge "$deadline" ]; then
            say "FAILED: the dockerd started for this run does not answer ($problem); its log:"
            tail -20 "$STATE/dockerd.log"
            exit 1
        fi
        sleep 0.2
    done
    say "Docker engine: dockerd $(dockerd --version | cut -d' ' -f3 | tr -d ,) started for this run (pid $DOCKERD_PID)"
fi
say "time to an engine: $(elapsed "$t0") s"

t1=$(date +%s)
image=$("$PY" -m spark_kinesis_testkit.localstack_image | tail -1) || { say "FAILED: no LocalStack image"; exit 1; }
say "image $image ready: $(elapsed "$t1") s"

t2=$(date +%s)
mkdir -p "$(dirname "$REPORT")"
# KINESIS_TEST_BACKEND_REQUIRED: an engine that went away fails the tests instead of skipping them. xunit1: the junit
# family with per-test properties (each test's read-backs).
KINESIS_TEST_BACKEND=localstack KINESIS_TEST_BACKEND_REQUIRED=1 LOCALSTACK_TEST_IMAGE=$image \
    "$PY" -m pytest tests -m localstack --junitxml="$REPORT" -o junit_suite_name=localstack \
    -o junit_family=xunit1 ${PYTEST_ARGS:-}
rc=$?
say "tests: rc=$rc, $(elapsed "$t2") s; the leg: $(elapsed "$t0") s; report $REPORT"
exit $rc
