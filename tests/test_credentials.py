"""Every credentials source, proven by what Kinesis sees: the access key id that signed each request.

Each case writes through its own fault front (a TLS front for the emulator that records the ``Credential=`` key id
of every signed request), so the key ids a front saw are that case's alone. STS is moto's server on loopback: an
assumed role's key is told from a base key by asking that STS whose it is. Two Spark JVMs run side by side, because
the default chain reads the process environment: one as an EKS pod with IRSA sees it (web identity), one with keys
in its environment.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from helpers import account, payload, session_jars, write_input
from probe import Probe, ProbeResult, probe_env
from spark_kinesis_testkit.emulator import REGION, free_port, loopback_writer_options, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.moto_server import MotoServer

ACCOUNT = "123456789012"
N = 300
N_ROTATION = 600
KEYS = {  # (key id, secret) per static source; every secret also a canary for the command-line scan
    "static": ("AKIASTATIC0000000001", "static-secret-canary-01"),
    "session_token": ("ASIASESSION000000002", "session-secret-canary-02"),
    "profile": ("AKIAPROFILE000000003", "profile-secret-canary-03"),
    "assume_role_base": ("AKIAROLEBASE00000004", "role-base-secret-canary-04"),
    "refused_base": ("AKIAREFUSED000000005", "refused-secret-canary-05"),
    "env": ("AKIAENVIRONMENT00006", "env-secret-canary-06"),
}
TOKEN = "session-token-canary-07"
EXTERNAL_ID = "external-id-canary-08"
WEB_TOKEN = "web-identity-token-canary-09"
ROLE = f"arn:aws:iam::{ACCOUNT}:role/kinesis-writer"
IRSA_ROLE = f"arn:aws:iam::{ACCOUNT}:role/irsa-writer"
SECRETS = {
    **{f"{k}_secret": s for k, (_, s) in KEYS.items()},
    **{f"{k}_key_id": i for k, (i, _) in KEYS.items()},
    "token": TOKEN,
    "external_id": EXTERNAL_ID,
    "web_token": WEB_TOKEN,
}


def _results(results: list[ProbeResult]) -> tuple[dict[str, tuple[str, float, str]], list[dict[str, Any]]]:
    cases = {c["name"]: (c["status"], c["seconds"], c["message"]) for r in results for c in r.all("CASE")}
    return cases, [scan for r in results for scan in r.all("CMDLINE")]


@pytest.mark.e2e
@pytest.mark.variant  # the other sources than the static keys every test of make test signs with
def test_every_credentials_source_end_to_end(kinesis, tmp_path):
    env_base = {k: v for k, v in probe_env().items() if not k.startswith("AWS_")}
    env_base.update(AWS_EC2_METADATA_DISABLED="true", AWS_REGION=REGION)
    token_file = tmp_path / "web-identity-token"  # absent at first: the unreadable-token case runs before it exists
    creds_file = tmp_path / "credentials"
    creds_file.write_text(
        f"[canary-profile]\naws_access_key_id = {KEYS['profile'][0]}\naws_secret_access_key = {KEYS['profile'][1]}\n"
    )
    rotation_input = tmp_path / "rotation-in"
    write_input(
        rotation_input,
        [{"id": i, "pk": f"k{i % 7}", "b64": base64.b64encode(payload(i)).decode()} for i in range(N_ROTATION)],
        files=6,
    )
    good = ["static", "session_token", "profile", "assume_role", "web_identity", "env"]
    with MotoServer() as sts, MotoServer(refuse_unknown_keys=True) as refusing:
        fronts = {name: FaultFront(f"http://127.0.0.1:{kinesis.plain_port}").start() for name in good}
        try:
            streams = {name: f"t-creds-{name.replace('_', '-')}-{tmp_path.name[-6:]}" for name in good}
            for s in streams.values():
                kinesis.create_stream(s, 2)

            def case(name: str, front: str | None, n: int = N, **creds: Any) -> dict[str, Any]:
                opts = loopback_writer_options(fronts[front].endpoint if front else kinesis.tls_endpoint)
                del opts["aws_access_key_id"], opts["aws_secret_access_key"]
                opts.update(creds)
                return {"name": name, "stream": streams.get(name, "t-creds-unused"), "options": opts, "n": n}

            def keys(name: str) -> dict[str, str]:
                return {"aws_access_key_id": KEYS[name][0], "aws_secret_access_key": KEYS[name][1]}

            rotation = case(
                "assume_role",
                "assume_role",
                n=N_ROTATION,
                **keys("assume_role_base"),
                role_arn=ROLE,
                role_session_name="sk-rotation",
                role_external_id=EXTERNAL_ID,
                sts_endpoint=sts.endpoint,
                role_duration_seconds=61,  # stale at once (the SDK refreshes 60 s ahead): a new key each refresh
            )
            # A batch a second from 6 files, and the KPL's credential refresh every 500 ms instead of 5 s.
            rotation["options"]["kpl"]["CredentialsRefreshDelay"] = 500
            rotation.update(mode="stream", input=str(rotation_input), checkpoint=str(tmp_path / "ckpt-rotation"))
            irsa = [  # static first: it also warms the JVM, so the bad cases' timings are the writer's own
                case("static", "static", **keys("static")),
                case("session_token", "session_token", **keys("session_token"), aws_session_token=TOKEN),
                case("profile", "profile", profile_name="canary-profile"),
                case("unreadable_token", None),  # the default chain, with the token file missing
                {**case("web_identity", "web_identity"), "write_file": [str(token_file), WEB_TOKEN]},
                rotation,
                case(
                    "sts_refuses",
                    None,
                    **keys("refused_base"),
                    role_arn=ROLE,
                    role_external_id=EXTERNAL_ID,
                    sts_endpoint=refusing.endpoint,
                ),
                case("sts_unreachable", None, role_arn=ROLE, sts_endpoint=f"http://127.0.0.1:{free_port()}"),
                case("missing_profile", None, profile_name="no-such-profile"),
            ]
            env_irsa = {
                **env_base,
                "AWS_WEB_IDENTITY_TOKEN_FILE": str(token_file),
                "AWS_ROLE_ARN": IRSA_ROLE,
                "AWS_ROLE_SESSION_NAME": "sk-irsa",
                "AWS_ENDPOINT_URL_STS": sts.endpoint,
                "AWS_SHARED_CREDENTIALS_FILE": str(creds_file),
            }
            env_keys = {
                **env_base,
                "AWS_ACCESS_KEY_ID": KEYS["env"][0],
                "AWS_SECRET_ACCESS_KEY": KEYS["env"][1],
            }
            common = {"jars": session_jars(), "secrets": SECRETS}
            # The secrets go in the probes' config files and environments: never on a command line.
            probes = [
                Probe("credentials_probe.py", {**common, "cases": irsa}, tmp_path, env=env_irsa),
                Probe("credentials_probe.py", {**common, "cases": [case("env", "env")]}, tmp_path, env=env_keys),
            ]
            results = [p.wait(600) for p in probes]
            cases, scans = _results(results)
            assert all(r.done for r in results) and set(cases) >= set(good), "\n".join(r.failure() for r in results)
            signers = {name: f.signers() for name, f in fronts.items()}
            reads = {name: read_stream(kinesis.client(), s) for name, s in streams.items()}
        finally:
            for f in fronts.values():
                f.stop()

        # Every good source delivered every record, byte for byte.
        for name in good:
            status, _, msg = cases[name]
            assert status == "OK", f"{name}: {msg}"
            n = N_ROTATION if name == "assume_role" else N
            d = account(range(n), reads[name])
            assert not d.missing, f"{name}: {len(d.missing)} of {n} records missing, first {d.missing[:10]}"
            assert all(d.by_id[i].data == payload(i) for i in range(n)), f"{name}: bytes differ"
            # Nothing went unsigned: each daemon's first requests carry the credentials it got over the pipe.
            assert "<unsigned>" not in signers[name], (name, signers[name])

        # What Kinesis saw: each static source's own key, and nothing else.
        for name in ("static", "session_token", "profile", "env"):
            assert set(signers[name]) == {KEYS[name][0]}, (name, signers[name])
        # Assume-role: only keys STS issued for the role and session, never the base key, refreshed mid-query.
        rotated = signers["assume_role"]
        assert KEYS["assume_role_base"][0] not in rotated
        for key_id in rotated:
            assert sts.caller_arn(key_id) == f"arn:aws:sts::{ACCOUNT}:assumed-role/kinesis-writer/sk-rotation"
        assert len(rotated) >= 2, f"no refresh during the query: one key signed everything ({rotated})"
        # Web identity (EKS IRSA): the default chain read the token file and assumed AWS_ROLE_ARN.
        for key_id in signers["web_identity"]:
            assert sts.caller_arn(key_id) == f"arn:aws:sts::{ACCOUNT}:assumed-role/irsa-writer/sk-irsa"

    # Bad credentials: the first task fails fast with the source and the fix named.
    expected = {
        "unreadable_token": ["DefaultChain", str(token_file), "AWS_WEB_IDENTITY_TOKEN_FILE"],
        "sts_refuses": ["AssumeRole(roleArn=" + ROLE, "Service: Sts, Status Code: 403", "sts:AssumeRole"],
        "sts_unreachable": ["AssumeRole(roleArn=" + ROLE, "Unable to execute HTTP request", "sts_endpoint"],
        "missing_profile": ["Profile(no-such-profile)", "no-such-profile", "AWS_SHARED_CREDENTIALS_FILE"],
    }
    for name, needles in expected.items():
        status, secs, msg = cases[name]
        assert status == "ERROR", f"{name} did not fail"
        assert "No AWS credentials for the KPL from" in msg, f"{name}: {msg[:2000]}"
        for needle in needles:
            assert needle in msg, f"{name}: {needle!r} not in {msg[:2000]}"
        # Fast: without the daemons' error watch it fails after RecordTtl (30 s). Not a speed figure: a loaded
        # clean-clone make test on a slow 2-core machine took 10.1 s (the job's and the daemon's start included).
        assert secs < 20, f"{name} took {secs} s to fail (RecordTtl is 30 s)"
    # No secret in any output, and none on any process's command line while the daemons ran.
    out = "".join(r.text() for r in results)
    leaked = sorted(n for n, v in SECRETS.items() if v in out)
    assert not leaked, f"secrets in the probes' output or their JVMs' logs: {leaked}"
    assert scans and all(s["leaks"] == [] for s in scans), [s for s in scans if s["leaks"]]
    assert max(s["daemons"] for s in scans) >= 2, "no KPL daemon was running when the command lines were read"
