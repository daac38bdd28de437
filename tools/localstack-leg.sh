#!/usr/bin/env bash
# `make test-localstack`: the e2e tests marked `localstack` against LocalStack through Testcontainers, with the real
# KPL and Spark. Self-contained on a fresh machine:
# - a Docker engine: the one that answers (DOCKER_HOST, else the default socket); else, as root with apt-get, Debian's
#   docker.io installed if absent and a dockerd started for this run, stopped by its pid when the run ends, whatever
#   the tests did. Its data root is .cache/docker/data (kept between runs: the images are the cache); its sockets,
#   exec root (containerd's state and sockets, the network namespace mount) and pidfile live in a short directory of
#   their own, /run/skd.XXXXXX, made for the run and removed, with every mount the engine left, when it stops;
# - the image: spark_kinesis_testkit.localstack_image (the pinned Docker Hub image, else one built here from PyPI).
# No engine to be had fails the leg with the reason; it never passes without running.
# Timings go to stdout (`localstack-leg: ... N s`) and the junit report names the image and where it came from.
# `tools/localstack-leg.sh --socket-paths` prints the unix socket paths a started engine would make, checked, and exits.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
STATE=$ROOT/.cache/docker
REPORT=$ROOT/.cache/reports/junit-localstack.xml
# A unix socket path has a bound (containerd refuses one over 104 bytes) and a clone's path has none: so the engine's
# sockets live under RUN_BASE, never under the clone. RUN_DIR_FILE names the run's directory, so that the run after an
# interrupted one finds the engine and the mounts it left.
RUN_BASE=/run
RUN_DIR_FILE=$STATE/run-dir
SOCKET_PATH_MAX=100
DOCKERD_PID=
RUN_DIR=

say() { echo "localstack-leg: $*"; }
elapsed() { echo $(($(date +%s) - $1)); }
# Empty when an engine answers; a Python that cannot ask is a problem too, never an answer.
engine_problem() {
    "$PY" -c 'from spark_kinesis_testkit.localstack import docker_problem as p; print(p() or "")' 2>/dev/null ||
        echo "$PY cannot ask for a Docker engine (run make venv)"
}

# Where a dockerd started with run directory $1 keeps its API socket, exec root and pidfile.
layout() {
    API_SOCKET=$1/docker.sock
    EXEC_ROOT=$1/exec
    PIDFILE=$1/dockerd.pid
}
# The unix sockets that dockerd makes: its API socket, and under its exec root the metrics socket, libnetwork's key
# socket (named by a 12-hex-digit id) and containerd's three (containerd's state is the exec root's containerd/).
socket_paths() {
    layout "$1"
    printf '%s\n' "$API_SOCKET" "$EXEC_ROOT/metrics.sock" "$EXEC_ROOT/libnetwork/0123456789ab.sock" \
        "$EXEC_ROOT/containerd/containerd.sock" "$EXEC_ROOT/containerd/containerd.sock.ttrpc" \
        "$EXEC_ROOT/containerd/containerd-debug.sock"
}
# Empty when every socket path of run directory $1 is within SOCKET_PATH_MAX bytes, else the first that is not.
socket_path_problem() {
    local p
    while read -r p; do
        if [ "${#p}" -gt "$SOCKET_PATH_MAX" ]; then
            echo "the engine's socket $p is ${#p} bytes, over $SOCKET_PATH_MAX (containerd refuses over 104)"
            return
        fi
    done < <(socket_paths "$1")
}
if [ "${1:-}" = --socket-paths ]; then
    # A directory name of the length mktemp makes.
    socket_paths "$RUN_BASE/skd.XXXXXX"
    problem=$(socket_path_problem "$RUN_BASE/skd.XXXXXX")
    [ -z "$problem" ] || { say "FAILED: $problem"; exit 1; }
    exit 0
fi

# Stops process $2 if it is a $1 (checked in /proc, so a reused pid is left alone): TERM, then KILL after 60 s.
stop_pid() {
    local name=$1 pid=$2 deadline
    [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 0
    say "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null
    # A dockerd stops its containers and its containerd first: 60 s for that, then KILL.
    deadline=$(($(date +%s) + 60))
    while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
        say "$name $pid still running after 60 s: killed"
        kill -KILL "$pid" 2>/dev/null
        deadline=$(($(date +%s) + 10))
        while kill -0 "$pid" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.2; done
    fi
    wait "$pid" 2>/dev/null
}

# Unmounts every mount at or under $1, deepest first (mountinfo's 5th field, blanks octal-escaped).
unmount_under() {
    local m n=0
    while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m" || say "cannot unmount $m"
        n=$((n + 1))
    done < <(awk '{print $5}' /proc/self/mountinfo | while read -r m; do
        m=$(printf '%b' "$m")
        case $m in "$1" | "$1"/*) echo "$m" ;; esac
    done | sort -r)
    [ "$n" = 0 ] || say "unmounted $n mount(s) the engine left under $1"
}

# Stops the engine this leg started (or found left by an interrupted run), then its containerd if that outlived it,
# and releases what they held: the mounts under the run directory (the network namespace) and the data root (its bind
# mount on itself, containers' layers after a kill), so the clone stays removable; then the run directory itself.
stop_engine() {
    stop_pid dockerd "$DOCKERD_PID"
    DOCKERD_PID=
    [ -n "$RUN_DIR" ] || return 0
    layout "$RUN_DIR"
    stop_pid containerd "$(cat "$EXEC_ROOT/containerd/containerd.pid" 2>/dev/null)"
    unmount_under "$RUN_DIR"
    unmount_under "$STATE"
    rm -rf "$RUN_DIR"
    rm -f "$RUN_DIR_FILE"
    RUN_DIR=
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
    say "$problem: starting one for this run, data root in $STATE/data"
    missing=()
    command -v dockerd >/dev/null || missing+=(docker.io)
    command -v debootstrap >/dev/null || missing+=(debootstrap) # builds the image's base where nothing can be pulled
    if [ ${#missing[@]} -gt 0 ]; then
        say "installing ${missing[*]} (Debian)"
        apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
            "${missing[@]}" >/dev/null || { say "FAILED: apt-get install ${missing[*]}"; exit 1; }
    fi
    mkdir -p "$STATE"
    # A run that was interrupted may have left its dockerd running and its mounts: stop that dockerd by its pidfile's
    # pid and release its directory first. Only a directory this leg makes is taken from RUN_DIR_FILE.
    left=$(cat "$RUN_DIR_FILE" 2>/dev/null)
    case $left in "$RUN_BASE"/skd.??????)
        say "a previous, interrupted run's engine directory $left is still there: releasing it"
        RUN_DIR=$left
        layout "$RUN_DIR"
        DOCKERD_PID=$(cat "$PIDFILE" 2>/dev/null)
        stop_engine
        ;;
    esac
    # Leg versions before the run directory kept the exec root and pidfile in $STATE and left the network namespace
    # mounted there (the clone could not be removed): stop and release those too.
    if [ -e "$STATE/exec" ]; then
        stop_pid dockerd "$(cat "$STATE/dockerd.pid" 2>/dev/null)"
        unmount_under "$STATE"
        rm -rf "$STATE/exec" "$STATE/dockerd.pid" "$STATE/docker.sock"
    fi
    RUN_DIR=$(mktemp -d "$RUN_BASE/skd.XXXXXX") || { say "FAILED: cannot make a directory in $RUN_BASE"; exit 1; }
    echo "$RUN_DIR" >"$RUN_DIR_FILE"
    problem=$(socket_path_problem "$RUN_DIR")
    [ -z "$problem" ] || { say "FAILED: $problem"; exit 1; }
    layout "$RUN_DIR"
    dockerd --data-root "$STATE/data" --exec-root "$EXEC_ROOT" --pidfile "$PIDFILE" -H "unix://$API_SOCKET" \
        >"$STATE/dockerd.log" 2>&1 &
    DOCKERD_PID=$!
    export DOCKER_HOST=unix://$API_SOCKET
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
    say "Docker engine: dockerd $(dockerd --version | cut -d' ' -f3 | tr -d ,) started for this run (pid $DOCKERD_PID, sockets in $RUN_DIR)"
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
