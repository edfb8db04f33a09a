"""cr export campaign --k8s: manifests valid against the Kubernetes OpenAPI schema
(kubernetes-validate's bundled schemas, offline), placed by the platforms' capabilities,
TLS from a Secret in every pod, the results on a volume claim; and the containers' exact
arguments run on 127.0.0.1 with certificates made by docs/clusters.md's recipe."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, make_component, make_repo
from helpers.campaign import null_solution
from helpers.cluster import start_cr, stop_all, wait_line

kubernetes_validate = pytest.importorskip("kubernetes_validate")
yaml = pytest.importorskip("yaml")

K8S = "1.30.0"
IMAGE = "registry.example/reefkit/lenet-digits-onnxruntime@sha256:" + "ab" * 32
PLATFORMS = {"laptop": {"marker": "platform_machine == 'x86_64'"},
             "pi": {"requires": ["raspberry-pi-4", "aarch64"]},
             "gpu": {"requires": ["nvidia-gpu"]}}


@pytest.fixture
def campaign(run_cr, cr_home):
    r = run_cr("campaign", "new", "sweep", "--solution", "solution:lenet-digits-onnxruntime")
    assert r.returncode == 0, r.stderr
    (meta_path,) = (cr_home / "local" / "campaign" / "sweep").glob("*/meta.json")
    meta = json.loads(meta_path.read_text())
    meta["platforms"] = PLATFORMS
    meta_path.write_text(json.dumps(meta))
    return "sweep"


def docs(folder):
    out = {}
    for f in sorted(folder.rglob("*.yaml")):
        out[f.relative_to(folder).as_posix()] = [d for d in yaml.safe_load_all(f.read_text()) if d]
    return out


def pod_specs(found):
    """{resource name: pod spec} of every pod the manifests start (Deployments, the Job, the reader Pod)."""
    out = {}
    for ds in found.values():
        for d in ds:
            if d["kind"] in ("Deployment", "Job"):
                out[d["metadata"]["name"]] = d["spec"]["template"]["spec"]
            elif d["kind"] == "Pod":
                out[d["metadata"]["name"]] = d["spec"]
    return out


def container_args(found):
    """{role: argument list} of the scheduler, the workers and the coordinator (its shell script's words)."""
    out = {}
    for name, spec in pod_specs(found).items():
        (c,) = spec["containers"]
        out[c["name"] + ":" + name] = c["command"][-1].split() if c["command"][0] == "/bin/sh" else c["args"]
    return {k: v for k, v in out.items() if not k.startswith("reader:")}


def test_manifests_are_valid_kubernetes_and_place_workers_by_capability(run_cr, campaign, tmp_path):
    out = tmp_path / "k8s"
    r = run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE, "--cpu", "3", "--memory", "2Gi")
    assert r.returncode == 0, r.stderr
    found = docs(out)
    assert sorted(found) == ["campaign.yaml", "fetch/results-reader.yaml", "results-volume.yaml", "scheduler.yaml",
                             "worker-gpu.yaml", "worker-laptop.yaml", "worker-pi.yaml"]
    for name, resources in found.items():
        for doc in resources:
            kubernetes_validate.validate(doc, K8S, strict=True)  # raises on any schema violation
    kinds = sorted(d["kind"] for ds in found.values() for d in ds)
    assert kinds == ["ConfigMap", "Deployment", "Deployment", "Deployment", "Deployment", "Job", "PersistentVolumeClaim",
                     "Pod", "Service"]

    def worker(name):
        (dep,) = found[f"worker-{name}.yaml"]
        return dep["spec"]["template"]["spec"]

    assert worker("laptop")["nodeSelector"]["kubernetes.io/arch"] == "amd64"
    assert worker("pi")["nodeSelector"]["kubernetes.io/arch"] == "arm64"
    assert worker("pi")["nodeSelector"]["reefkit.dev/raspberry-pi-4"] == "true"
    gpu = worker("gpu")["containers"][0]["resources"]
    assert gpu["limits"]["nvidia.com/gpu"] == 1
    assert "nvidia.com/gpu" not in worker("laptop")["containers"][0]["resources"]["limits"]
    lap = worker("laptop")["containers"][0]
    assert lap["resources"]["requests"] == {"cpu": "3", "memory": "2Gi"} == lap["resources"]["limits"]
    assert lap["image"] == IMAGE
    assert {"name": "REEFKIT_IMAGE_DIGEST", "value": "sha256:" + "ab" * 32} in lap["env"]
    # every worker and the coordinator reach the scheduler through its Service
    svc = next(d for d in found["scheduler.yaml"] if d["kind"] == "Service")
    addr = f"tls://{svc['metadata']['name']}.default.svc:8786"
    assert addr in lap["args"]
    job = next(d for d in found["campaign.yaml"] if d["kind"] == "Job")
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][-1]
    assert f"cr campaign run sweep --scheduler {addr} --wait-for-workers 3" in script
    cm = next(d for d in found["campaign.yaml"] if d["kind"] == "ConfigMap")
    assert json.loads(cm["data"]["meta.json"])["platforms"] == PLATFORMS


def test_schema_validation_catches_a_broken_manifest(run_cr, campaign, tmp_path):
    # the validator really checks: the same Deployment with a string replica count fails
    out = tmp_path / "k8s"
    assert run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE).returncode == 0
    (dep,) = docs(out)["worker-laptop.yaml"]
    dep["spec"]["replicas"] = "one"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(dep, K8S, strict=True)


def test_a_non_empty_target_directory_is_refused_and_kept(run_cr, campaign, tmp_path):
    out = tmp_path / "k8s"
    out.mkdir()
    (out / "mine.yaml").write_text("keep me\n")
    r = run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert lines[0].startswith("Error: --k8s ") and str(out) in lines[0] and "not empty" in lines[0]
    assert lines[1].startswith("Hint: ") and len(lines) == 2
    assert sorted(p.name for p in out.iterdir()) == ["mine.yaml"] and (out / "mine.yaml").read_text() == "keep me\n"


def test_a_bad_image_reference_is_one_error(run_cr, campaign, tmp_path):
    r = run_cr("export", "campaign", campaign, "--k8s", str(tmp_path / "k"), "--image", "not an image")
    assert r.returncode == 1
    assert r.stderr.startswith("Error: --image 'not an image'") and "\nHint: " in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "k").exists()


def test_the_targets_slurm_settings_change_no_kubernetes_worker(run_cr, campaign, cr_home, tmp_path):
    """A target's `slurm` mapping is the Slurm executor's alone (docs/clusters.md): the
    workers' placement and resources on Kubernetes stay those of the flags and capabilities."""
    before = tmp_path / "before"
    assert run_cr("export", "campaign", campaign, "--k8s", str(before), "--image", IMAGE).returncode == 0
    (meta_path,) = (cr_home / "local" / "campaign" / "sweep").glob("*/meta.json")
    meta = json.loads(meta_path.read_text())
    meta["platforms"]["gpu"]["slurm"] = {"partition": "gpu", "gpus": 4, "cores": 16, "mem": "64G"}
    meta["platforms"]["laptop"]["slurm"] = {"time": "30:00", "cores": 2}
    meta_path.write_text(json.dumps(meta))
    after = tmp_path / "after"
    r = run_cr("export", "campaign", campaign, "--k8s", str(after), "--image", IMAGE)
    assert r.returncode == 0, r.stderr
    workers = sorted(f.name for f in before.glob("worker-*.yaml"))
    assert workers == sorted(f.name for f in after.glob("worker-*.yaml")) and len(workers) == 3
    for name in workers:
        assert (before / name).read_text() == (after / name).read_text(), name


TLS = ["--tls-ca-file", "/etc/reefkit/tls/ca.pem", "--tls-cert", "/etc/reefkit/tls/node.pem", "--tls-key", "/etc/reefkit/tls/node.key"]


def test_every_pod_speaks_tls_with_the_secret_mounted_read_only(run_cr, campaign, tmp_path):
    out = tmp_path / "k8s"
    r = run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE)
    assert r.returncode == 0, r.stderr
    assert "Warning" not in r.stderr
    assert "subjectAltName=DNS:cr-sweep-scheduler,DNS:cr-sweep-scheduler.default,DNS:cr-sweep-scheduler.default.svc" in r.stdout
    found = docs(out)
    assert "insecure" not in "".join(f.read_text() for f in out.rglob("*.yaml"))
    specs = pod_specs(found)
    assert len(specs) == 6  # scheduler, three worker Deployments, the Job, the results reader
    for name, spec in specs.items():
        if name == "cr-sweep-results":
            continue  # the reader pod joins no cluster
        assert {"name": "tls", "secret": {"secretName": "cr-sweep-tls", "defaultMode": 0o400}} in spec["volumes"], name
        (c,) = spec["containers"]
        assert {"name": "tls", "mountPath": "/etc/reefkit/tls", "readOnly": True} in c["volumeMounts"], name
    args = container_args(found)
    assert len(args) == 5
    for role, words in args.items():
        joined = " ".join(words)
        assert " ".join(TLS) in joined, role
        assert "tcp://" not in joined and "--insecure-no-tls" not in words, role
        if not role.startswith("scheduler:"):
            assert "tls://cr-sweep-scheduler.default.svc:8786" in words, role
    # another Secret by name
    other = tmp_path / "other"
    assert run_cr("export", "campaign", campaign, "--k8s", str(other), "--image", IMAGE, "--tls-secret", "lab-certs").returncode == 0
    for name, spec in pod_specs(docs(other)).items():
        secrets = [v["secret"]["secretName"] for v in spec.get("volumes", []) if "secret" in v]
        assert secrets == ([] if name == "cr-sweep-results" else ["lab-certs"]), name


def test_the_results_store_is_on_a_volume_claim(run_cr, campaign, tmp_path):
    out = tmp_path / "k8s"
    assert run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE).returncode == 0
    found = docs(out)
    (claim,) = found["results-volume.yaml"]
    assert claim["kind"] == "PersistentVolumeClaim" and claim["metadata"]["name"] == "cr-sweep-results"
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    assert "storageClassName" not in claim["spec"]  # the cluster's default
    job = next(d for d in found["campaign.yaml"] if d["kind"] == "Job")["spec"]["template"]["spec"]
    (reader,) = found["fetch/results-reader.yaml"]
    for spec in (job, reader["spec"]):
        vol = next(v["name"] for v in spec["volumes"] if v.get("persistentVolumeClaim", {}).get("claimName") == "cr-sweep-results")
        (c,) = spec["containers"]
        home = next(e["value"] for e in c["env"] if e["name"] == "CR_HOME")
        mounts = {m["mountPath"]: m for m in c["volumeMounts"] if m["name"] == vol}
        # the store is CR_HOME/results (cr.results.store), the journals CR_HOME/campaigns (a rerun resumes)
        assert mounts[f"{home}/results"]["subPath"] == "results" and not mounts[f"{home}/results"].get("readOnly")
        assert mounts[f"{home}/campaigns"]["subPath"] == "campaigns"
    # the workers and the scheduler keep nothing: no claim there
    for name, spec in pod_specs(found).items():
        if name not in ("cr-sweep-run", "cr-sweep-results"):
            assert not any("persistentVolumeClaim" in v for v in spec.get("volumes", [])), name
    sized = tmp_path / "sized"
    r = run_cr("export", "campaign", campaign, "--k8s", str(sized), "--image", IMAGE, "--results-size", "20Gi",
               "--storage-class", "fast-ssd", "--json")
    assert r.returncode == 0, r.stderr
    (claim,) = docs(sized)["results-volume.yaml"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "20Gi" and claim["spec"]["storageClassName"] == "fast-ssd"
    kubernetes_validate.validate(claim, K8S, strict=True)
    summary = json.loads(r.stdout)
    assert summary["results"]["claim"] == "cr-sweep-results" and summary["results"]["size"] == "20Gi"


def test_insecure_no_tls_is_explicit_and_warned(run_cr, campaign, tmp_path):
    out = tmp_path / "k8s"
    r = run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE, "--insecure-no-tls", "--json")
    assert r.returncode == 0, r.stderr
    (warning,) = [line for line in r.stderr.splitlines() if line.strip()]
    assert warning.startswith("Warning: --insecure-no-tls: the exported cluster runs WITHOUT TLS")
    assert json.loads(r.stdout)["tls"] is None
    found = docs(out)
    for doc in (d for ds in found.values() for d in ds):
        kubernetes_validate.validate(doc, K8S, strict=True)
    for role, words in container_args(found).items():
        assert "--insecure-no-tls" in words and "--tls-cert" not in words, role
        if not role.startswith("scheduler:"):
            assert "tcp://cr-sweep-scheduler.default.svc:8786" in words, role
    for name, spec in pod_specs(found).items():
        assert not any("secret" in v for v in spec.get("volumes", [])), name


@pytest.mark.parametrize("args, error", [
    (["--results-size", "0Gi"], "Error: --results-size '0Gi': not a volume size"),
    (["--results-size", "lots"], "Error: --results-size 'lots': not a volume size"),
    (["--results-size", "-5Gi"], "Error: --results-size '-5Gi': not a volume size"),
    (["--storage-class", "Fast_SSD"], "Error: --storage-class 'Fast_SSD': not a Kubernetes object name"),
    (["--tls-secret", "My Certs"], "Error: --tls-secret 'My Certs': not a Kubernetes object name"),
    (["--tls-secret", "lab-certs", "--insecure-no-tls"], "Error: --tls-secret lab-certs and --insecure-no-tls: "),
])
def test_bad_options_are_one_error_and_write_nothing(run_cr, campaign, tmp_path, args, error):
    out = tmp_path / "k8s"
    r = run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE, *args)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith(error) and lines[1].startswith("Hint: "), r.stderr
    assert r.stdout == "" and not out.exists()


def _recipe() -> str:
    """The certificate recipe of docs/clusters.md, as the user copies it."""
    text = (ROOT / "docs" / "clusters.md").read_text()
    m = re.search(r"<!-- k8s-tls-recipe[^>]*-->\n```sh\n(.*?)```", text, re.S)
    assert m, "docs/clusters.md lost its TLS recipe block"
    return m.group(1)


@pytest.mark.slow
def test_the_manifests_tls_arguments_run_a_campaign_with_the_docs_certificates(tmp_path):
    """The scheduler, worker and coordinator commands of the manifests, run on 127.0.0.1 with
    only the in-cluster parts swapped (the Service's address, the listening port, the
    mount points), with a CA and certificate made by the docs' recipe: the campaign runs
    over TLS and its result lands where the results volume is mounted (CR_HOME/results)."""
    if not shutil.which("openssl"):
        pytest.skip("the openssl command is not installed")
    bindir = os.path.dirname(sys.executable)
    if not shutil.which("cr", path=bindir):
        pytest.skip(f"no cr command beside {sys.executable} (the coordinator's script runs `cr`)")
    base = os.environ.copy()
    base.pop("PYTHONWARNINGS", None)
    base["PATH"] = bindir + os.pathsep + base.get("PATH", "")

    def cr(home, *args):
        return subprocess.run([sys.executable, "-m", "cr", *map(str, args)], env={**base, "CR_HOME": str(home)},
                              capture_output=True, text=True, timeout=240)

    # the campaign in a repo of its own (the Job registers its ConfigMap copy), the solution in another
    comps = make_repo(tmp_path / "comps", "comps")
    null_solution(comps)
    camp = make_repo(tmp_path / "camp", "camp")
    make_component(camp, "campaign", "digits-sweep", solutions=["solution:null-digits"])
    exporter, coordinator = tmp_path / "exporter", tmp_path / "coordinator"
    for home, repos in ((exporter, (comps, camp)), (coordinator, (comps,))):
        for repo in repos:
            assert cr(home, "repo", "add", repo).returncode == 0
    out = tmp_path / "k8s"
    r = cr(exporter, "export", "campaign", "digits-sweep", "--k8s", out, "--image", IMAGE)
    assert r.returncode == 0, r.stderr
    found = docs(out)

    # certificates exactly as docs/clusters.md makes them, for the Service the manifests name
    certs = tmp_path / "certs"
    certs.mkdir()
    recipe = _recipe()
    svc = next(d for d in found["scheduler.yaml"] if d["kind"] == "Service")["metadata"]["name"]
    assert f"SVC={svc} NS=default" in recipe  # the docs' example is this export's campaign
    subprocess.run(["bash", "-euc", recipe], cwd=certs, check=True, capture_output=True)
    san = subprocess.run(["openssl", "x509", "-in", certs / "node.pem", "-noout", "-ext", "subjectAltName"],
                         capture_output=True, text=True, check=True).stdout
    assert f"DNS:{svc}.default.svc" in san and f"DNS:{svc}.default.svc.cluster.local" in san

    def local(words):
        swapped = []
        for w in words:
            if w.startswith("/campaign/"):  # the ConfigMap's mount point
                w = f"{tmp_path}{w}"
            w = w.replace("/etc/reefkit/tls", str(certs)).replace("/tmp/campaign-repo", str(tmp_path / "campaign-repo"))
            swapped.append(w)
        return swapped

    specs = pod_specs(found)
    (sched_c,) = specs[f"{svc}"]["containers"]
    sargs = local(sched_c["args"])
    sargs[sargs.index("--host") + 1] = "127.0.0.1"
    sargs[sargs.index("--port") + 1] = "0"
    procs = []
    try:
        sched = start_cr(sargs, {**base, "CR_HOME": str(tmp_path / "sched-home")}, tmp_path / "scheduler.log")
        procs.append(sched)
        addr = wait_line(tmp_path / "scheduler.log", "scheduler at", sched).split()[-1]
        assert addr.startswith("tls://127.0.0.1:")
        in_cluster = f"tls://{svc}.default.svc:8786"
        (worker_c,) = specs["cr-digits-sweep-worker-any"]["containers"]
        wargs = [addr if w == in_cluster else w for w in local(worker_c["args"])] + ["--name", "pod-1"]
        w = start_cr(wargs, {**base, "CR_HOME": str(tmp_path / "worker-home")}, tmp_path / "worker.log")
        procs.append(w)
        wait_line(tmp_path / "worker.log", "worker pod-1 joined", w)

        # the Job's ConfigMap files where the pod mounts them, then its script as it is
        cm = next(d for d in found["campaign.yaml"] if d["kind"] == "ConfigMap")
        (tmp_path / "campaign").mkdir()
        for key, body in cm["data"].items():
            (tmp_path / "campaign" / key).write_text(body)
        (job_c,) = specs["cr-digits-sweep-run"]["containers"]
        home = next(e["value"] for e in job_c["env"] if e["name"] == "CR_HOME")
        script = " ".join(local(job_c["command"][-1].split())).replace(in_cluster, addr)
        done = subprocess.run(["/bin/sh", "-c", script], env={**base, "CR_HOME": str(coordinator)},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        stop_all(list(reversed(procs)))
    # the record is in CR_HOME/results: where the manifests mount the results volume
    mounts = {m["mountPath"] for m in job_c["volumeMounts"] if m["name"] == "results"}
    assert f"{home}/results" in mounts
    rows = json.loads(cr(coordinator, "results", "list", "--campaign", "digits-sweep", "--json").stdout)
    assert len(rows) == 1 and rows[0]["status"] == "ok"
    assert list((coordinator / "results").rglob("*.json"))
    # what the docs' fetch step does: export from that store, add to another
    exported = cr(coordinator, "results", "export", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    (tmp_path / "fetched.json").write_text(exported.stdout)
    mine = tmp_path / "mine"
    assert cr(mine, "results", "add", tmp_path / "fetched.json").returncode == 0
    got = json.loads(cr(mine, "results", "list", "--campaign", "digits-sweep", "--json").stdout)
    assert [g["uid"] for g in got] == [rows[0]["uid"]]
