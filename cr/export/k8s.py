"""Kubernetes manifests that run a campaign on a cluster with a solution's image
(docs/containers.md): the campaign cluster of docs/campaigns.md, as resources.

    scheduler.yaml       Deployment + Service: `cr scheduler` on port 8786
    worker-NAME.yaml     per platform target: a Deployment of `cr worker`s whose nodeSelector,
                         resources and GPU limits come from the target's marker and capabilities
    campaign.yaml        ConfigMap (the campaign's meta.json) + Job: `cr campaign run` against
                         the scheduler, waiting for every worker

Written as JSON documents in .yaml files (JSON is YAML): kubectl apply -f DIR reads them,
and no YAML library is needed to write them.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from ..errors import CRError

PORT = 8786
APP = "reefkit"

# capability -> node label (well-known labels where Kubernetes or a vendor defines one)
_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}
_GPU_CAPS = {"gpu", "nvidia-gpu", "cuda"}


def _dns(text: str) -> str:
    """A DNS-1123 label from text (lowercase, digits, '-'; at most 63 characters)."""
    out = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    return (out or "x")[:63].rstrip("-")


def node_selector(target: dict) -> dict:
    """nodeSelector of a platform target: kubernetes.io/arch from an architecture (named in
    `requires` or in a `platform_machine == '...'` marker), nvidia.com/gpu.present for a GPU,
    and reefkit.dev/CAPABILITY=true for every other capability (label your nodes so)."""
    sel = {"kubernetes.io/os": "linux"}
    marker = target.get("marker") or ""
    m = re.search(r"platform_machine\s*==\s*['\"]([A-Za-z0-9_]+)['\"]", marker)
    if m and m.group(1) in _ARCH:
        sel["kubernetes.io/arch"] = _ARCH[m.group(1)]
    for cap in target.get("requires") or []:
        if cap in _ARCH:
            sel["kubernetes.io/arch"] = _ARCH[cap]
        elif cap in _GPU_CAPS:
            sel["nvidia.com/gpu.present"] = "true"
        elif cap != "linux":
            sel[f"reefkit.dev/{_dns(cap)}"] = "true"
    return sel


def _labels(campaign: str, role: str, platform: str | None = None) -> dict:
    out = {"app.kubernetes.io/name": APP, "app.kubernetes.io/component": role, "reefkit.dev/campaign": _dns(campaign)}
    if platform:
        out["reefkit.dev/platform"] = _dns(platform)
    return out


def _container(name: str, image: str, args: list[str], resources: dict | None = None, env: list | None = None) -> dict:
    c = {"name": name, "image": image, "imagePullPolicy": "IfNotPresent", "command": ["cr"], "args": args}
    if resources:
        c["resources"] = resources
    if env:
        c["env"] = env
    return c


def manifests(campaign_meta: dict, image: str, namespace: str = "default", cpu: str = "2", memory: str = "4Gi",
              workers: int = 1) -> dict[str, list[dict]]:
    """{file name: [resources]} for the campaign described by campaign_meta."""
    name = campaign_meta["name"]
    base = _dns(f"cr-{name}")[:40].rstrip("-")
    sched = f"{base}-scheduler"
    addr = f"tcp://{sched}.{namespace}.svc:{PORT}"
    digest = image.split("@", 1)[1] if "@" in image else ""
    env = [{"name": "REEFKIT_IMAGE_DIGEST", "value": digest}] if digest.startswith("sha256:") else []
    meta = lambda n, labels: {"name": n, "namespace": namespace, "labels": labels}  # noqa: E731
    out: dict[str, list[dict]] = {}

    sl = _labels(name, "scheduler")
    out["scheduler.yaml"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(sched, sl),
         "spec": {"replicas": 1, "selector": {"matchLabels": sl},
                  "template": {"metadata": {"labels": sl}, "spec": {"containers": [{
                      **_container("scheduler", image, ["scheduler", "--host", "0.0.0.0", "--port", str(PORT), "--insecure-no-tls"],
                                   {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}}, env),
                      "ports": [{"name": "scheduler", "containerPort": PORT, "protocol": "TCP"}],
                      "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 5}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(sched, sl),
         "spec": {"selector": sl, "ports": [{"name": "scheduler", "port": PORT, "targetPort": PORT, "protocol": "TCP"}]}},
    ]

    targets = dict(campaign_meta.get("platforms") or {}) or {"any": {}}
    for pname in sorted(targets):
        target = targets[pname] or {}
        wl = _labels(name, "worker", pname)
        gpu = bool(_GPU_CAPS & set(target.get("requires") or []))
        # requests == limits: the Guaranteed QoS class, so a benchmark's cores are its own
        res = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
        if gpu:
            res["limits"]["nvidia.com/gpu"] = 1
            res["requests"]["nvidia.com/gpu"] = 1
        out[f"worker-{_dns(pname)}.yaml"] = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(f"{base}-worker-{_dns(pname)}"[:63].rstrip("-"), wl),
             "spec": {"replicas": workers, "selector": {"matchLabels": wl},
                      "template": {"metadata": {"labels": wl}, "spec": {
                          "nodeSelector": node_selector(target),
                          "containers": [_container("worker", image, ["worker", "--scheduler", addr, "--insecure-no-tls"], res, env)]}}}},
        ]

    version = campaign_meta.get("version", "0.1.0")
    repo = {"name": f"campaign-{_dns(name)}", "uid": campaign_meta.get("uid", "0" * 16), "version": "1.0.0"}
    folder = f"/tmp/campaign-repo/campaign/{name}/{version}"
    script = (f"mkdir -p {folder} && cp /campaign/meta.json {folder}/meta.json && cp /campaign/cr-repo.json /tmp/campaign-repo/ "
              f"&& cr repo add /tmp/campaign-repo && exec cr campaign run {name} --scheduler {addr} "
              f"--wait-for-workers {workers * len(targets)} --timeout 600 --insecure-no-tls")
    cl = _labels(name, "coordinator")
    out["campaign.yaml"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(f"{base}-campaign", cl),
         "data": {"meta.json": json.dumps(campaign_meta, indent=1, sort_keys=True), "cr-repo.json": json.dumps(repo, sort_keys=True)}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(f"{base}-run", cl),
         "spec": {"backoffLimit": 0, "template": {"metadata": {"labels": cl}, "spec": {
             "restartPolicy": "Never",
             "volumes": [{"name": "campaign", "configMap": {"name": f"{base}-campaign"}}],
             "containers": [{**_container("coordinator", image, [], {"requests": {"cpu": "250m", "memory": "512Mi"}}, env),
                             "command": ["/bin/sh", "-c", script],
                             "volumeMounts": [{"name": "campaign", "mountPath": "/campaign", "readOnly": True}]}]}}}},
    ]
    return out


def export_campaign(ref: str, out_dir: str, image: str, namespace: str = "default", cpu: str = "2",
                    memory: str = "4Gi", workers: int = 1) -> dict:
    """Write manifests() of campaign ref into out_dir (new or empty): {campaign, dir, files}."""
    from ..campaign.spec import load
    from ..fsutil import atomic_write_bytes
    from .image import check_target

    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$", image or "") or " " in image:
        raise CRError(f"--image {image!r}: not an image reference", hint="give registry/name:tag or registry/name@sha256:DIGEST")
    if not re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", namespace) or len(namespace) > 63:
        raise CRError(f"--namespace {namespace!r}: not a Kubernetes namespace name", hint="lowercase letters, digits and '-', at most 63")
    campaign = load(ref)
    target = Path(out_dir)
    check_target(target, "--k8s")
    docs = manifests(campaign.meta, image, namespace, cpu, memory, workers)
    made = not target.exists()
    target.mkdir(parents=True, exist_ok=True)
    written = []
    try:
        for fname in sorted(docs):
            body = "".join("---\n" + json.dumps(d, indent=2, sort_keys=True) + "\n" for d in docs[fname])
            atomic_write_bytes(target / fname, body.encode())
            written.append(fname)
    except BaseException:
        for fname in written:
            (target / fname).unlink(missing_ok=True)
        if made:
            target.rmdir()
        raise
    return {"campaign": campaign.ref, "dir": str(target), "files": written, "image": image}
