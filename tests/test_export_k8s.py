"""cr export campaign --k8s: manifests valid against the Kubernetes OpenAPI schema
(kubernetes-validate's bundled schemas, offline), placed by the platforms' capabilities."""
from __future__ import annotations

import json

import pytest

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
    for f in sorted(folder.glob("*.yaml")):
        out[f.name] = [d for d in yaml.safe_load_all(f.read_text()) if d]
    return out


def test_manifests_are_valid_kubernetes_and_place_workers_by_capability(run_cr, campaign, tmp_path):
    out = tmp_path / "k8s"
    r = run_cr("export", "campaign", campaign, "--k8s", str(out), "--image", IMAGE, "--cpu", "3", "--memory", "2Gi")
    assert r.returncode == 0, r.stderr
    found = docs(out)
    assert sorted(found) == ["campaign.yaml", "scheduler.yaml", "worker-gpu.yaml", "worker-laptop.yaml", "worker-pi.yaml"]
    for name, resources in found.items():
        for doc in resources:
            kubernetes_validate.validate(doc, K8S, strict=True)  # raises on any schema violation
    kinds = sorted(d["kind"] for ds in found.values() for d in ds)
    assert kinds == ["ConfigMap", "Deployment", "Deployment", "Deployment", "Deployment", "Job", "Service"]

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
    addr = f"tcp://{svc['metadata']['name']}.default.svc:8786"
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
